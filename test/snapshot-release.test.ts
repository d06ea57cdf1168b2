import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { copyToSharedMemory } from '../src/engine/snapshot-codec.js';
import type { SnapshotData } from '../src/engine/snapshot-data.js';
import { ReleaseWatch, RetiredSnapshots } from '../src/http/snapshot-release.js';
import { buildInProcess, evidence } from './helpers.js';

// A replaced snapshot is let go by the main thread only after every serving
// thread's collector has dropped its references, so the unmapping of its
// memory never lands on a serving thread.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A snapshot with its own id, in shared memory as serving threads receive it. */
function snapshot(id: string): SnapshotData {
  const data = buildInProcess([evidence('a@ybl', 'https://u.example'), evidence('b@ybl', 'https://u.example')]).data;
  return copyToSharedMemory({ ...data, meta: { ...data.meta, id } });
}

test('a serving thread reports a snapshot once its collector has reclaimed every buffer of it', async () => {
  const released: string[] = [];
  const watch = new ReleaseWatch((id) => released.push(id));
  let old: SnapshotData | null = snapshot('old');
  const kept = snapshot('kept');
  watch.watch(old);
  watch.watch(kept);
  old = null;
  for (let i = 0; i < 20 && released.length === 0; i++) {
    gc();
    // Finalization callbacks run as tasks after the collection.
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.deepEqual(released, ['old']);
  assert.equal(kept.meta.id, 'kept', 'a snapshot still referenced is not reported');
});

test('the main thread holds a retired snapshot until every serving thread released it, then a grace period', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const retired = new RetiredSnapshots(2);
    retired.retire(snapshot('s1'));
    retired.released('s1');
    assert.deepEqual(retired.held(), ['s1'], 'one of two threads still holds it');
    retired.released('unknown');
    retired.released('s1');
    assert.deepEqual(retired.held(), ['s1'], 'kept while the last thread finishes sweeping');
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), []);
  } finally {
    mock.timers.reset();
  }
});

test('at most maxHeld retired snapshots are kept: a thread that never collects cannot pile them up', () => {
  const retired = new RetiredSnapshots(1, 2);
  for (const id of ['s1', 's2', 's3']) retired.retire(snapshot(id));
  assert.deepEqual(retired.held(), ['s2', 's3']);
});
