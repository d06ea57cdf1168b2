import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { confidenceBand } from '../../src/api/advice.js';
import { silentLogger, type Logger } from '../../src/common/logger.js';
import { ServingView } from '../../src/engine/serving-view.js';
import type { DeltaData } from '../../src/engine/delta-data.js';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import { AnswerHistory, type ServedChange } from '../../src/history/answer-changes.js';
import { pastVerdict } from '../../src/history/past-verdicts.js';
import { verdictJson } from '../../src/api/answer-json.js';
import { assertToldAsOf } from '../as-of-checks.js';
import { ASKED, batchesArb, snapshotAndDelta } from '../delta-fixtures.js';
import { TEST_SCORED_AT, buildInProcess, evidence, tempDataDir } from '../helpers.js';

// What each state served changes in the answers: after every state
// recorded, each VPA's newest change is the answer that state gives (its
// status, risk category, band and cluster), no change repeats the one
// before it, and each says why it happened.

const DAY = 24 * 3600 * 1000;
const NOTHING: ServedChange = { kind: 'merge', corrected: new Set(), clearances: new Map() };

async function withHistory(run: (history: AnswerHistory) => Promise<void>, logger: Logger = silentLogger): Promise<void> {
  const t = await tempDataDir();
  const history = await AnswerHistory.open(join(t.root, 'changes.log'), 0, 400 * DAY, logger);
  try {
    await run(history);
  } finally {
    await history.close();
    await t.cleanup();
  }
}

/** A logger that puts into `compared` how each new snapshot recorded was compared (`ahead` or `every VPA`; a merge's is logged at debug). */
function comparisonsInto(compared: unknown[]): Logger {
  return { ...silentLogger, info: (fields, message) => void (message === 'answer changes recorded' && compared.push(fields.compared)) };
}

/** What the history tells of an answer. */
function told(status: string, risk: string | null, confidence: number | null, cluster: string | null): string {
  return JSON.stringify([status, risk, status === 'FLAGGED' ? confidenceBand('FLAGGED', confidence) : 'cleared', cluster]);
}

/** Every state recorded so far in a history, with when it began: each is told again as of that instant. */
const statesOf = new WeakMap<AnswerHistory, (readonly [number, ServingView])[]>();

async function assertAnswersAsOf(history: AnswerHistory, view: ServingView, at: number): Promise<void> {
  const states = [...(statesOf.get(history) ?? []), [at, view] as const];
  statesOf.set(history, states);
  await assertToldAsOf(history, states);
}

async function assertTellsServed(history: AnswerHistory, view: ServingView, at: number): Promise<void> {
  await assertAnswersAsOf(history, view, at);
  for (const upi of ASKED) {
    const changes = await history.changesOf(upi, at);
    const v = view.verdict(upi);
    const last = changes.at(-1);
    if (last === undefined) assert.equal(v.status, 'CLEARED', `${upi} served FLAGGED with no change recorded`);
    else assert.equal(told(last.status, last.risk_category, last.confidence, last.cluster_id), told(v.status, v.risk_category, v.confidence, v.cluster_id), upi);
    for (let i = 1; i < changes.length; i++) {
      const [a, b] = [changes[i - 1]!, changes[i]!];
      assert.notEqual(told(a.status, a.risk_category, a.confidence, a.cluster_id), told(b.status, b.risk_category, b.confidence, b.cluster_id), `${upi}: change ${i} repeats the one before`);
    }
  }
}

test('after each snapshot and merge recorded, every VPA\'s newest change is what is served', async () => {
  await fc.assert(
    fc.asyncProperty(batchesArb, async (batches) => {
      await withHistory(async (history) => {
        const { base, deltas } = snapshotAndDelta(batches);
        let at = Date.parse('2026-11-01T00:00:00Z');
        await history.record(base, null, { ...NOTHING, kind: 'snapshot' }, at, base.meta.id);
        await assertTellsServed(history, new ServingView(base), at);
        for (const [i, delta] of deltas.entries()) {
          await history.record(base, delta, NOTHING, ++at, `${base.meta.id}+${i + 1}`);
          await assertTellsServed(history, new ServingView(base, delta), at);
        }
        // A compaction of everything: clusters formed, urls counted again; the same scored 40 days on (a new scoring
        // day: every confidence to a column); and then a snapshot of the first batch alone on that day, which no
        // longer holds the later VPAs (CLEARED).
        const later = TEST_SCORED_AT + 40 * DAY;
        for (const next of [buildInProcess(batches.flat()), buildInProcess(batches.flat(), later), buildInProcess(batches[0]!, later)]) {
          await history.record(next, null, { ...NOTHING, kind: 'snapshot' }, ++at, `s${at}`);
          await assertTellsServed(history, new ServingView(next), at);
        }
        assert.equal(history.unavailable, null);
      });
    }),
    { numRuns: 60 },
  );
});

test('a snapshot compared ahead of its swap, merges recorded meanwhile, records what is served', async () => {
  await fc.assert(
    fc.asyncProperty(batchesArb, async (batches) => {
      const compared: unknown[] = [];
      await withHistory(async (history) => {
        const served = snapshotAndDelta(batches);
        // The compaction: the first two batches in a snapshot, the rest merged again over it.
        const compacted = snapshotAndDelta([batches.slice(0, 2).flat(), ...batches.slice(2)]);
        const snapshot = { ...NOTHING, kind: 'snapshot' } as const;
        let at = Date.parse('2026-11-01T00:00:00Z');
        await history.record(served.base, null, snapshot, at, served.base.meta.id);
        const ahead = await history.compareAhead(compacted.base);
        assert.notEqual(ahead, null);
        // Merges go on while the swap waits, and change answers the comparison ahead saw before them.
        for (const [i, delta] of served.deltas.entries()) {
          await history.record(served.base, delta, NOTHING, ++at, `${served.base.meta.id}+${i + 1}`);
          await assertTellsServed(history, new ServingView(served.base, delta), at);
        }
        const delta = compacted.deltas.at(-1) ?? null;
        await history.record(compacted.base, delta, snapshot, ++at, `c${at}`, ahead);
        await assertTellsServed(history, delta === null ? new ServingView(compacted.base) : new ServingView(compacted.base, delta), at);
        // A snapshot of the first batch alone on a later scoring day (a column), compared ahead with nothing between:
        // the VPAs it no longer holds are CLEARED.
        const first = buildInProcess(batches[0]!, TEST_SCORED_AT + 40 * DAY);
        await history.record(first, null, snapshot, ++at, `f${at}`, await history.compareAhead(first));
        await assertTellsServed(history, new ServingView(first), at);
      }, comparisonsInto(compared));
      assert.deepEqual(compared, ['every VPA', 'ahead', 'ahead']);
    }),
    { numRuns: 60 },
  );
});

test('a VPA a merge changed while the comparison ahead waited is compared again at the swap', async () => {
  await withHistory(async (history) => {
    const x = 'x@ybl';
    const { base, deltas } = snapshotAndDelta([[evidence(x, 'https://a.example'), evidence('y@ybl', 'https://a.example')], [evidence(x, 'https://c.example', { risk_category: 'mule' })]]);
    const snapshot = { ...NOTHING, kind: 'snapshot' } as const;
    await history.record(base, null, snapshot, 1, 'v1');
    // The same answers as served: nothing differs when compared ahead.
    const same = buildInProcess([evidence(x, 'https://a.example'), evidence('y@ybl', 'https://a.example')]);
    const ahead = await history.compareAhead(same);
    assert.equal(ahead?.differing.size, 0);
    await history.record(base, deltas[0]!, NOTHING, 2, 'v1+1');
    await history.record(same, null, snapshot, 3, 'v2', ahead);
    await assertTellsServed(history, new ServingView(same), 3);
    assert.deepEqual((await history.changesOf(x, 0)).map((c) => c.data_version), ['v1', 'v1+1', 'v2']);
  });
});

test('a comparison ahead made stale by a pass since, or of another snapshot, is not used: every VPA is compared', async () => {
  const compared: unknown[] = [];
  await withHistory(async (history) => {
    const one = buildInProcess([evidence('x@ybl', 'https://a.example')]);
    const two = buildInProcess([evidence('x@ybl', 'https://a.example'), evidence('y@ybl', 'https://b.example')]);
    const snapshot = { ...NOTHING, kind: 'snapshot' } as const;
    assert.equal(await history.compareAhead(one), null, 'nothing to gain before the first state');
    await history.record(one, null, snapshot, 1, 'v1');
    const stale = await history.compareAhead(two);
    await history.record(one, null, snapshot, 2, 'v2');
    await history.record(two, null, snapshot, 3, 'v3', stale);
    await history.record(one, null, snapshot, 4, 'v4', await history.compareAhead(two));
    assert.deepEqual((await history.changesOf('y@ybl', 0)).map((c) => [c.data_version, c.status]), [['v3', 'FLAGGED'], ['v4', 'CLEARED']]);
  }, comparisonsInto(compared));
  assert.deepEqual(compared, ['every VPA', 'every VPA', 'every VPA', 'every VPA']);
});

test('why each change happened: evidence, a clearance made and ended, a retraction, expiry, the compaction', async () => {
  await withHistory(async (history) => {
    const x = 'x@ybl';
    const one = buildInProcess([evidence(x, 'https://a.example'), evidence('y@ybl', 'https://b.example')]);
    const without = buildInProcess([evidence('y@ybl', 'https://b.example')]);
    const two = buildInProcess([evidence(x, 'https://a.example'), evidence(x, 'https://c.example', { risk_category: 'mule' }), evidence('y@ybl', 'https://b.example')]);
    const clustered = buildInProcess([evidence(x, 'https://a.example'), evidence('y@ybl', 'https://a.example'), evidence('y@ybl', 'https://b.example')]);
    const cleared = { createdAt: 1 };
    let at = Date.parse('2026-11-01T00:00:00Z');
    const step = async (view: SnapshotView, change: Partial<ServedChange>, delta: DeltaData | null = null) =>
      history.record(view, delta, { ...NOTHING, kind: 'snapshot', ...change }, ++at, `v${at}`);
    // The first state recorded is compared whole even when a merge made it.
    await step(one, { kind: 'merge' });
    await step(without, { corrected: new Set([x]), clearances: new Map([[x, cleared]]) });
    await step(one, { corrected: new Set([x]) });
    await step(without, { corrected: new Set([x]) });
    await step(two, {});
    await step(without, {});
    await step(clustered, {});
    const causes = (await history.changesOf(x)).map((c) => [c.status, c.cause]);
    assert.deepEqual(causes, [
      ['FLAGGED', 'evidence'],
      ['CLEARED', 'clearance'],
      ['FLAGGED', 'clearance_ended'],
      ['CLEARED', 'retraction'],
      ['FLAGGED', 'evidence'],
      ['CLEARED', 'expiry'],
      ['FLAGGED', 'evidence'],
    ]);
    const y = await history.changesOf('y@ybl');
    assert.deepEqual(y.map((c) => [c.cause, c.cluster_id !== null]), [['evidence', false], ['compaction', true]], 'y joins a cluster: the compaction');
    // Another record of the same state changes nothing.
    const before = history.bytes;
    await step(clustered, {});
    assert.equal(history.bytes, before);
  });
});

test('a history refused or that cannot be written answers why, and records nothing', async () => {
  const off = AnswerHistory.unavailable('kept elsewhere', silentLogger);
  await off.record(buildInProcess([evidence('x@ybl', 'https://a.example')]), null, NOTHING, 1, 'v1');
  await assert.rejects(off.changesOf('x@ybl'), /kept elsewhere/);
  assert.equal(off.vpaCount, 0);
});

test('changes past the history kept are dropped once the oldest is a month past it, and no longer told', async () => {
  const t = await tempDataDir();
  const history = await AnswerHistory.open(join(t.root, 'changes.log'), 0, DAY, silentLogger);
  try {
    const one = buildInProcess([evidence('x@ybl', 'https://a.example'), evidence('y@ybl', 'https://b.example')]);
    const two = buildInProcess([evidence('x@ybl', 'https://a.example'), evidence('x@ybl', 'https://c.example', { risk_category: 'mule' }), evidence('y@ybl', 'https://b.example')]);
    const start = Date.parse('2026-01-01T00:00:00Z');
    const snapshot = { ...NOTHING, kind: 'snapshot' } as const;
    await history.record(one, null, snapshot, start, 'v1');
    await history.record(two, null, snapshot, start + 5 * DAY, 'v2');
    await history.record(one, null, snapshot, start + 10 * DAY, 'v3');
    const full = history.bytes;
    // A month and a day past the retention of one day after x@ybl's first record was replaced: the file is copied
    // without x@ybl's first two changes; the third tells its answer at the cutoff.
    await history.record(two, null, snapshot, start + 37 * DAY, 'v4');
    assert.equal(history.unavailable, null);
    assert.ok(history.bytes < full, `${history.bytes} bytes after pruning, ${full} before the last state`);
    assert.deepEqual((await history.changesOf('x@ybl', start + 37 * DAY)).map((c) => c.data_version), ['v4'], 'one day back');
    for (const [at, view] of [[start + 36.5 * DAY, one], [start + 37 * DAY, two]] as const) {
      assert.equal(verdictJson(pastVerdict('x@ybl', await history.answerAt('x@ybl', at))), verdictJson(new ServingView(view).verdict('x@ybl')));
    }
    assert.deepEqual((await history.changesOf('y@ybl', start + 37 * DAY)).map((c) => c.data_version), [], "y@ybl's answer is older than the day kept");
  } finally {
    await history.close();
    await t.cleanup();
  }
});

test('a new scoring day writes a column of every confidence; another snapshot of the same day records its changes instead', async () => {
  const t = await tempDataDir();
  const history = await AnswerHistory.open(join(t.root, 'history', 'changes.log'), 0, 400 * DAY, silentLogger);
  try {
    const items = [evidence('x@ybl', 'https://a.example', { captured_at: new Date(TEST_SCORED_AT - 100 * DAY).toISOString() }), evidence('y@ybl', 'https://b.example')];
    const snapshot = { ...NOTHING, kind: 'snapshot' } as const;
    const columns = async () => (await readdir(join(t.root, 'history', 'scores'))).length;
    const states: (readonly [number, ServingView])[] = [];
    const serve = async (view: SnapshotView, at: number) => {
      await history.record(view, null, snapshot, at, `s${at}`);
      states.push([at, new ServingView(view)]);
    };
    await serve(buildInProcess(items, TEST_SCORED_AT + 3600_000), 1);
    assert.equal(await columns(), 1, 'the first state');
    // Later the same day, with a page more for y@ybl: recorded as a change, no column.
    await serve(buildInProcess([...items, evidence('y@ybl', 'https://c.example', { evidence_id: 'y2' })], TEST_SCORED_AT + 20 * 3600_000), 2);
    assert.equal(await columns(), 1);
    // The next day scores x@ybl's old evidence less, and y@ybl's too: a column.
    await serve(buildInProcess([...items, evidence('y@ybl', 'https://c.example', { evidence_id: 'y2' })], TEST_SCORED_AT + DAY + 3600_000), 3);
    assert.equal(await columns(), 2);
    await assertToldAsOf(history, states);
  } finally {
    await history.close();
    await t.cleanup();
  }
});
