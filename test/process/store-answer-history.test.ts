import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HistoryError, StoreError } from '../../src/common/errors.js';
import { CLEARED_FACTS, ChangeLog, type AnswerFacts } from '../../src/history/change-log.js';
import { migrate } from '../../src/store/migrations.js';
import { storePool } from '../../src/store/postgres.js';
import {
  StoreAnswerHistory,
  beginRecording,
  lastPrunedAt,
  lastRecordedState,
  newestColumn,
  newestRecords,
  pruneRecordedHistory,
  recordedStateAt,
  recordingAlive,
  writeRecordedState,
} from '../../src/store/answer-history-store.js';
import { flaggedFacts, withHistoryLog } from '../helpers.js';
import { withHistoryLease, withTestSchema } from '../store-fixtures.js';

// The fleet's history of answers in the store: states copied from a
// recorder's change log as they are, read back as the file reads them,
// refused when the lease is not held, made into a change log again for a
// recorder taking over, told only while recorded, and pruned as the file is.

const T0 = Date.parse('2026-11-01T00:00:00Z');
const DAY = 86_400_000;
const LOCK = 'upi-risk answer history test';

test('states copied into the store tell the answers and changes the change log tells, and make a log that continues it', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const pool = storePool(location, 2);
    try {
      await withHistoryLease(location, LOCK, async (lease) => withHistoryLog(async (path) => {
        const pid = lease.pid;
        const log = await ChangeLog.open(path, 0);
        const term = await beginRecording(pool, location, lease, T0);
        const states: { at: number; version: string; changes: [string, AnswerFacts][]; scoredAt?: number }[] = [
          { at: T0, version: 's1', changes: [['a@ybl', flaggedFacts(4500)], ['b@ybl', flaggedFacts(9000, 7, 3)], ['c@ybl', flaggedFacts(7000)]], scoredAt: T0 },
          { at: T0 + 1000, version: 's1+5', changes: [['a@ybl', flaggedFacts(8600, 12)], ['c@ybl', CLEARED_FACTS], ['c@ybl', flaggedFacts(6100)]] },
          // A new scoring day: every confidence to the column, and b's change a record.
          { at: T0 + DAY, version: 's2', changes: [['b@ybl', flaggedFacts(9100, 8, 3)]], scoredAt: T0 + DAY },
          { at: T0 + DAY + 1000, version: 's2+9', changes: [['d@ybl', flaggedFacts(5000)]] },
        ];
        for (const state of states) {
          log.begin(state.at, state.version);
          for (const [key, facts] of state.changes) log.add(key, facts, 'evidence');
          if (state.scoredAt !== undefined && state.at > T0) for (const key of ['a@ybl', 'c@ybl']) log.setServedConfidence(log.numberOf(key), 5555);
          const committed = await log.commit(state.scoredAt ?? null);
          await writeRecordedState(pool, location, lease, { term, snapshot: state.version.split('+')[0]!, position: Number(state.version.split('+')[1] ?? 0), dataAsOf: state.at - 5 }, committed, log);
        }
        await recordingAlive(pool, location, term, T0 + DAY + 2000);

        const store = new StoreAnswerHistory(pool, location, 400 * DAY);
        const instants = [T0, T0 + 500, T0 + 1000, T0 + DAY - 1, T0 + DAY, T0 + DAY + 1000, T0 + DAY + 5000];
        for (const key of ['a@ybl', 'b@ybl', 'c@ybl', 'd@ybl', 'never@ybl']) {
          for (const at of instants) assert.deepEqual(strip(await store.answerAt(key, at)), strip(await log.answerAt(key, at)), `${key} as of ${at}`);
          const fromLog = await log.changesOf(key, 0);
          // c was CLEARED and FLAGGED again within one state, in the same band: the store keeps the last, no change.
          assert.deepEqual(await store.changesOf(key, T0 + DAY + 5000), key === 'c@ybl' ? fromLog.slice(0, 1) : fromLog, key);
        }
        // The column's confidence, after the record.
        assert.equal((await store.answerAt('a@ybl', T0 + DAY)).facts.confidence, 5555);

        // The state of an instant, told while recorded.
        const at = await recordedStateAt(pool, location, T0 + DAY + 1500);
        assert.deepEqual(at, { state: { snapshot: 's2', position: 9 }, from: T0 + DAY + 1000, dataAsOf: T0 + DAY + 995, answersRecorded: true });
        assert.equal((await recordedStateAt(pool, location, T0 + DAY + 2500))!.answersRecorded, false, 'after the recorder\'s last word');
        assert.equal(await recordedStateAt(pool, location, T0 - 1), null);
        assert.deepEqual(await lastRecordedState(pool, location), { at: T0 + DAY + 1000, logBytes: log.bytes, firstAt: T0 });

        // A recorder taking over makes a log of the newest records and column: the same answers now, the same numbers.
        await withHistoryLog(async (made) => {
          const column = await newestColumn(pool, location);
          assert.equal(column?.at, T0 + DAY);
          await ChangeLog.seed(made, T0, T0 + DAY + 1000, newestRecords(pool, location), column);
          const seeded = await ChangeLog.open(made, T0 + DAY + 1000);
          assert.equal(seeded.vpaCount, log.vpaCount);
          for (const key of ['a@ybl', 'b@ybl', 'c@ybl', 'd@ybl']) {
            const [mine, theirs] = [log.numberOf(key), seeded.numberOf(key)];
            assert.equal(theirs, mine, `${key} keeps its number`);
            assert.equal(seeded.toldAt(theirs), log.toldAt(mine));
            assert.deepEqual(strip(await seeded.answerAt(key, T0 + DAY + 5000)), strip(await log.answerAt(key, T0 + DAY + 5000)));
          }
          // A record of a state after the end asked for is not that history.
          await assert.rejects(ChangeLog.seed(made, T0, T0 + DAY, newestRecords(pool, location), column), /not the history that ends then/);
          // The next VPA takes the next number.
          seeded.begin(T0 + DAY + 3000, 's2+10');
          seeded.add('e@ybl', flaggedFacts(4000), 'evidence');
          await seeded.commit();
          assert.equal(seeded.numberOf('e@ybl'), 4);
          await seeded.close();

          // A damaged column is the history's (ERR_HISTORY), as a damaged record is: the take-over is refused.
          const block = (await pool.query<{ at_ms: string; block: number; scores: Buffer }>('SELECT at_ms, block, scores FROM answer_score_blocks ORDER BY at_ms DESC, block LIMIT 1')).rows[0]!;
          const rewrite = (scores: Buffer) => pool.query('UPDATE answer_score_blocks SET scores = $3 WHERE at_ms = $1 AND block = $2', [block.at_ms, block.block, scores]);
          await rewrite(Buffer.alloc(block.scores.length, 0xfe));
          await assert.rejects(newestColumn(pool, location), (error: unknown) => error instanceof HistoryError && /holds a value no confidence has/.test(error.message));
          await rewrite(block.scores);
        });

        // Written only while the lease is held, and by the newest term.
        log.begin(T0 + DAY + 4000, 's2+11');
        log.add('a@ybl', flaggedFacts(100), 'evidence');
        const late = await log.commit();
        await assert.rejects(writeRecordedState(pool, location, { lockName: LOCK, pid: pid + 100_000 }, { term, snapshot: 's2', position: 11, dataAsOf: T0 }, late, log), HistoryError);
        await assert.rejects(beginRecording(pool, location, { lockName: LOCK, pid: pid + 100_000 }, T0 + DAY + 3500), /lost while taking the history over/);
        const next = await beginRecording(pool, location, lease, T0 + DAY + 3500);
        assert.ok(next > term);
        await assert.rejects(writeRecordedState(pool, location, lease, { term, snapshot: 's2', position: 11, dataAsOf: T0 }, late, log), /the history lease was lost/);
        assert.equal((await lastRecordedState(pool, location))!.at, T0 + DAY + 1000, 'nothing written');

        // A row whose record names another VPA or time is refused, as a damaged record is.
        await pool.query("UPDATE answer_changes SET vpa = 'b@ybl' WHERE vpa = 'd@ybl'");
        await assert.rejects(store.answerAt('b@ybl', T0 + DAY + 5000), /holds a record of another VPA, time or number/);
        await pool.query("UPDATE answer_changes SET vpa = 'd@ybl' WHERE vpa = 'b@ybl' AND at_ms = $1", [T0 + DAY + 1000]);

        // A prune stopped (the recorder closing) drops nothing.
        const closing = new AbortController();
        closing.abort();
        await assert.rejects(pruneRecordedHistory(pool, location, T0 + DAY, closing.signal), StoreError);
        assert.equal(await lastPrunedAt(pool, location), null, 'a prune stopped is not recorded as one');
        // Pruned as the file is: of the records before the cutoff, each VPA's newest; and when, for the next recorder.
        assert.equal(await pruneRecordedHistory(pool, location, T0 + DAY, undefined, T0 + 3 * DAY), 2);
        assert.equal(await lastPrunedAt(pool, location), T0 + 3 * DAY);
        assert.deepEqual(strip(await store.answerAt('a@ybl', T0 + DAY)), strip(await log.answerAt('a@ybl', T0 + DAY)));
        assert.deepEqual(strip(await store.answerAt('c@ybl', T0 + DAY + 1)), strip(await log.answerAt('c@ybl', T0 + DAY + 1)));
        await log.close();
      }));
    } finally {
      await pool.end();
    }
  });
});

/** A past answer as data: its facts without the function that makes a detail. */
function strip(past: { facts: AnswerFacts; detail: unknown }): unknown {
  const { detail: _made, ...facts } = past.facts;
  return { facts, detail: past.detail };
}
