import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { once } from 'node:events';
import { enableCollector, threadCollector } from '../../src/common/collector.js';

// Replaced snapshots live in shared memory that no collector feels (collector.ts):
// the serving threads and the main thread collect on demand, so they must have `gc`.

test('after enableCollector, this thread and threads started later can run a full collection', async () => {
  enableCollector();
  const collect = threadCollector();
  assert.equal(typeof collect, 'function');
  assert.ok(collect!() >= 0, 'it says how long it held the thread');

  const worker = new Worker('require("node:worker_threads").parentPort.postMessage(typeof gc)', { eval: true });
  const [kind] = (await once(worker, 'message')) as [string];
  assert.equal(kind, 'function');
  await once(worker, 'exit');
});
