import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { askThread } from '../../src/http/thread-ask.js';

// The main thread asks serving threads for their metrics, to listen and to
// drain. A thread that has stopped must fail the question, never leave it
// waiting: a scrape of /metrics on another thread would wait with it.

/** A thread running `body` (CommonJS, with `parentPort` in scope). */
function thread(body: string): Worker {
  return new Worker(`const { parentPort } = require('node:worker_threads');\n${body}`, { eval: true });
}

test('a reply of the asked type and id answers the question; others are passed over', { timeout: 10_000 }, async () => {
  const worker = thread(`parentPort.on('message', (m) => {
    parentPort.postMessage({ type: 'drained' });
    parentPort.postMessage({ type: 'metrics', id: m.id + 1, json: 'not this one' });
    parentPort.postMessage({ type: 'metrics', id: m.id, json: ['counted'] });
  });`);
  try {
    const reply = await askThread(worker, { type: 'metrics', id: 7 }, 'metrics');
    assert.deepEqual(reply, { type: 'metrics', id: 7, json: ['counted'] });
  } finally {
    await worker.terminate();
  }
});

test('a thread that exits before it answers fails the question', { timeout: 10_000 }, async () => {
  const worker = thread(`parentPort.on('message', () => process.exit(2));`);
  await assert.rejects(askThread(worker, { type: 'metrics', id: 1 }, 'metrics'), { code: 'ERR_THREAD', message: /exited with 2/ });
});

test('a thread that has exited already fails the question at once', { timeout: 10_000 }, async () => {
  const worker = thread('');
  await once(worker, 'exit');
  const started = performance.now();
  await assert.rejects(askThread(worker, { type: 'drain' }, 'drained'), { code: 'ERR_THREAD', message: /has exited/ });
  assert.ok(performance.now() - started < 1000);
});
