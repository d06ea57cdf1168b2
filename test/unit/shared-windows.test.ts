import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { FixedWindows } from '../../src/access/fixed-windows.js';
import { SharedFixedWindows, SharedWindowTable } from '../../src/access/shared-windows.js';

const MODULE = new URL('../../src/access/shared-windows.js', import.meta.url).href;

test('shared windows count as FixedWindows does, for any sequence of requests and reads (property)', () => {
  const op = fc.record({
    key: fc.constantFrom('key_a', 'key_b', 'key_c'),
    advanceMs: fc.integer({ min: 0, max: 1500 }),
    read: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 3 }), fc.array(op, { maxLength: 200 }), (points, seconds, ops) => {
      const model = new FixedWindows(points, seconds);
      const shared = new SharedFixedWindows(new SharedWindowTable(), 'plan:test:burst', points, seconds);
      let now = 1_795_000_000_000;
      for (const { key, advanceMs, read } of ops) {
        now += advanceMs;
        if (read) assert.deepEqual(shared.get(key, now), model.get(key, now));
        else assert.deepEqual(shared.consume(key, now), model.consume(key, now));
      }
    }),
    { numRuns: 300 },
  );
});

test('windows of different limits and namespaces in one table stay apart', () => {
  const table = new SharedWindowTable();
  const burst = new SharedFixedWindows(table, 'plan:default:burst', 1, 1);
  const sustained = new SharedFixedWindows(table, 'plan:default:sustained', 5, 60);
  const now = 1_000_000;
  assert.equal(burst.consume('key_a', now).rejected, false);
  assert.equal(burst.consume('key_a', now).rejected, true);
  assert.equal(burst.consume('key_b', now).rejected, false, 'another key');
  assert.deepEqual(sustained.get('key_a', now), null, 'another limit');
  // Another thread's view of the same table counts against the same windows.
  const elsewhere = new SharedFixedWindows(new SharedWindowTable(table.buffer), 'plan:default:burst', 1, 1);
  assert.equal(elsewhere.get('key_b', now)?.consumedPoints, 1);
  assert.equal(elsewhere.consume('key_b', now).rejected, true);
});

test('a full table leaves further keys windows of their own thread', () => {
  const table = new SharedWindowTable();
  const windows = new SharedFixedWindows(table, 'n', 2, 60);
  for (let i = 0; i < SharedWindowTable.SLOTS; i++) assert.notEqual(table.slotOf(`filler ${i}`), -1);
  assert.equal(table.slotOf('one more'), -1);
  assert.deepEqual(
    [0, 1, 2].map(() => windows.consume('late_key', 0).rejected),
    [false, false, true],
    'the overflow windows still limit',
  );
});

test('a table of the wrong size is refused', () => {
  assert.throws(() => new SharedWindowTable(new SharedArrayBuffer(64)), RangeError);
});

test('threads counting one key at once lose no request and admit exactly the limit', async () => {
  const table = new SharedWindowTable();
  const points = 25_000;
  const perThread = 20_000;
  const source = `
    const { workerData, parentPort } = require('node:worker_threads');
    import(workerData.module).then(({ SharedFixedWindows, SharedWindowTable }) => {
      const windows = new SharedFixedWindows(new SharedWindowTable(workerData.buffer), 'plan:x:sustained', workerData.points, 60);
      let admitted = 0;
      for (let i = 0; i < workerData.requests; i++) if (!windows.consume('key_shared', 1000).rejected) admitted++;
      parentPort.postMessage(admitted);
    });
  `;
  const run = () =>
    new Promise<number>((resolve, reject) => {
      const worker = new Worker(source, { eval: true, workerData: { module: MODULE, buffer: table.buffer, points, requests: perThread } });
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  const admitted = await Promise.all([run(), run(), run()]);
  const state = new SharedFixedWindows(table, 'plan:x:sustained', points, 60).get('key_shared', 1000);
  assert.equal(state?.consumedPoints, 3 * perThread, 'every request counted once');
  assert.equal(admitted.reduce((a, b) => a + b, 0), points, 'exactly the limit admitted across threads');
});
