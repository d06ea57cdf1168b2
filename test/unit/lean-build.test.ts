import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SnapshotBuilder, type BuildReport } from '../../src/builder/snapshot-builder.js';
import type { DataDir } from '../../src/common/data-dir.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import type { SnapshotData } from '../../src/engine/snapshot-data.js';
import type { CorrectionState } from '../../src/evidence/corrections.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { sameBuildDifferences as sameBuild } from '../fixtures/fake-snapshot.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT, until, type EvidenceInput } from '../helpers.js';

// A lean build (BuildOptions.lean, chosen under a memory limit) lets go of
// the carry and reads every file again: it must build what any other
// build builds, corrections included, and leave nothing carried.

const CORRECTIONS: CorrectionState = {
  sequence: 3,
  retracted: new Set(['r1-item2']),
  clearances: new Map([['r0.member4@ybl', { createdAt: TEST_SCORED_AT, urls: new Set(['https://t.me/gang4']) }]]),
};

function batch(round: number): EvidenceInput[] {
  return Array.from({ length: 15 }, (_, i) =>
    evidence(`r${round}.member${i}@ybl`, `https://t.me/gang${(round + i) % 6}`, {
      evidence_id: `r${round}-item${i}`,
      captured_at: new Date(Date.UTC(2026, 0, 1 + round, i)).toISOString(),
    }),
  );
}

async function built(builder: SnapshotBuilder, dir: DataDir, lean: boolean): Promise<{ report: BuildReport; data: SnapshotData }> {
  const report = await builder.build({ dataDir: dir, scoredAt: TEST_SCORED_AT, lean });
  return { report, data: await readSnapshotFile(report.path) };
}

test('a lean build reads every file, builds what a build from scratch builds under the same corrections, and carries nothing', async () => {
  const t = await tempDataDir();
  const builder = new SnapshotBuilder({ threads: 2, chunkBytes: 2048, corrections: () => CORRECTIONS });
  const scratch = new SnapshotBuilder({ threads: 2, chunkBytes: 2048, incremental: false, corrections: () => CORRECTIONS });
  try {
    for (let round = 0; round < 6; round++) {
      await ingest(t.dir, t.root, batch(round));
      const lean = round % 2 === 1;
      const mine = await built(builder, t.dir, lean);
      const reference = await built(scratch, t.dir, false);
      assert.deepEqual(sameBuild(mine.data, reference.data), [], `round ${round}: the same snapshot`);
      if (lean) {
        assert.equal(mine.report.reusedChunks, 0, `round ${round}: every chunk read again`);
        assert.equal(mine.report.carriedBytes, 0);
        assert.equal(builder.carriedBytes, 0, `round ${round}: nothing carried after a lean build`);
      } else {
        assert.ok(builder.carriedBytes > 0, `round ${round}: a usual build carries its records`);
      }
    }
    // Read again after a lean build, the carry serves the next usual build.
    await ingest(t.dir, t.root, batch(6));
    await builder.prime(t.dir);
    const primedChunks = (await built(builder, t.dir, false)).report.reusedChunks;
    assert.ok(primedChunks > 0, 'the usual build after a prime reuses what it read');
  } finally {
    await builder.close();
    await scratch.close();
    await t.cleanup();
  }
});

test('a server under a memory limit its compactions would come near compacts lean, serves the same answers and reads its evidence again after', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, batch(0));
  // A limit no usual build fits under: every compaction with a carry runs lean.
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, memoryLimitBytes: 64 * 1024 * 1024 });
  try {
    await until('the evidence is read ahead', 20_000, () => service.carriedBytes > 0);
    await ingest(t.dir, t.root, batch(1));
    await service.refresh();
    await until('the new evidence is in the delta', 20_000, () => service.view.verdict('r1.member3@ybl').status === 'FLAGGED');
    const before = service.current.meta.id;
    await service.compact('test');
    assert.notEqual(service.current.meta.id, before, 'compacted');
    assert.equal(service.leanBuilds, 1, 'lean');
    assert.equal(service.view.verdict('r1.member3@ybl').status, 'FLAGGED', 'the delta folded into the snapshot');
    assert.equal(service.view.verdict('r0.member3@ybl').evidence_count, 1);
    assert.equal(service.current.meta.vpaCount, 30);
    await until('the evidence is read again after the lean build', 20_000, () => service.carriedBytes > 0);
    // Ingests after it are merged as before.
    await ingest(t.dir, t.root, batch(2));
    await service.refresh();
    await until('later evidence is served', 20_000, () => service.view.verdict('r2.member0@ybl').status === 'FLAGGED');
  } finally {
    await service.close();
    await t.cleanup();
  }
});

test('without a limit, or under one a compaction fits, no build is lean', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, batch(0));
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, memoryLimitBytes: 1024 ** 4 });
  try {
    await until('the evidence is read ahead', 20_000, () => service.carriedBytes > 0);
    await ingest(t.dir, t.root, batch(1));
    await service.refresh();
    await service.compact('test');
    assert.equal(service.leanBuilds, 0);
    assert.ok(service.carriedBytes > 0, 'the carry is kept');
  } finally {
    await service.close();
    await t.cleanup();
  }
});
