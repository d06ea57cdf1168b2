import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NOT_FOUND } from '../../src/common/brand.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { listSnapshots } from '../../src/engine/snapshot-files.js';
import type { ServingView } from '../../src/engine/serving-view.js';
import { TEST_SCORED_AT, buildInProcess, evidence, ingest, tempDataDir, type EvidenceInput } from '../helpers.js';
import { settledFields, urlsOf } from '../delta-fixtures.js';

/** A service over a fresh data directory, refreshed by hand (no polling), scoring at the tests' time. */
async function startService(first: readonly EvidenceInput[], compaction?: { vpas?: number; afterMs?: number }) {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, first);
  const service = await SnapshotService.start({
    dataDir: t.dir,
    pollMs: 0,
    buildThreads: 2,
    scoredAt: () => TEST_SCORED_AT,
    ...(compaction === undefined ? {} : { compaction }),
  });
  return {
    service,
    ingest: (items: readonly EvidenceInput[]) => ingest(t.dir, t.root, items),
    dir: t.dir,
    close: async () => {
      await service.close();
      await t.cleanup();
    },
  };
}

test('evidence ingested is served from the delta once refresh returns, without a build', async () => {
  const s = await startService([evidence('known@ybl', 'https://a.example', { evidence_id: 'k1' })]);
  try {
    const snapshotsBefore = await listSnapshots(s.dir);
    await s.ingest([evidence('mule@ybl', 'https://b.example', { evidence_id: 'm1' }), evidence('known@ybl', 'https://c.example', { evidence_id: 'k2' })]);
    await s.service.refresh();
    const view = s.service.view;
    assert.equal(view.verdict('mule@ybl').status, 'FLAGGED');
    assert.equal(view.verdict('known@ybl').evidence_count, 2);
    assert.equal(view.version, `${s.service.current.meta.id}+1`);
    assert.equal(s.service.delta.meta.vpaCount, 2);
    assert.equal(s.service.delta.meta.evidenceItems, 2);
    assert.deepEqual(await listSnapshots(s.dir), snapshotsBefore, 'no snapshot was built');
  } finally {
    await s.close();
  }
});

test('an evidence id ingested long before, files and a compaction ago, changes nothing', async () => {
  const s = await startService([evidence('first@ybl', 'https://a.example', { evidence_id: 'old-1' })]);
  try {
    for (let i = 0; i < 3; i++) {
      await s.ingest([evidence(`filler${i}@ybl`, 'https://f.example', { evidence_id: `f-${i}` })]);
      await s.service.refresh();
    }
    await s.service.compact();
    await s.ingest([
      evidence('first@ybl', 'https://z.example', { evidence_id: 'old-1' }),
      evidence('someone@ybl', 'https://z.example', { evidence_id: 'f-1' }),
    ]);
    await s.service.refresh();
    const view = s.service.view;
    assert.equal(view.verdict('first@ybl').evidence_count, 1);
    assert.equal(view.verdict('someone@ybl').status, 'CLEARED');
    assert.equal(s.service.delta.meta.evidenceItems, 0);
  } finally {
    await s.close();
  }
});

test('a compaction swaps snapshot and delta together; nothing served goes backwards and every field equals a full build', async () => {
  const all: EvidenceInput[] = [
    evidence('g1@ybl', 'https://gang.example', { evidence_id: 'e1' }),
    evidence('g2@ybl', 'https://gang.example', { evidence_id: 'e2' }),
  ];
  const s = await startService(all);
  try {
    const batches = [
      [evidence('g3@ybl', 'https://gang.example', { evidence_id: 'e3' }), evidence('g1@ybl', 'https://t.me/x', { evidence_id: 'e4', source_category: 'telegram' })],
      [evidence('solo@ybl', 'https://solo.example', { evidence_id: 'e5', screenshot_available: true })],
    ];
    for (const batch of batches) {
      await s.ingest(batch);
      all.push(...batch);
      await s.service.refresh();
    }
    const before: ServingView = s.service.view;
    const baseUrls = urlsOf(before.base);
    // Held across the compaction, as a request in flight holds it: it still answers as it did.
    const held = before.verdict('g3@ybl');
    await s.service.compact();
    const after = s.service.view;
    assert.notEqual(after.base.meta.id, before.base.meta.id);
    assert.equal(after.delta, null, 'the compacted snapshot holds everything');
    assert.deepEqual(before.verdict('g3@ybl'), held);
    const full = buildInProcess(all);
    for (const upi of ['g1@ybl', 'g2@ybl', 'g3@ybl', 'solo@ybl', 'none@ybl']) {
      const was = before.verdict(upi);
      const now = after.verdict(upi);
      const rebuilt = full.verdict(upi);
      assert.deepEqual(settledFields(was, baseUrls), settledFields(rebuilt, baseUrls), upi);
      assert.deepEqual({ ...now, cluster_id: null }, { ...rebuilt, cluster_id: null }, upi);
      if (was.status === 'FLAGGED') assert.ok(now.confidence! >= was.confidence!, `${upi}: ${was.confidence} then ${now.confidence}`);
    }
    // The gang has its third member now.
    assert.equal(after.verdict('g3@ybl').cluster_size, 3);
  } finally {
    await s.close();
  }
});

test('evidence that arrives while a compaction builds stays in the delta after the swap', async () => {
  const s = await startService([evidence('a@ybl', 'https://a.example', { evidence_id: 'a1' })]);
  try {
    await s.ingest([evidence('b@ybl', 'https://b.example', { evidence_id: 'b1' })]);
    await s.service.refresh();
    const compaction = s.service.compact();
    await s.ingest([evidence('c@ybl', 'https://c.example', { evidence_id: 'c1' })]);
    await s.service.refresh();
    assert.equal(s.service.view.verdict('c@ybl').status, 'FLAGGED');
    await compaction;
    const view = s.service.view;
    for (const upi of ['a@ybl', 'b@ybl', 'c@ybl']) assert.equal(view.verdict(upi).status, 'FLAGGED', upi);
    // c arrived either before the build read the files (then the snapshot has it) or after (then the delta does).
    const inSnapshot = view.base.lookup('c@ybl') !== NOT_FOUND;
    assert.ok(inSnapshot || (view.delta !== null && view.delta.lookup('c@ybl') !== NOT_FOUND));
  } finally {
    await s.close();
  }
});

test('the compaction policy starts a build once the delta holds more VPAs than allowed', async () => {
  const s = await startService([evidence('a@ybl', 'https://a.example', { evidence_id: 'a1' })], { vpas: 2 });
  try {
    const first = s.service.current.meta.id;
    await s.ingest([evidence('b@ybl', 'https://b.example', { evidence_id: 'b1' }), evidence('c@ybl', 'https://b.example', { evidence_id: 'c1' })]);
    await s.service.refresh();
    assert.equal(s.service.current.meta.id, first, 'two VPAs are within the policy');
    await s.ingest([evidence('d@ybl', 'https://d.example', { evidence_id: 'd1' })]);
    await s.service.refresh();
    // refresh() starts the compaction and returns; compact() joins it.
    await s.service.compact();
    assert.notEqual(s.service.current.meta.id, first);
    assert.equal(s.service.delta.meta.vpaCount, 0);
  } finally {
    await s.close();
  }
});

test('a server started on a snapshot older than the evidence serves the rest from the delta at once', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [evidence('a@ybl', 'https://a.example', { evidence_id: 'a1' })]);
    const first = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT });
    await first.close();
    await ingest(t.dir, t.root, [evidence('late@ybl', 'https://l.example', { evidence_id: 'l1' })]);
    const again = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT });
    try {
      assert.equal(again.view.verdict('late@ybl').status, 'FLAGGED');
      assert.equal(again.delta.meta.vpaCount, 1);
    } finally {
      await again.close();
    }
  } finally {
    await t.cleanup();
  }
});
