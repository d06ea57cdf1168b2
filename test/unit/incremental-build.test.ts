import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm, writeFile, readFile, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { SnapshotBuilder, type BuildReport } from '../../src/builder/snapshot-builder.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import type { SnapshotData } from '../../src/engine/snapshot-data.js';
import type { DataDir } from '../../src/common/data-dir.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { evidence, ingest, ndjson, tempDataDir, TEST_SCORED_AT, until, type EvidenceInput } from '../helpers.js';
import { sameBuildDifferences as sameBuild } from '../fixtures/fake-snapshot.js';

// A builder keeps its deduplicated records, so a build after an ingest
// parses and deduplicates only the new files (src/view/build/carry.ts).
// Whatever it reuses, it must build the snapshot a build reading every file
// builds, and fall back to reading every file when the old ones changed.

async function build(builder: SnapshotBuilder, dir: DataDir, parseCache = true): Promise<{ report: BuildReport; data: SnapshotData }> {
  const report = await builder.build({ dataDir: dir, scoredAt: TEST_SCORED_AT, parseCache });
  return { report, data: await readSnapshotFile(report.path) };
}

/** A build that reads every file, from its JSON, by a builder that keeps nothing. */
async function buildFromScratch(dir: DataDir): Promise<{ report: BuildReport; data: SnapshotData }> {
  const builder = new SnapshotBuilder({ threads: 2, chunkBytes: 2048, incremental: false });
  try {
    const report = await builder.build({ dataDir: dir, scoredAt: TEST_SCORED_AT, parseCache: false });
    return { report, data: await readSnapshotFile(report.path) };
  } finally {
    await builder.close();
  }
}

/** That `data` is the snapshot a build reading every file of `dir` makes. */
async function assertAsFromScratch(dir: DataDir, data: SnapshotData): Promise<void> {
  assert.deepEqual(sameBuild(data, (await buildFromScratch(dir)).data), []);
}

/** A batch of evidence for round `round`: gangs sharing channels, repeats of earlier VPAs, and resent or reused evidence ids. */
function batch(round: number, earlier: readonly EvidenceInput[]): EvidenceInput[] {
  const items: EvidenceInput[] = [];
  for (let i = 0; i < 12 + (round % 5) * 7; i++) {
    const gang = (round * 3 + i) % 9;
    items.push(
      evidence(`r${round}.member${i}@ybl`, `https://t.me/gang${gang}`, {
        source_category: i % 3 === 0 ? 'telegram' : 'gambling',
        captured_at: new Date(Date.UTC(2026, 0, 1 + round, i)).toISOString(),
        screenshot_available: i % 4 === 0,
      }),
    );
  }
  // An account seen again, later and elsewhere.
  if (round > 0) items.push(evidence(`r${round - 1}.member1@ybl`, `https://bet${round}.example/pay`, { risk_category: 'mule' }));
  // The same evidence id sent again, unchanged and naming another VPA: both must change nothing.
  const resent = earlier[(round * 7) % Math.max(1, earlier.length)];
  if (resent !== undefined) {
    items.push({ ...resent });
    items.push({ ...resent, upi: `reused${round}@paytm`, url: 'https://phish.example/kyc', source_category: 'phishing' });
  }
  return items;
}

test('builds after ingests reuse the earlier files and build what a build reading every file builds', async () => {
  const t = await tempDataDir();
  // Small chunks and four partitions: each file spans several chunks, and the
  // rounds outnumber MAX_SEGMENTS, so carried segments are merged on the way.
  const builder = new SnapshotBuilder({ threads: 2, chunkBytes: 2048 });
  try {
    const all: EvidenceInput[] = [];
    let previous: BuildReport | undefined;
    for (let round = 0; round < 14; round++) {
      const items = batch(round, all);
      all.push(...items);
      await ingest(t.dir, t.root, items);
      const incremental = await build(builder, t.dir);
      const scratch = await buildFromScratch(t.dir);
      assert.deepEqual(sameBuild(incremental.data, scratch.data), [], `round ${round}: same snapshot`);
      assert.equal(incremental.report.chunks, scratch.report.chunks);
      assert.equal(incremental.report.reusedChunks, previous?.chunks ?? 0, `round ${round}: every earlier chunk reused`);
      assert.equal(incremental.report.duplicateEvidence, scratch.report.duplicateEvidence);
      assert.equal(incremental.report.duplicateEvidence, 2 * round, 'two resent ids a round after the first');
      assert.ok(incremental.report.carriedBytes > (previous?.carriedBytes ?? 0), 'the carried records grow with the evidence');
      previous = incremental.report;
    }
    // Nothing new: everything reused, the same snapshot again.
    const again = await build(builder, t.dir);
    assert.equal(again.report.reusedChunks, again.report.chunks);
    assert.equal(again.report.cachedChunks, 0, 'no chunk read, from the cache or otherwise');
    await assertAsFromScratch(t.dir, again.data);
  } finally {
    await builder.close();
    await t.cleanup();
  }
});

test('a build reads every file again when one it read is gone, changed, or a new one sorts before it', async () => {
  const t = await tempDataDir();
  const builder = new SnapshotBuilder({ threads: 2, chunkBytes: 2048 });
  try {
    await ingest(t.dir, t.root, batch(0, []));
    const second = await ingest(t.dir, t.root, batch(1, []));
    await ingest(t.dir, t.root, batch(2, []));
    await build(builder, t.dir);

    // A file put in the place of one already read (same name and size, other content).
    const replaced = join(t.dir.evidence, second.storedAs as string);
    const text = await readFile(replaced, 'utf8');
    await writeFile(replaced, text.replaceAll('r1.member', 'r1.xember'));
    await utimes(replaced, new Date(), new Date(Date.now() + 5000));
    // The parse cache knows chunks by file name and range only (evidence files never change), so it is left out here.
    const afterReplace = await build(builder, t.dir, false);
    assert.equal(afterReplace.report.reusedChunks, 0);
    await assertAsFromScratch(t.dir, afterReplace.data);

    // A file removed.
    await rm(replaced);
    const afterRemove = await build(builder, t.dir);
    assert.equal(afterRemove.report.reusedChunks, 0);
    await assertAsFromScratch(t.dir, afterRemove.data);

    // A file whose name sorts before those read (stored by a slower ingest that started earlier).
    await writeFile(join(t.dir.evidence, '0000000000001-0000beef.ndjson'), ndjson(batch(3, [])));
    const afterEarly = await build(builder, t.dir);
    assert.equal(afterEarly.report.reusedChunks, 0);
    await assertAsFromScratch(t.dir, afterEarly.data);

    // And then, with the files as they are, it reuses again.
    await ingest(t.dir, t.root, batch(4, []));
    const next = await build(builder, t.dir);
    assert.equal(next.report.reusedChunks, afterEarly.report.chunks);
    await assertAsFromScratch(t.dir, next.data);
  } finally {
    await builder.close();
    await t.cleanup();
  }
});

test('a build that fails to assemble keeps the records it read: the next one reads no file again and succeeds', async () => {
  const t = await tempDataDir();
  const builder = new SnapshotBuilder({ threads: 2, chunkBytes: 2048 });
  try {
    await ingest(t.dir, t.root, batch(0, []));
    const first = await build(builder, t.dir);
    assert.equal(builder.carriedBytes, first.report.carriedBytes);
    await ingest(t.dir, t.root, batch(1, []));
    // Damaged cluster id state fails the assemble phase, after dedup has used the carried id tables.
    const saved = await readFile(t.dir.clusterIds);
    await writeFile(t.dir.clusterIds, saved.subarray(0, 10));
    await assert.rejects(build(builder, t.dir));
    // Reading and deduplicating succeeded: what they kept does not depend on what failed after.
    assert.ok(builder.carriedBytes > first.report.carriedBytes, 'the new file is carried');
    await writeFile(t.dir.clusterIds, saved);

    const recovered = await build(builder, t.dir);
    assert.equal(recovered.report.reusedChunks, recovered.report.chunks);
    await assertAsFromScratch(t.dir, recovered.data);
  } finally {
    await builder.close();
    await t.cleanup();
  }
});

test('a builder made with incremental: false reads every file on every build', async () => {
  const t = await tempDataDir();
  const builder = new SnapshotBuilder({ threads: 1, chunkBytes: 2048, incremental: false });
  try {
    await ingest(t.dir, t.root, batch(0, []));
    const first = await build(builder, t.dir);
    await ingest(t.dir, t.root, batch(1, []));
    const second = await build(builder, t.dir);
    assert.equal(second.report.reusedChunks, 0);
    assert.equal(second.report.carriedBytes, 0);
    // The first file's chunks come back from the parse cache, the second's are parsed.
    assert.equal(second.report.cachedChunks, first.report.chunks);
    assert.ok(second.report.chunks > first.report.chunks);
  } finally {
    await builder.close();
    await t.cleanup();
  }
});

test('prime reads the stored evidence ahead, so the next build reads only what was stored after', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, batch(0, []));
    await ingest(t.dir, t.root, batch(1, []));
    const builder = new SnapshotBuilder({ threads: 2, chunkBytes: 2048 });
    let before: BuildReport;
    try {
      before = (await build(builder, t.dir)).report;
    } finally {
      await builder.close();
    }

    // A new process: nothing carried until it primes.
    const primed = new SnapshotBuilder({ threads: 2, chunkBytes: 2048 });
    try {
      assert.equal(primed.carriedBytes, 0);
      await primed.prime(t.dir);
      assert.equal(primed.carriedBytes, before.carriedBytes, 'priming carries what the build that wrote the snapshot carried');
      await ingest(t.dir, t.root, batch(2, []));
      const after = await build(primed, t.dir);
      assert.equal(after.report.reusedChunks, before.chunks);
      assert.equal(primed.carriedBytes, after.report.carriedBytes);
      await assertAsFromScratch(t.dir, after.data);
    } finally {
      await primed.close();
    }
  } finally {
    await t.cleanup();
  }
});

test('a service started from a snapshot on disk reads only the new file at its first ingest, and compacts without reading any', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, batch(0, []));
  const first = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 2, scoredAt: () => TEST_SCORED_AT });
  const built = first.lastBuild!;
  await first.close();

  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 2, scoredAt: () => TEST_SCORED_AT });
  try {
    assert.equal(service.lastBuild, null, 'started from the snapshot, not a build');
    // The evidence is read in the background after start; what is carried shows once it is, in memory
    // or, once its records are written out, in files (spilled-segments.ts).
    const carried = () => service.carriedBytes + service.carriedDiskBytes;
    await until('the evidence is read ahead and its records written out', 10_000, () => carried() === built.carriedBytes && service.carriedDiskBytes > 0);
    await ingest(t.dir, t.root, [evidence('late.arrival@okicici', 'https://t.me/gang0')]);
    await service.refresh();
    assert.equal(service.view.verdict('late.arrival@okicici').status, 'FLAGGED');
    assert.ok(carried() > built.carriedBytes, 'the new file is carried');
    await service.compact();
    assert.equal(service.lastBuild!.reusedChunks, built.chunks + 1);
    assert.equal(service.lastBuild!.chunks, built.chunks + 1);
    await until('what the compaction carried is written out', 10_000, () => carried() === service.lastBuild!.carriedBytes);
    assert.equal(service.current.verdict('late.arrival@okicici').status, 'FLAGGED');
  } finally {
    await service.close();
    await t.cleanup();
  }
});
