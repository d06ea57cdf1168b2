import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import fc from 'fast-check';
import { confidenceBand } from '../../src/api/advice.js';
import { silentLogger, type Logger } from '../../src/common/logger.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { AnswerHistory, type ServedChange } from '../../src/history/answer-changes.js';
import type { DeltaData } from '../../src/engine/delta-data.js';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import { ASKED, batchesArb, snapshotAndDelta } from '../delta-fixtures.js';
import { assertToldAsOf } from '../as-of-checks.js';
import { TEST_SCORED_AT, buildInProcess, tempDataDir } from '../helpers.js';

// The first state a restarted server records: of the snapshot whose every
// VPA was compared last, only the VPAs its delta holds and those changed
// since are compared, and the history then tells what is served exactly as
// a comparison of every VPA would; of another snapshot, or with no index
// kept by a clean close, every VPA is compared.

const DAY = 24 * 3600 * 1000;
const MERGE: ServedChange = { kind: 'merge', corrected: new Set(), clearances: new Map() };
const SNAPSHOT: ServedChange = { ...MERGE, kind: 'snapshot' };

/** A logger that puts into `compared` how each state recorded at info (a snapshot, or the first after a start) was compared. */
function comparisonsInto(compared: unknown[]): Logger {
  return { ...silentLogger, info: (fields, message) => void (message === 'answer changes recorded' && compared.push(fields.compared)) };
}

/** What the history tells of every VPA asked: its newest change, as status, risk, band and cluster. */
async function newestChanges(history: AnswerHistory): Promise<string[]> {
  return Promise.all(
    ASKED.map(async (upi) => {
      const last = (await history.changesOf(upi, 0)).at(-1);
      return last === undefined ? 'CLEARED' : JSON.stringify([last.status, last.risk_category, confidenceBand(last.status, last.confidence), last.cluster_id]);
    }),
  );
}

/** What `view` serves, as newestChanges tells it. */
function served(view: ServingView): string[] {
  return ASKED.map((upi) => {
    const v = view.verdict(upi);
    return v.status === 'CLEARED' ? 'CLEARED' : JSON.stringify([v.status, v.risk_category, confidenceBand(v.status, v.confidence), v.cluster_id]);
  });
}

function viewOf(base: SnapshotView, delta: DeltaData | null): ServingView {
  return delta === null ? new ServingView(base) : new ServingView(base, delta);
}

test('a restart on the snapshot compared last compares its delta alone, and tells what is served', async () => {
  await fc.assert(
    fc.asyncProperty(batchesArb, fc.nat(), async (batches, cut) => {
      const t = await tempDataDir();
      const path = join(t.root, 'changes.log');
      const compared: unknown[] = [];
      try {
        const { base, deltas } = snapshotAndDelta(batches);
        let history = await AnswerHistory.open(path, 0, 400 * DAY, comparisonsInto(compared));
        let at = Date.parse('2026-11-01T00:00:00Z');
        // Served first with the delta of the first file: the mark names it, and every start after holds it.
        await history.record(base, deltas[0] ?? null, SNAPSHOT, at, `${base.meta.id}+0`);
        const states: (readonly [number, ServingView])[] = [[at, viewOf(base, deltas[0] ?? null)]];
        // Merges, then a clean stop after `cut` of them and a start serving the delta as it was, then the rest.
        const stopAfter = deltas.length === 0 ? 0 : cut % deltas.length;
        for (const [i, delta] of deltas.entries()) {
          await history.record(base, delta, MERGE, ++at, `${base.meta.id}+${i + 1}`);
          states.push([at, new ServingView(base, delta)]);
          if (i !== stopAfter) continue;
          await history.close();
          history = await AnswerHistory.open(path, at, 400 * DAY, comparisonsInto(compared));
          await history.record(base, delta, MERGE, ++at, `${base.meta.id}+${i + 1}r`);
          states.push([at, new ServingView(base, delta)]);
          assert.deepEqual(await newestChanges(history), served(new ServingView(base, delta)));
        }
        await assertToldAsOf(history, states);
        await history.close();
        assert.deepEqual(compared, deltas.length === 0 ? ['every VPA'] : ['every VPA', 'since the last comparison']);
      } finally {
        await t.cleanup();
      }
    }),
    { numRuns: 40 },
  );
});

/**
 * A first run serving `batches`' first snapshot, closed; a second that
 * swaps in a compaction of everything scored at `compactionScoredAt` and
 * ends without closing (the index kept is the first run's); a third that
 * serves the first snapshot again (the compaction's file lost) with its
 * delta. Returns how the third compared its first state, after checking
 * that the history tells each state as it was served.
 */
async function crashAfterCompaction(batches: Parameters<typeof snapshotAndDelta>[0], compactionScoredAt: number): Promise<unknown[]> {
  const t = await tempDataDir();
  const path = join(t.root, 'changes.log');
  const compared: unknown[] = [];
  try {
    const { base, deltas } = snapshotAndDelta(batches);
    const first = await AnswerHistory.open(path, 0, 400 * DAY, silentLogger);
    let at = Date.parse('2026-11-01T00:00:00Z');
    await first.record(base, null, SNAPSHOT, at, base.meta.id);
    await first.close();
    const second = await AnswerHistory.open(path, at, 400 * DAY, silentLogger);
    const compaction = buildInProcess(batches.flat(), compactionScoredAt);
    const states: (readonly [number, ServingView])[] = [[at, new ServingView(base)]];
    await second.record(base, null, SNAPSHOT, ++at, `${base.meta.id}+1`);
    states.push([at, new ServingView(base)]);
    await second.record(compaction, null, SNAPSHOT, ++at, compaction.meta.id);
    states.push([at, new ServingView(compaction)]);
    const third = await AnswerHistory.open(path, at, 400 * DAY, comparisonsInto(compared));
    const delta = deltas.at(-1) ?? null;
    await third.record(base, delta, MERGE, ++at, `${base.meta.id}+2`);
    states.push([at, viewOf(base, delta)]);
    assert.deepEqual(await newestChanges(third), served(viewOf(base, delta)));
    await assertToldAsOf(third, states);
    await third.close();
    await second.close();
    return compared;
  } finally {
    await t.cleanup();
  }
}

test('after a crash, a restart on the snapshot compared before a swap compares what changed since', async () => {
  await fc.assert(
    fc.asyncProperty(batchesArb, async (batches) => {
      assert.deepEqual(await crashAfterCompaction(batches, TEST_SCORED_AT), ['since the last comparison']);
    }),
    { numRuns: 40 },
  );
});

test('after a crash, a restart on the snapshot compared before a swap to another scoring day compares every VPA, and tells each state', async () => {
  await fc.assert(
    fc.asyncProperty(batchesArb, async (batches) => {
      // The compaction's column holds confidences the first snapshot does not serve.
      assert.deepEqual(await crashAfterCompaction(batches, TEST_SCORED_AT + 2 * DAY), ['every VPA']);
    }),
    { numRuns: 25 },
  );
});

test('a restart on another snapshot, or with a file its delta held gone, compares every VPA', async () => {
  const t = await tempDataDir();
  const path = join(t.root, 'changes.log');
  const compared: unknown[] = [];
  try {
    const batches = fc.sample(batchesArb.filter((b) => b.length >= 3), { numRuns: 1, seed: 7 })[0]!;
    const { base, deltas } = snapshotAndDelta(batches);
    let at = Date.parse('2026-11-01T00:00:00Z');
    let history = await AnswerHistory.open(path, 0, 400 * DAY, comparisonsInto(compared));
    // Swapped in with a delta of two files.
    await history.record(base, deltas[1]!, SNAPSHOT, at, `${base.meta.id}+2`);
    await history.close();
    // Started again with a delta of the first file alone: the second file is gone.
    history = await AnswerHistory.open(path, at, 400 * DAY, comparisonsInto(compared));
    await history.record(base, deltas[0]!, MERGE, ++at, `${base.meta.id}+3`);
    assert.deepEqual(await newestChanges(history), served(new ServingView(base, deltas[0]!)));
    await history.close();
    // Started on another snapshot.
    const other = buildInProcess(batches.flat());
    history = await AnswerHistory.open(path, at, 400 * DAY, comparisonsInto(compared));
    await history.record(other, null, MERGE, ++at, other.meta.id);
    assert.deepEqual(await newestChanges(history), served(new ServingView(other)));
    await history.close();
    assert.deepEqual(compared, ['every VPA', 'every VPA', 'every VPA']);
  } finally {
    await t.cleanup();
  }
});
