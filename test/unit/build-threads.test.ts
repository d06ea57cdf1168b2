import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SnapshotService, defaultBuildThreads } from '../../src/service/snapshot-service.js';
import { tempDataDir, ingest, evidence, TEST_SCORED_AT } from '../helpers.js';

test('a serving process builds on every core but one, and on one thread where there is a single core', () => {
  assert.equal(defaultBuildThreads(1), 1);
  assert.equal(defaultBuildThreads(2), 1);
  assert.equal(defaultBuildThreads(4), 3);
  assert.equal(defaultBuildThreads(64), 63);
});

test('without buildThreads, a background rebuild runs on exactly the default number of pool threads', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [evidence('first@ybl', 'https://u.example')]);
    const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, scoredAt: () => TEST_SCORED_AT });
    try {
      await ingest(t.dir, t.root, [evidence('second@ybl', 'https://v.example'), evidence('third@ybl', 'https://w.example')]);
      await service.refresh();
      await service.compact();
      assert.equal(service.current.verdict('second@ybl').status, 'FLAGGED');
      // Aggregation queues twice as many tasks as the pool may have threads, all at once, so the pool
      // starts every thread it is allowed; they live on after the build (buildIdleMs), so the count
      // read now is the most the build had. A pool allowed every core would have more on 2+ cores.
      assert.equal(service.buildPoolThreads, defaultBuildThreads());
      // Beside them, the thread that merged the ingest into the delta, alive as long after it.
      assert.equal(service.buildThreads, defaultBuildThreads() + 1);
    } finally {
      await service.close();
    }
  } finally {
    await t.cleanup();
  }
});
