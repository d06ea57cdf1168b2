import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { IntelligenceService, defaultBuildThreads } from '../src/service/intelligence-service.js';
import { tempDataDir, ingest, evidence, TEST_SCORED_AT } from './helpers.js';

test('a serving process builds on every core but one, and on one thread where there is a single core', () => {
  assert.equal(defaultBuildThreads(1), 1);
  assert.equal(defaultBuildThreads(2), 1);
  assert.equal(defaultBuildThreads(4), 3);
  assert.equal(defaultBuildThreads(64), 63);
  assert.equal(defaultBuildThreads(), Math.max(1, availableParallelism() - 1));
});

test('without buildThreads, a background rebuild runs on no more pool threads than the default', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('first@ybl', 'https://u.example')]);
  // The first build runs before the service exists; the rebuild is what a serving process does.
  const service = await IntelligenceService.start({ dataDir: t.dir, pollMs: 0, scoredAt: () => TEST_SCORED_AT });
  try {
    await ingest(t.dir, t.root, [evidence('second@ybl', 'https://v.example'), evidence('third@ybl', 'https://w.example')]);
    await service.refresh();
    assert.equal(service.current.verdict('second@ybl').status, 'FLAGGED');
    // Threads live a while after the build (buildIdleMs). Aggregation alone queues twice as many tasks as
    // the pool may have threads, all at once: a pool allowed every core would have started more than this.
    assert.ok(service.buildThreads >= 1, `${service.buildThreads} build threads alive`);
    assert.ok(service.buildThreads <= defaultBuildThreads(), `${service.buildThreads} build threads, more than ${defaultBuildThreads()}`);
  } finally {
    await service.close();
    await t.cleanup();
  }
});
