import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { StoreError } from '../../src/common/errors.js';
import { ChangeLog } from '../../src/history/change-log.js';
import { migrate } from '../../src/store/migrations.js';
import { storePool } from '../../src/store/postgres.js';
import { beginRecording, lastRecordedState, recordingAlive, writeRecordedState } from '../../src/store/answer-history-store.js';
import { flaggedFacts, withHistoryLog } from '../helpers.js';
import { withHistoryLease, withTestSchema } from '../store-fixtures.js';

// The recorder copies each state into the store before the follower serves
// it, so a copy on a connection that stops answering (a half-open socket, a
// store failing over) must fail within the recorder's time to answer, not
// after the kernel's TCP timeouts with every state waiting behind it. The
// connection's backend is stopped (SIGSTOP): it holds its socket open and
// answers nothing.

const T0 = Date.parse('2026-11-01T00:00:00Z');
const LOCK = 'upi-risk answer history stall test';
const ANSWER_WITHIN_MS = 3_000;

test('a copy or a heartbeat on a connection that stops answering fails within the time to answer, and the next goes through', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    // The recorder's pool, whose statements are given their time to answer; the test's own work and checks on another.
    const pool = storePool(location, 1, 60_000, ANSWER_WITHIN_MS);
    const setup = storePool(location, 1);
    const stopped: number[] = [];
    // Never left stopped, should this test be cut short: the store serves the tests after it.
    const resume = (): void => {
      for (const pid of stopped.splice(0)) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {}
      }
    };
    process.once('exit', resume);
    try {
      await withHistoryLease(location, LOCK, async (lease) => {
        const term = await beginRecording(setup, location, lease, T0);
        await withHistoryLog(async (path) => {
          const log = await ChangeLog.open(path, 0);
          try {
            const copyState = async (on: typeof pool, at: number, key: string): Promise<void> => {
              log.begin(at, `s1+${at - T0}`);
              log.add(key, flaggedFacts(5000), 'evidence');
              const committed = await log.commit();
              await writeRecordedState(on, location, lease, { term, snapshot: 's1', position: at - T0, dataAsOf: at }, committed, log);
            };
            await copyState(setup, T0 + 1, 'a@ybl');

            // The pool's one connection, its backend stopped; then the one after it. Each fails once its time to
            // answer is past (without it, after the kernel's minutes: past this test's timeout), and is dropped.
            const stopOne = async (): Promise<void> => {
              const pid = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
              assert.match(readFileSync(`/proc/${pid}/cmdline`, 'latin1'), /^postgres/, 'the store runs on this host, its backends seen by their pid');
              process.kill(pid, 'SIGSTOP');
              stopped.push(pid);
            };
            await stopOne();
            await assert.rejects(copyState(pool, T0 + 2, 'b@ybl'), StoreError);
            await stopOne();
            await assert.rejects(recordingAlive(pool, location, term, T0 + 3), StoreError);
            resume();

            // A new connection carries the next copy; the one that failed left nothing in the store.
            await copyState(pool, T0 + 4, 'c@ybl');
            await recordingAlive(pool, location, term, T0 + 5);
            const { rows } = await setup.query<{ at_ms: string }>('SELECT at_ms FROM answer_states ORDER BY at_ms');
            assert.deepEqual(
              rows.map((row) => Number(row.at_ms)),
              [T0 + 1, T0 + 4],
            );
            assert.equal((await lastRecordedState(setup, location))?.at, T0 + 4);
          } finally {
            await log.close();
          }
        });
      });
    } finally {
      resume();
      process.off('exit', resume);
      await pool.end().catch(() => {});
      await setup.end().catch(() => {});
    }
  });
});
