import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../../src/common/logger.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { listSnapshots } from '../../src/engine/snapshot-files.js';
import { frameSnapshotBody } from '../../src/engine/snapshot-format/encode.js';
import { SNAPSHOT_FORMAT_VERSION, SNAPSHOT_HEADER_LENGTH } from '../../src/engine/snapshot-format/format.js';
import { tempDataDir, ingest, evidence, buildAndLoad, until, TEST_SCORED_AT } from '../helpers.js';

test('a compaction builds, loads and swaps in a snapshot; a request holding the old view finishes on it', async () => {
  const t = await tempDataDir();
  const swaps: string[] = [];
  await ingest(t.dir, t.root, [evidence('old@ybl', 'https://u.example')]);
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 2, scoredAt: () => TEST_SCORED_AT });
  try {
    service.onSwap((e) => swaps.push(e.reason));
    const inFlight = service.view;
    assert.equal(inFlight.verdict('new@ybl').status, 'CLEARED');

    await ingest(t.dir, t.root, [evidence('new@ybl', 'https://v.example')]);
    await service.refresh();
    // Served from the delta: no build, no swap.
    assert.deepEqual(swaps, []);
    assert.equal(service.view.verdict('new@ybl').status, 'FLAGGED');
    assert.equal(inFlight.verdict('new@ybl').status, 'CLEARED');
    await service.compact();
    assert.deepEqual(swaps, ['rebuild']);
    assert.equal(service.current.verdict('new@ybl').status, 'FLAGGED');
    assert.equal(service.current.verdict('old@ybl').status, 'FLAGGED');
    assert.notEqual(service.current.meta.id, inFlight.base.meta.id);
    // The reference taken before the swap still answers from its own snapshot.
    assert.equal(inFlight.verdict('new@ybl').status, 'CLEARED');

    // Nothing new: no build, no swap.
    await service.refresh();
    assert.deepEqual(swaps, ['rebuild']);
  } finally {
    await service.close();
    await t.cleanup();
  }
});

test('the service starts from the newest valid snapshot without rebuilding, skipping corrupt and truncated ones', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('kept@ybl', 'https://u.example')]);
  const first = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1 });
  const goodId = first.current.meta.id;
  await first.close();
  const [good] = await listSnapshots(t.dir);
  // Newer-named files that are not valid snapshots: corrupt body, truncated copy, garbage.
  const bytes = await readFile(good!);
  const corrupt = Buffer.from(bytes);
  corrupt[corrupt.length - 10]! ^= 0xff;
  await writeFile(join(t.dir.snapshots, 'snapshot-29991231T000000000Z-aaaaaa.upisnap'), corrupt);
  await writeFile(join(t.dir.snapshots, 'snapshot-29991231T000000001Z-bbbbbb.upisnap'), bytes.subarray(0, bytes.length >> 1));
  await writeFile(join(t.dir.snapshots, 'snapshot-29991231T000000002Z-cccccc.upisnap'), 'not a snapshot');
  const refused: string[] = [];
  const service = await SnapshotService.start({
    dataDir: t.dir,
    pollMs: 0,
    buildThreads: 1,
    logger: { ...silentLogger, error: (fields) => refused.push(String(fields.code)) },
  });
  try {
    assert.equal(service.current.meta.id, goodId, 'the valid snapshot is served, not rebuilt');
    assert.equal(service.lastBuild, null);
    assert.deepEqual(refused.sort(), ['ERR_SNAPSHOT_CHECKSUM', 'ERR_SNAPSHOT_FORMAT', 'ERR_SNAPSHOT_TRUNCATED']);
    assert.equal(service.current.verdict('kept@ybl').status, 'FLAGGED');

    // A corrupt snapshot appearing later is refused and the current one keeps serving.
    await writeFile(join(t.dir.snapshots, 'snapshot-29991231T000000003Z-dddddd.upisnap'), corrupt);
    await service.refresh();
    assert.equal(service.current.meta.id, goodId);
    assert.equal(service.current.verdict('kept@ybl').status, 'FLAGGED');
  } finally {
    await service.close();
    await t.cleanup();
  }
});

test('a service that finds only snapshots of an older format refuses them and rebuilds from the evidence', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('kept@ybl', 'https://u.example')]);
  const first = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1 });
  const oldId = first.current.meta.id;
  await first.close();
  const [path] = await listSnapshots(t.dir);
  // The snapshot as a file of the format before this one (version 3, without the columns for merging evidence).
  const bytes = await readFile(path!);
  await writeFile(path!, Buffer.concat(frameSnapshotBody(bytes.subarray(SNAPSHOT_HEADER_LENGTH), SNAPSHOT_FORMAT_VERSION - 1)));
  const refused: string[] = [];
  const service = await SnapshotService.start({
    dataDir: t.dir,
    pollMs: 0,
    buildThreads: 1,
    logger: { ...silentLogger, error: (fields) => refused.push(String(fields.code)) },
  });
  try {
    assert.deepEqual(refused, ['ERR_SNAPSHOT_VERSION']);
    assert.notEqual(service.lastBuild, null, 'rebuilt from the evidence');
    assert.notEqual(service.current.meta.id, oldId);
    assert.equal(service.current.verdict('kept@ybl').status, 'FLAGGED');
    const rebuilt = await readFile(service.lastBuild!.path);
    assert.equal(rebuilt.readUInt32LE(8), SNAPSHOT_FORMAT_VERSION);
  } finally {
    await service.close();
    await t.cleanup();
  }
});

test('an empty data directory starts with an empty snapshot that clears everything', async () => {
  const t = await tempDataDir();
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1 });
  try {
    assert.equal(service.current.meta.vpaCount, 0);
    assert.equal(service.current.verdict('any@ybl').status, 'CLEARED');
    assert.equal(service.current.cluster('MC-1'), null);
  } finally {
    await service.close();
    await t.cleanup();
  }
});

test('the watch picks up ingested evidence by itself', { timeout: 60_000 }, async () => {
  const t = await tempDataDir();
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 50, buildThreads: 1 });
  try {
    const swapped = new Promise<void>((resolve) => service.onDelta(() => resolve()));
    // The poll timer is unref'd (it must not keep a process alive); hold the loop open while waiting.
    const keepAlive = setInterval(() => {}, 1000);
    try {
      await ingest(t.dir, t.root, [evidence('watched@ybl', 'https://u.example')]);
      await swapped;
    } finally {
      clearInterval(keepAlive);
    }
    assert.equal(service.view.verdict('watched@ybl').status, 'FLAGGED');
  } finally {
    await service.close();
    await t.cleanup();
  }
});

test('a snapshot another process wrote is prepared before it is served, and evidence stored meanwhile is served without waiting for it', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('old@ybl', 'https://u.example')]);
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT });
  try {
    let release = () => {};
    const prepared: string[] = [];
    service.beforeServing((next) => {
      prepared.push(next.meta.id);
      return new Promise((resolve) => (release = resolve));
    });
    // Another process's build: a newer snapshot in the data directory.
    await ingest(t.dir, t.root, [evidence('built@ybl', 'https://w.example')]);
    const built = await buildAndLoad(t.dir, { threads: 1 });
    const before = service.current.meta.id;
    const adopted = service.refresh();
    await until('the new snapshot is being prepared', 10_000, () => prepared.length === 1);
    assert.equal(prepared[0], built.meta.id);
    assert.equal(service.current.meta.id, before, 'not served before it is prepared');

    // Stored while the preparation waits: read into the delta over the snapshot served, at once.
    const stored = await ingest(t.dir, t.root, [evidence('meanwhile@ybl', 'https://x.example')]);
    assert.equal(await service.served(stored.storedAs!), 1);
    assert.equal(service.view.verdict('meanwhile@ybl').status, 'FLAGGED');
    assert.equal(service.current.meta.id, before);

    release();
    await adopted;
    assert.equal(service.current.meta.id, built.meta.id);
    for (const upi of ['old@ybl', 'built@ybl', 'meanwhile@ybl']) assert.equal(service.view.verdict(upi).status, 'FLAGGED', upi);
  } finally {
    await service.close();
    await t.cleanup();
  }
});
