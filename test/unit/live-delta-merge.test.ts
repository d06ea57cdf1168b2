import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NOT_FOUND } from '../../src/common/brand.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { mergeDelta } from '../../src/builder/delta-merge.js';
import { buildInProcess, evidence } from '../helpers.js';
import { ASKED, evidenceArb, settledFields, snapshotAndDelta, urlsOf } from '../delta-fixtures.js';

const batchesArb = fc.array(fc.array(evidenceArb, { minLength: 1, maxLength: 8 }), { minLength: 2, maxLength: 6 });

test('snapshot + delta answers every settled field as a full build of the same evidence does', () => {
  fc.assert(
    fc.property(batchesArb, (batches) => {
      const { base, deltas } = snapshotAndDelta(batches);
      const served = new ServingView(base, deltas.at(-1)!);
      const full = buildInProcess(batches.flat());
      const baseUrls = urlsOf(base);
      for (const upi of ASKED) {
        assert.deepEqual(settledFields(served.verdict(upi), baseUrls), settledFields(full.verdict(upi), baseUrls), upi);
      }
    }),
    { numRuns: 300 },
  );
});

test('a VPA the delta touched has the confidence a full build at the same scoring time gives it; no VPA has more', () => {
  fc.assert(
    fc.property(batchesArb, (batches) => {
      const { base, deltas } = snapshotAndDelta(batches);
      const served = new ServingView(base, deltas.at(-1)!);
      const full = buildInProcess(batches.flat());
      for (const upi of ASKED) {
        const now = served.verdict(upi).confidence;
        const rebuilt = full.verdict(upi).confidence;
        if (served.delta !== null && served.delta.lookup(upi) !== NOT_FOUND) assert.equal(now, rebuilt, upi);
        // Untouched VPAs wait for compaction for the peers term only: never above the rebuild.
        else assert.ok(now === null ? rebuilt === null : now <= rebuilt!, `${upi}: ${now} > ${rebuilt}`);
      }
    }),
    { numRuns: 300 },
  );
});

test('confidence never decreases as the delta grows, from the snapshot on', () => {
  fc.assert(
    fc.property(batchesArb, (batches) => {
      const { base, deltas } = snapshotAndDelta(batches);
      const views = [new ServingView(base), ...deltas.map((d) => new ServingView(base, d))];
      for (const upi of ASKED) {
        let before: number | null = null;
        for (const view of views) {
          const now = view.verdict(upi).confidence;
          if (before !== null) assert.ok(now !== null && now >= before, `${upi}: ${before} then ${now}`);
          before = now;
        }
      }
    }),
    { numRuns: 300 },
  );
});

test('no answer goes backwards from one delta to the next: flagged stays flagged, no source, count or time is lost', () => {
  fc.assert(
    fc.property(batchesArb, (batches) => {
      const { base, deltas } = snapshotAndDelta(batches);
      const views = [new ServingView(base), ...deltas.map((d) => new ServingView(base, d))];
      for (const upi of ASKED) {
        for (let i = 1; i < views.length; i++) assertNotBackwards(views[i - 1]!.verdict(upi), views[i]!.verdict(upi));
      }
    }),
    { numRuns: 200 },
  );
});

test('a compaction part-way (a snapshot of the first files, the rest as its delta) answers as the full build', () => {
  fc.assert(
    fc.property(batchesArb, fc.nat(), (batches, cut) => {
      const split = 1 + (cut % (batches.length - 1));
      // The snapshot holds files 0..split-1 (a build of them), the delta the rest.
      const merged = [batches.slice(0, split).flat(), ...batches.slice(split)];
      const { base, deltas } = snapshotAndDelta(merged);
      const served = new ServingView(base, deltas.at(-1) ?? null);
      const full = buildInProcess(batches.flat());
      const baseUrls = urlsOf(base);
      for (const upi of ASKED) {
        assert.deepEqual(settledFields(served.verdict(upi), baseUrls), settledFields(full.verdict(upi), baseUrls), upi);
      }
    }),
    { numRuns: 200 },
  );
});

test('an evidence id seen long before changes nothing, whichever VPA it names now', () => {
  const first = [evidence('old@ybl', 'https://a.example', { evidence_id: 'kept-1' })];
  const filler = [evidence('other@ybl', 'https://b.example', { evidence_id: 'f-1' })];
  const resent = [
    evidence('old@ybl', 'https://c.example', { evidence_id: 'kept-1', captured_at: '2026-10-30T00:00:00Z' }),
    evidence('new@ybl', 'https://d.example', { evidence_id: 'kept-1' }),
  ];
  const { base, deltas } = snapshotAndDelta([first, filler, filler, resent]);
  const served = new ServingView(base, deltas.at(-1)!);
  assert.deepEqual(served.verdict('old@ybl'), base.verdict('old@ybl'));
  assert.equal(served.verdict('new@ybl').status, 'CLEARED');
  // The last file added nothing: the delta's position did not move.
  assert.equal(deltas[3 - 1]!.meta.position, deltas[2 - 1]!.meta.position);
});

test('a VPA the snapshot knew keeps its cluster; a new one has none until compaction', () => {
  const first = [
    evidence('m1@ybl', 'https://gang.example', { evidence_id: 'g1' }),
    evidence('m2@ybl', 'https://gang.example', { evidence_id: 'g2' }),
  ];
  const later = [
    evidence('m1@ybl', 'https://elsewhere.example', { evidence_id: 'g3' }),
    evidence('m3@ybl', 'https://gang.example', { evidence_id: 'g4' }),
  ];
  const { base, deltas } = snapshotAndDelta([first, later]);
  const served = new ServingView(base, deltas[0]!);
  const before = base.verdict('m1@ybl');
  const now = served.verdict('m1@ybl');
  assert.equal(now.cluster_id, before.cluster_id);
  assert.equal(now.cluster_size, 2);
  assert.equal(now.evidence_count, 2);
  const newcomer = served.verdict('m3@ybl');
  assert.equal(newcomer.status, 'FLAGGED');
  assert.equal(newcomer.cluster_id, null);
  assert.equal(newcomer.cluster_size, 0);
  // The cluster answer is the snapshot's until compaction.
  assert.deepEqual(served.cluster(before.cluster_id!), base.cluster(before.cluster_id!));
});

test('the view names its snapshot and the delta position; an empty delta names the snapshot alone', () => {
  const { base, deltas } = snapshotAndDelta([[evidence('a@ybl', 'https://a.example')], [evidence('b@ybl', 'https://b.example')]]);
  assert.equal(new ServingView(base).version, base.meta.id);
  const served = new ServingView(base, deltas[0]!);
  assert.equal(served.version, `${base.meta.id}+1`);
  assert.ok(served.asOf >= base.asOf);
});

test('a delta merged over another snapshot is refused', () => {
  const { deltas } = snapshotAndDelta([[evidence('a@ybl', 'https://a.example')], [evidence('b@ybl', 'https://b.example')]]);
  const other = buildInProcess([evidence('z@ybl', 'https://z.example')]);
  const renamed = { ...other.data, meta: { ...other.data.meta, id: 'another' } };
  assert.throws(() => mergeDelta({ base: renamed, previous: deltas[0]!, inputs: [], files: [], now: 0 }), RangeError);
});

/** `after` keeps everything `before` said: status, sources, counts, times. */
function assertNotBackwards(before: ReturnType<ServingView['verdict']>, after: ReturnType<ServingView['verdict']>): void {
  if (before.status === 'CLEARED') return;
  assert.equal(after.status, 'FLAGGED', before.upi);
  assert.ok(after.evidence_count >= before.evidence_count, before.upi);
  assert.ok(after.first_seen! <= before.first_seen!, before.upi);
  assert.ok(after.last_seen! >= before.last_seen!, before.upi);
  for (const source of before.sources) {
    const still = after.sources.find((s) => s.url === source.url);
    assert.ok(still !== undefined, `${before.upi}: ${source.url} disappeared`);
    assert.ok(still.captured_at >= source.captured_at, before.upi);
    assert.ok(still.screenshot_available || !source.screenshot_available, before.upi);
  }
}
