import { test } from 'node:test';
import assert from 'node:assert/strict';
import { threadCollector } from '../../src/common/collector.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT, until } from '../helpers.js';

// A service started from a snapshot on disk reads the stored evidence ahead and writes its records out
// (spilled-segments.ts) before any serving thread starts. Their shared memory is given back only by a
// full collection on every thread that held it (collector.ts), so the collector must be there by then:
// without it, the records stayed in memory until a collection an idle main thread might not make for
// minutes (bench/MEASUREMENTS.md#collector-at-start). This file runs in a process of its own, which
// nothing else has given `gc`.

test('a service started from a snapshot can collect on its threads when the read-ahead is written out', async () => {
  assert.equal(threadCollector(), undefined, 'the test process starts without gc: it is the service that enables it');
  const t = await tempDataDir();
  try {
    const items = Array.from({ length: 60 }, (_, i) => evidence(`start${i}@ybl`, `https://t.me/gang${i % 7}`));
    await ingest(t.dir, t.root, items);
    const options = { dataDir: t.dir, pollMs: 0, buildThreads: 2, scoredAt: () => TEST_SCORED_AT };
    // The first start builds the snapshot; the second starts from it and reads the evidence ahead.
    await (await SnapshotService.start(options)).close();

    const service = await SnapshotService.start(options);
    try {
      assert.equal(service.lastBuild, null, 'started from the snapshot on disk');
      const collect = threadCollector();
      assert.equal(typeof collect, 'function', 'the main thread can collect from the start');
      await until('the evidence is read ahead and its records written out', 10_000, () => service.carriedDiskBytes > 0);
      assert.equal(service.view.verdict('start0@ybl').status, 'FLAGGED');
    } finally {
      await service.close();
    }
  } finally {
    await t.cleanup();
  }
});
