import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, writeFile, readFile, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import type { DataDir } from '../../src/common/data-dir.js';
import { parseCacheDir } from '../../src/builder/parse-cache.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT } from '../helpers.js';
import { sameBuildDifferences as sameBuild } from '../fixtures/fake-snapshot.js';

const items = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => evidence(`${prefix}${i}@ybl`, `https://t.me/${prefix}${i % 7}`));

/** A builder that reads every file on every build, in small chunks so that a file spans several. */
const cacheBuilder = (threads = 1) => new SnapshotBuilder({ threads, chunkBytes: 4096, incremental: false });

/** Run `body` with a cache builder on a temporary data folder, both cleaned up after. */
async function withCacheBuilder(threads: number, body: (builder: SnapshotBuilder, dir: DataDir, root: string) => Promise<void>) {
  const { dir, root, cleanup } = await tempDataDir();
  const builder = cacheBuilder(threads);
  try {
    await body(builder, dir, root);
  } finally {
    await builder.close();
    await cleanup();
  }
}

async function build(builder: SnapshotBuilder, dir: DataDir, parseCache = true) {
  const report = await builder.build({ dataDir: dir, scoredAt: TEST_SCORED_AT, parseCache });
  return { report, data: await readSnapshotFile(report.path) };
}

test('a rebuild reads parsed chunks back from the cache and builds the same snapshot as from JSON', async () => {
  // Every build reads every file (incremental-build.test.ts covers the other way).
  await withCacheBuilder(2, async (builder, dir, root) => {
    await ingest(dir, root, items('alpha', 120));
    const first = await build(builder, dir);
    assert.equal(first.report.cachedChunks, 0);
    assert.ok(first.report.chunks > 2, `several chunks (${first.report.chunks})`);

    // One line: most of its chunk's partitions are empty, and must be cached too.
    await ingest(dir, root, items('beta', 1));
    const second = await build(builder, dir);
    assert.equal(second.report.cachedChunks, first.report.chunks, 'only the new file is parsed');
    const third = await build(builder, dir);
    assert.equal(third.report.cachedChunks, third.report.chunks, 'every chunk is cached once parsed');
    const fromJson = await build(builder, dir, false);
    assert.equal(fromJson.report.cachedChunks, 0);
    assert.deepEqual(sameBuild(second.data, fromJson.data), []);
    assert.equal(second.data.meta.vpaCount, 121);
  });
});

test('a damaged cache file is ignored and its chunk parsed again', async () => {
  await withCacheBuilder(1, async (builder, dir, root) => {
    await ingest(dir, root, items('gamma', 80));
    const first = await build(builder, dir);
    const cacheDir = parseCacheDir(dir.state);
    const files = (await readdir(cacheDir)).filter((f) => !f.startsWith('.tmp-'));
    assert.equal(files.length, first.report.chunks);
    // One flipped byte in the records, one file cut short.
    const flipped = join(cacheDir, files[0]!);
    const bytes = await readFile(flipped);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
    await writeFile(flipped, bytes);
    const cut = join(cacheDir, files[1] ?? files[0]!);
    await writeFile(cut, (await readFile(cut)).subarray(0, 20));

    const again = await build(builder, dir);
    assert.equal(again.report.cachedChunks, first.report.chunks - (files.length > 1 ? 2 : 1));
    assert.deepEqual(sameBuild(again.data, first.data), []);
  });
});

test('a cached chunk of an evidence file replaced under the same name is not used', async () => {
  await withCacheBuilder(1, async (builder, dir, root) => {
    await ingest(dir, root, items('delta', 60));
    const first = await build(builder, dir);
    assert.equal(first.report.cachedChunks, 0);
    // Same name, same size, new content: only the modification time tells the versions apart.
    const [name] = await readdir(dir.evidence);
    const path = join(dir.evidence, name!);
    const before = await stat(path);
    await writeFile(path, (await readFile(path, 'utf8')).replaceAll('delta', 'omega'));
    await utimes(path, before.atime, new Date(before.mtimeMs + 5000));
    assert.equal((await stat(path)).size, before.size);

    const again = await build(builder, dir);
    assert.equal(again.report.cachedChunks, 0, 'every chunk of the replaced file is parsed again');
    assert.equal(again.data.meta.vpaCount, 60);
    const fromJson = await build(builder, dir, false);
    assert.deepEqual(sameBuild(again.data, fromJson.data), []);
    assert.notDeepEqual(sameBuild(again.data, first.data), [], 'the new content is served, not the cached old one');
  });
});

test('cache files of another format version are removed at the first build; the current ones are kept', async () => {
  await withCacheBuilder(1, async (builder, dir, root) => {
    await ingest(dir, root, items('epsilon', 30));
    const first = await build(builder, dir);
    const cacheDir = parseCacheDir(dir.state);
    const current = (await readdir(cacheDir)).sort();
    assert.equal(current.length, first.report.chunks);
    await writeFile(join(cacheDir, 'batch-old.ndjson.0-4096.c0.p1.v1'), 'left by an earlier release');

    // A new builder (a restarted server) clears them once; its chunks still come from the cache.
    const restarted = cacheBuilder();
    try {
      const again = await build(restarted, dir);
      assert.equal(again.report.cachedChunks, first.report.chunks);
    } finally {
      await restarted.close();
    }
    assert.deepEqual((await readdir(cacheDir)).sort(), current);
  });
});
