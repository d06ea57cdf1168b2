import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DroppedSharedMemory } from '../../src/common/dropped-shared-memory.js';

test('a collection runs once the bytes dropped since the last one reach the threshold, and the count starts again', () => {
  let collections = 0;
  const dropped = new DroppedSharedMemory(100, () => collections++);
  dropped.dropped(40);
  dropped.dropped(59);
  assert.equal(collections, 0);
  assert.equal(dropped.pending, 99);
  dropped.dropped(1);
  assert.equal(collections, 1);
  assert.equal(dropped.pending, 0);
  // One drop past the threshold by itself collects once, not once per threshold it spans.
  dropped.dropped(350);
  assert.equal(collections, 2);
  dropped.dropped(0);
  assert.equal(collections, 2);
});
