import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/common/logger.js';
import { AnswerHistory } from '../../src/history/answer-changes.js';
import { CLEARED_FACTS, ChangeLog, rowsPathOf, toldOf } from '../../src/history/change-log.js';
import { ROW_BYTES } from '../../src/history/answer-slots.js';
import { indexPathOf } from '../../src/history/facts-index-file.js';
import { buildInProcess, evidence, flaggedFacts, tempDataDir, until, withHistoryLog } from '../helpers.js';

// Between passes over every VPA, the rows of the history's index (record
// places, fingerprints, confidences) live in a file of their own beside
// the log; a pass holds them in memory again. Answers read are the same
// either way, through a prune under a pass and a close.

const T0 = Date.parse('2026-11-01T00:00:00Z');
const DAY = 24 * 3600 * 1000;
const VPAS = 3000;
const keyOf = (i: number) => `payee${i}@ybl`;

async function recordAll(log: ChangeLog, at: number, version: string, confidenceOf: (i: number) => number): Promise<void> {
  log.begin(at, version);
  for (let i = 0; i < VPAS; i++) log.add(keyOf(i), flaggedFacts(confidenceOf(i)), 'evidence');
  await log.commit();
}

const exists = (path: string) => stat(path).then((s) => s.size, () => -1);

test('the rows go to their file between passes, come back for one, and the file goes at close', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    const release = await log.holdIndex();
    await recordAll(log, T0, 'd0', (i) => 1000 + i);
    const held = log.indexBytes;
    assert.ok(held >= VPAS * ROW_BYTES, `${held} bytes held`);
    release();
    await until('the rows spilled', 5_000, () => log.indexBytes <= held - VPAS * ROW_BYTES);
    assert.equal(await exists(rowsPathOf(path)), VPAS * ROW_BYTES);

    // Read and changed on file: a change to one VPA, the rest as recorded.
    log.begin(T0 + DAY, 'd1');
    assert.equal(log.differs(log.numberOf(keyOf(7)), flaggedFacts(1007), true), false);
    assert.equal(log.differs(log.numberOf(keyOf(7)), flaggedFacts(1008), true), true);
    log.add(keyOf(7), CLEARED_FACTS, 'retraction');
    await log.commit();
    assert.equal(log.latest(keyOf(7)), toldOf(CLEARED_FACTS));
    assert.deepEqual((await log.changesOf(keyOf(7), 0)).map((c) => c.data_version), ['d0', 'd1'], 'chained to the record its row names');

    // Held again for a pass: every row as written.
    const again = await log.holdIndex();
    assert.ok(log.indexBytes >= VPAS * ROW_BYTES);
    for (let i = 0; i < VPAS; i++) assert.equal(log.differs(log.numberOf(keyOf(i)), i === 7 ? CLEARED_FACTS : flaggedFacts(1000 + i), true), false, keyOf(i));
    again();
    assert.equal(await log.close(), null);
    assert.equal(await exists(rowsPathOf(path)), -1, 'the rows file is the open log’s alone');
    assert.ok((await exists(indexPathOf(path))) > 0, 'the kept index holds the rows');

    const reopened = await ChangeLog.open(path, T0 + DAY);
    assert.equal(reopened.opened.keptIndex, true);
    assert.deepEqual((await reopened.changesOf(keyOf(7), 0)).map((c) => c.data_version), ['d0', 'd1']);
    assert.equal((await reopened.answerAt(keyOf(9), T0 + DAY)).facts.confidence, 1009);
    await reopened.close();
  });
});

test('a prune while a pass holds the index: the pass lets go of the old index, and the new one keeps the rows file', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await recordAll(log, T0, 'd0', (i) => 1000 + i);
    await recordAll(log, T0 + DAY, 'd1', (i) => 2000 + i);
    await recordAll(log, T0 + 5 * DAY, 'd5', (i) => 3000 + i);
    const release = await log.holdIndex();
    assert.equal(await log.prune(T0 + 3 * DAY), VPAS, 'the records of day 0 went');
    // The pass ends after the prune: its release must not spill the old index over the new one's rows.
    release();
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (let i = 0; i < VPAS; i += 97) {
      assert.equal(log.differs(log.numberOf(keyOf(i)), flaggedFacts(3000 + i), true), false, keyOf(i));
      assert.equal((await log.answerAt(keyOf(i), T0 + 4 * DAY)).facts.confidence, 2000 + i, keyOf(i));
      assert.equal((await log.answerAt(keyOf(i), T0 + 5 * DAY)).facts.confidence, 3000 + i, keyOf(i));
    }
    const pass = await log.holdIndex();
    for (let i = 0; i < VPAS; i++) assert.equal(log.differs(log.numberOf(keyOf(i)), flaggedFacts(3000 + i), true), false, keyOf(i));
    const heldBytes = log.indexBytes;
    pass();
    await until('the rows spilled', 5_000, async () => (await exists(rowsPathOf(path))) === VPAS * ROW_BYTES && log.indexBytes <= heldBytes - VPAS * ROW_BYTES);
    for (let i = 0; i < VPAS; i += 89) {
      assert.equal(log.differs(log.numberOf(keyOf(i)), flaggedFacts(3000 + i), true), false, `${keyOf(i)} on file`);
      // The places are the pruned file's: an old index's rows written over them would name other records.
      assert.equal((await log.answerAt(keyOf(i), T0 + 5 * DAY)).facts.confidence, 3000 + i, `${keyOf(i)} on file`);
    }
    assert.equal(await log.close(), null);
  });
});

test('rows that cannot be read back stop the history at the comparison ahead, which the swap goes on without', async () => {
  const t = await tempDataDir();
  const path = join(t.root, 'history', 'changes.log');
  const errors: string[] = [];
  const history = await AnswerHistory.open(path, 0, 400 * DAY, { ...silentLogger, error: (_fields, message) => void errors.push(message) });
  try {
    const one = buildInProcess([evidence('x@ybl', 'https://a.example'), evidence('y@ybl', 'https://b.example')]);
    await history.record(one, null, { kind: 'snapshot', corrected: new Set(), clearances: new Map() }, T0, 'v1');
    await until('the rows spilled', 5_000, async () => (await exists(rowsPathOf(path))) === 2 * ROW_BYTES);
    await truncate(rowsPathOf(path), ROW_BYTES);
    assert.equal(await history.compareAhead(one), null, 'no comparison ahead, and no rejection');
    assert.match(history.unavailable ?? '', /could not be read/);
    assert.deepEqual(errors, ['the history of answers could not be read; no more changes are recorded']);
    await assert.rejects(history.answerAt('x@ybl', T0), (error: Error & { code?: string }) => error.code === 'ERR_HISTORY');
  } finally {
    await history.close();
    await t.cleanup();
  }
});
