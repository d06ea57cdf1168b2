import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SnapshotBuilder, type BuildReport } from '../../src/builder/snapshot-builder.js';
import type { DataDir } from '../../src/common/data-dir.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import type { SnapshotData } from '../../src/engine/snapshot-data.js';
import type { CorrectionState } from '../../src/evidence/corrections.js';
import { sameBuildDifferences as sameBuild } from '../fixtures/fake-snapshot.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT, type EvidenceInput } from '../helpers.js';

// A builder given a spillDir writes its carried records to files once their
// blocks are made, and reads them back for builds and corrections: what it
// builds and finds must be what a builder holding them in memory builds and
// finds, whenever the spill runs relative to ingests and builds.

const CORRECTIONS: CorrectionState = {
  sequence: 2,
  retracted: new Set(['r2-item3']),
  clearances: new Map([['r1.member2@ybl', { createdAt: TEST_SCORED_AT, urls: new Set(['https://t.me/gang3']) }]]),
};

function batch(round: number): EvidenceInput[] {
  return Array.from({ length: 10 + (round % 4) * 9 }, (_, i) =>
    evidence(`r${round}.member${i}@ybl`, `https://t.me/gang${(round + i) % 7}`, {
      evidence_id: `r${round}-item${i}`,
      captured_at: new Date(Date.UTC(2026, 0, 1 + round, i)).toISOString(),
      // Earlier VPAs seen again: their records are in older segments, spilled or not.
      ...(i % 5 === 4 && round > 0 ? { upi: `r${round - 1}.member${i}@ybl` } : {}),
    }),
  );
}

async function built(builder: SnapshotBuilder, dir: DataDir): Promise<{ report: BuildReport; data: SnapshotData }> {
  const report = await builder.build({ dataDir: dir, scoredAt: TEST_SCORED_AT });
  return { report, data: await readSnapshotFile(report.path) };
}

async function filesIn(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [] as string[])).sort();
}

test('builds over carried records in files build what builds over records in memory build, however ingests, builds and spills interleave', async () => {
  const t = await tempDataDir();
  const spillDir = join(t.dir.state, 'carry');
  // Small chunks and four partitions: files span chunks and the rounds outnumber MAX_SEGMENTS, so spilled segments get merged.
  const spilling = new SnapshotBuilder({ threads: 2, chunkBytes: 2048, indexCarry: true, spillDir, corrections: () => CORRECTIONS });
  const inMemory = new SnapshotBuilder({ threads: 2, chunkBytes: 2048, indexCarry: true, corrections: () => CORRECTIONS });
  try {
    for (let round = 0; round < 12; round++) {
      await ingest(t.dir, t.root, batch(round));
      // Some rounds absorb first (a gathering without a build), some wait for the spill, some race it.
      if (round % 3 === 1) await Promise.all([spilling.absorb(t.dir), inMemory.absorb(t.dir)]);
      if (round % 2 === 0) await spilling.whenSpilled();
      const mine = await built(spilling, t.dir);
      const reference = await built(inMemory, t.dir);
      assert.deepEqual(sameBuild(mine.data, reference.data), [], `round ${round}: the same snapshot`);
      assert.equal(mine.report.reusedChunks, reference.report.reusedChunks, `round ${round}: as incremental`);
    }
    await spilling.whenSpilled();
    assert.ok(spilling.spilledBytes > 0, 'records in files');
    assert.ok(spilling.carriedBytes < inMemory.carriedBytes, `less carried in memory: ${spilling.carriedBytes} against ${inMemory.carriedBytes}`);
    const files = await filesIn(spillDir);
    assert.ok(files.length > 0 && files.length <= 4 * 4 * 8, `one file per carried segment at most: ${files.length}`);

    // The same records found by VPA and by id, retracted ones marked.
    const asked = new Set(['r0.member4@ybl', 'r2.member3@ybl', 'r5.member1@ybl', 'r10.member14@ybl', 'r11.member0@ybl', 'nobody@ybl']);
    const mineFound = await spilling.retractAndRead(t.dir, ['r5-item1'], asked, { withIds: true });
    const referenceFound = await inMemory.retractAndRead(t.dir, ['r5-item1'], asked, { withIds: true });
    assert.deepEqual(mineFound, referenceFound);
    // Retracted before it was read, an item keeps no record; retracted after, its record is marked.
    assert.equal(mineFound.get('r2.member3@ybl'), undefined);
    assert.deepEqual(
      mineFound.get('r5.member1@ybl')!.map((item) => [item.id, item.retracted]),
      [['r5-item1', true]],
    );
    assert.ok(mineFound.get('r0.member4@ybl')!.length === 2, 'a VPA seen in two rounds: records of two segments');
    const ids = ['r0-item0', 'r5-item1', 'r7-item20', 'r11-item9', 'missing'];
    assert.deepEqual(await spilling.locateEvidence(t.dir, ids), await inMemory.locateEvidence(t.dir, ids));
  } finally {
    await spilling.close();
    await inMemory.close();
  }
  assert.deepEqual(await filesIn(spillDir), [], 'close removes the files');
  await t.cleanup();
});

test('files go with the segments the carry lets go of, and a lean build lets go of them all', async () => {
  const t = await tempDataDir();
  const spillDir = join(t.dir.state, 'carry');
  const builder = new SnapshotBuilder({ threads: 1, chunkBytes: 2048, indexCarry: true, spillDir });
  try {
    for (let round = 0; round < 10; round++) {
      await ingest(t.dir, t.root, batch(round));
      await builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT });
      await builder.whenSpilled();
      const held = await filesIn(spillDir);
      // Merged segments leave: never more files than the carry's segments (4 × 4 pairs, under MAX_SEGMENTS each).
      assert.ok(held.length <= 4 * 4 * 8, `round ${round}: ${held.length} files`);
      assert.equal(builder.spilledBytes > 0, held.length > 0);
    }
    await builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT, lean: true });
    await builder.whenSpilled();
    assert.deepEqual(await filesIn(spillDir), [], 'nothing carried after a lean build, nothing in files');
    assert.equal(builder.spilledBytes, 0);
  } finally {
    await builder.close();
    await t.cleanup();
  }
});

test('a spill directory that cannot be written leaves the records in memory, says so, and builds go on', async () => {
  const t = await tempDataDir();
  // A file where a directory above it should be.
  await mkdir(t.dir.state, { recursive: true });
  await writeFile(join(t.dir.state, 'blocker'), 'not a directory');
  const spillDir = join(t.dir.state, 'blocker', 'carry');
  const failures: unknown[] = [];
  const builder = new SnapshotBuilder({ threads: 1, chunkBytes: 2048, indexCarry: true, spillDir, onSpillFailed: (error) => failures.push(error) });
  const reference = new SnapshotBuilder({ threads: 1, chunkBytes: 2048 });
  try {
    for (let round = 0; round < 3; round++) {
      await ingest(t.dir, t.root, batch(round));
      const mine = await built(builder, t.dir);
      await builder.whenSpilled();
      assert.deepEqual(sameBuild(mine.data, (await built(reference, t.dir)).data), [], `round ${round}`);
    }
    assert.ok(failures.length > 0, 'the failure is reported');
    assert.equal(builder.spilledBytes, 0);
    assert.ok(builder.carriedBytes > 0, 'the records stay in memory');
  } finally {
    await builder.close();
    await reference.close();
    await t.cleanup();
  }
});

test('a builder that keeps no blocks (a fleet builder) spills its records too, and reads them back whole when asked', async () => {
  const t = await tempDataDir();
  const spillDir = join(t.dir.state, 'carry');
  const builder = new SnapshotBuilder({ threads: 1, chunkBytes: 2048, spillDir });
  const reference = new SnapshotBuilder({ threads: 1, chunkBytes: 2048 });
  try {
    for (let round = 0; round < 4; round++) {
      await ingest(t.dir, t.root, batch(round));
      const mine = await built(builder, t.dir);
      await builder.whenSpilled();
      assert.deepEqual(sameBuild(mine.data, (await built(reference, t.dir)).data), [], `round ${round}`);
    }
    assert.ok(builder.spilledBytes > 0);
    assert.ok((await filesIn(spillDir)).length > 0);
    const asked = new Set(['r0.member4@ybl', 'r3.member0@ybl']);
    assert.deepEqual(await builder.retractAndRead(t.dir, [], asked), await reference.retractAndRead(t.dir, [], asked));
  } finally {
    await builder.close();
    await reference.close();
  }
  assert.deepEqual(await filesIn(spillDir), []);
  await t.cleanup();
});
