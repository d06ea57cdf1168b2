import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NOT_FOUND } from '../../src/common/brand.js';
import { countsFrom } from '../../src/builder/scoring.js';
import { DEFAULT_URL_MEMBER_CAP } from '../../src/builder/clustering.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { decodeSnapshot } from '../../src/engine/snapshot-format/decode.js';
import { encodeSnapshot } from '../../src/engine/snapshot-format/encode.js';
import { readMeta } from '../../src/engine/snapshot-format/validate.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import { TEST_SCORED_AT, buildInProcess, evidence, ingest, tempDataDir, until, type EvidenceInput } from '../helpers.js';
import { ASKED, evidenceArb, settledFields, snapshotAndDelta, urlsOf } from '../delta-fixtures.js';

const DAY = 86_400_000;
const maxAgeArb = fc.integer({ min: 1, max: 4 * 365 }).map((days) => days * DAY);

/** The evidence that counts under the rules of docs/evidence.md and docs/scoring.md: the first item of each id, captured no earlier than the limit. */
function counting(items: readonly EvidenceInput[], scoredAt: number, maxAgeMs: number): EvidenceInput[] {
  const seen = new Set<string>();
  const first = items.filter((item) => !seen.has(item.evidence_id) && seen.add(item.evidence_id));
  return first.filter((item) => Date.parse(item.captured_at) >= countsFrom(scoredAt, maxAgeMs));
}

test('a build with an age limit answers every field as a build of only the evidence that counts', () => {
  fc.assert(
    fc.property(fc.array(evidenceArb, { maxLength: 30 }), maxAgeArb, (items, maxAgeMs) => {
      const expiring = buildInProcess(items, TEST_SCORED_AT, DEFAULT_URL_MEMBER_CAP, maxAgeMs);
      const reference = buildInProcess(counting(items, TEST_SCORED_AT, maxAgeMs));
      for (const upi of ASKED) assert.deepEqual(expiring.verdict(upi), reference.verdict(upi), upi);
      const { evidenceMaxAgeMs, ...meta } = expiring.meta;
      const { evidenceMaxAgeMs: none, ...referenceMeta } = reference.meta;
      assert.equal(evidenceMaxAgeMs, maxAgeMs);
      assert.equal(none, 0);
      assert.deepEqual({ ...meta, id: '' }, { ...referenceMeta, id: '' });
    }),
    { numRuns: 300 },
  );
});

test('a delta over a snapshot with an age limit leaves out what the snapshot would: settled fields as a rebuild of what counts', () => {
  const batchesArb = fc.array(fc.array(evidenceArb, { minLength: 1, maxLength: 8 }), { minLength: 2, maxLength: 5 });
  fc.assert(
    fc.property(batchesArb, maxAgeArb, (batches, maxAgeMs) => {
      const { base, deltas } = snapshotAndDelta(batches, maxAgeMs);
      const served = new ServingView(base, deltas.at(-1)!);
      const full = buildInProcess(counting(batches.flat(), TEST_SCORED_AT, maxAgeMs));
      const baseUrls = urlsOf(base);
      for (const upi of ASKED) {
        assert.deepEqual(settledFields(served.verdict(upi), baseUrls), settledFields(full.verdict(upi), baseUrls), upi);
        if (served.delta !== null && served.delta.lookup(upi) !== NOT_FOUND) assert.equal(served.verdict(upi).confidence, full.verdict(upi).confidence, upi);
      }
      assert.equal(deltas.at(-1)!.overlay.meta.evidenceMaxAgeMs, maxAgeMs);
    }),
    { numRuns: 300 },
  );
});

test('evidence captured exactly at the limit counts; a millisecond earlier it does not', () => {
  const maxAgeMs = 30 * DAY;
  const limit = TEST_SCORED_AT - maxAgeMs;
  const view = buildInProcess(
    [
      evidence('edge@ybl', 'https://a.example', { evidence_id: 'e1', captured_at: new Date(limit).toISOString() }),
      evidence('gone@ybl', 'https://a.example', { evidence_id: 'g1', captured_at: new Date(limit - 1).toISOString() }),
      evidence('mixed@ybl', 'https://b.example', { evidence_id: 'm1', captured_at: new Date(limit - DAY).toISOString() }),
      evidence('mixed@ybl', 'https://c.example', { evidence_id: 'm2', captured_at: new Date(TEST_SCORED_AT - DAY).toISOString() }),
    ],
    TEST_SCORED_AT,
    DEFAULT_URL_MEMBER_CAP,
    maxAgeMs,
  );
  assert.equal(view.verdict('edge@ybl').status, 'FLAGGED');
  const gone = view.verdict('gone@ybl');
  assert.deepEqual([gone.status, gone.evidence_count, gone.sources, gone.first_seen], ['CLEARED', 0, [], null]);
  const mixed = view.verdict('mixed@ybl');
  assert.equal(mixed.evidence_count, 1);
  assert.deepEqual(mixed.sources.map((s) => s.url), ['https://c.example']);
  assert.equal(view.meta.urlCount, 2, 'a url with no evidence that counts is not in the snapshot');
});

test('the age limit is kept in the snapshot file; a meta without one reads as no limit', () => {
  const view = buildInProcess([evidence('a@ybl', 'https://a.example')], TEST_SCORED_AT, DEFAULT_URL_MEMBER_CAP, 7 * DAY);
  const decoded = decodeSnapshot(Buffer.concat(encodeSnapshot(view.data)));
  assert.equal(decoded.meta.evidenceMaxAgeMs, 7 * DAY);
  const { evidenceMaxAgeMs, ...older } = view.meta;
  assert.equal(evidenceMaxAgeMs, 7 * DAY);
  assert.equal(readMeta(older).evidenceMaxAgeMs, 0);
  assert.throws(() => readMeta({ ...older, evidenceMaxAgeMs: -1 }), /evidenceMaxAgeMs/);
  assert.throws(() => readMeta({ ...older, evidenceMaxAgeMs: 1.5 }), /evidenceMaxAgeMs/);
});

test('a server with an age limit compacts once evidence it serves has expired, and the VPA is CLEARED', async () => {
  const t = await tempDataDir();
  let clock = TEST_SCORED_AT;
  const maxAgeMs = 10 * DAY;
  await ingest(t.dir, t.root, [
    evidence('ageing@ybl', 'https://old.example', { evidence_id: 'a1', captured_at: new Date(TEST_SCORED_AT - 9 * DAY).toISOString() }),
    evidence('fresh@ybl', 'https://new.example', { evidence_id: 'f1', captured_at: new Date(TEST_SCORED_AT - DAY).toISOString() }),
    evidence('expired@ybl', 'https://old.example', { evidence_id: 'x1', captured_at: new Date(TEST_SCORED_AT - 11 * DAY).toISOString() }),
  ]);
  const service = await SnapshotService.start({
    dataDir: t.dir,
    pollMs: 0,
    buildThreads: 1,
    scoredAt: () => clock,
    evidenceMaxAgeMs: maxAgeMs,
    compaction: { afterMs: 50 },
  });
  try {
    assert.equal(service.view.verdict('expired@ybl').status, 'CLEARED', 'expired before the first build');
    assert.equal(service.view.verdict('ageing@ybl').status, 'FLAGGED');
    // Late evidence that has already expired is stored but changes no answer.
    await ingest(t.dir, t.root, [evidence('late@ybl', 'https://old.example', { evidence_id: 'l1', captured_at: new Date(TEST_SCORED_AT - 20 * DAY).toISOString() })]);
    await service.refresh();
    assert.equal(service.view.verdict('late@ybl').status, 'CLEARED');
    assert.equal(service.delta.meta.evidenceItems, 1, 'the late item was read into the delta');

    // Past the policy's time, but nothing served has expired: no compaction.
    const first = service.current.meta.id;
    await new Promise((resolve) => setTimeout(resolve, 60));
    await service.refresh();
    assert.equal(service.compacting, false);
    assert.equal(service.current.meta.id, first);

    clock = TEST_SCORED_AT + 2 * DAY; // ageing@ybl's only item is now 11 days old
    await until('the policy compacts and the expired VPA is CLEARED', 10_000, async () => {
      await service.refresh();
      return service.view.verdict('ageing@ybl').status === 'CLEARED';
    });
    assert.notEqual(service.current.meta.id, first, 'a compaction took it back');
    assert.equal(service.view.verdict('fresh@ybl').status, 'FLAGGED');
  } finally {
    await service.close();
    await t.cleanup();
  }
});

test('a snapshot another process wrote with another age limit is not served: the server builds its own', async () => {
  const t = await tempDataDir();
  const maxAgeMs = 10 * DAY;
  await ingest(t.dir, t.root, [
    evidence('expired@ybl', 'https://old.example', { evidence_id: 'x1', captured_at: new Date(TEST_SCORED_AT - 11 * DAY).toISOString() }),
    evidence('fresh@ybl', 'https://new.example', { evidence_id: 'f1', captured_at: new Date(TEST_SCORED_AT - DAY).toISOString() }),
  ]);
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, evidenceMaxAgeMs: maxAgeMs });
  const other = new SnapshotBuilder({ threads: 1 });
  try {
    const statuses: string[] = [service.view.verdict('expired@ybl').status];
    service.onSwap((event) => statuses.push(new ServingView(event.next, event.delta).verdict('expired@ybl').status));
    // `upi-risk build` without the limit, beside the server.
    const foreign = await other.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT });
    assert.equal(foreign.meta.evidenceMaxAgeMs, 0);
    await service.refresh();
    assert.notEqual(service.current.meta.id, foreign.meta.id, 'not adopted');
    await until('the server has built its own, newer snapshot', 20_000, async () => {
      await service.refresh();
      return service.current.meta.id > foreign.meta.id;
    });
    assert.equal(service.current.meta.evidenceMaxAgeMs, maxAgeMs);
    assert.deepEqual([...new Set(statuses)], ['CLEARED'], 'the expired VPA was never served FLAGGED again');
  } finally {
    await other.close();
    await service.close();
    await t.cleanup();
  }
});
