import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Rescreener } from '../../src/watch/rescreen.js';
import { FileWatchStore } from '../../src/watch/file-watch-store.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { emptyDelta } from '../../src/builder/delta-merge.js';
import { subscribe } from '../../src/common/listeners.js';
import { silentLogger } from '../../src/common/logger.js';
import type { DeltaData } from '../../src/engine/delta-data.js';
import type { ServedData, SwapEvent } from '../../src/service/served-data.js';
import { buildInProcess, evidence, tempDataDir } from '../helpers.js';

test('a closed rescreener stops listening to what is served', async () => {
  const { root, cleanup } = await tempDataDir();
  const store = await FileWatchStore.open(join(root, 'watch', 'journal.ndjson'));
  try {
    const snapshot = buildInProcess([evidence('mule@ybl', 'https://scam.example/a')]);
    const delta = emptyDelta(snapshot.data, Date.now());
    const swapListeners: ((event: SwapEvent) => void)[] = [];
    const deltaListeners: ((delta: DeltaData) => void)[] = [];
    const served: ServedData = {
      current: snapshot,
      delta,
      view: new ServingView(snapshot, delta),
      onSwap: (listener) => subscribe(swapListeners, listener),
      onDelta: (listener) => subscribe(deltaListeners, listener),
      beforeServing: () => () => {},
      reuseMemoryOf: () => false,
    };
    let passes = 0;
    const rescreener = new Rescreener(store, served, { logger: silentLogger, onEvents: () => {} });
    rescreener.onPass(() => passes++);
    rescreener.start();
    assert.equal(swapListeners.length, 1);
    assert.equal(deltaListeners.length, 1);
    await rescreener.schedule();
    const before = passes;
    assert.ok(before >= 1);

    await rescreener.close();
    // A lease lost and taken again starts a new rescreener beside what is served: the old one must be gone.
    assert.equal(swapListeners.length, 0);
    assert.equal(deltaListeners.length, 0);
    await rescreener.schedule();
    assert.equal(passes, before);
  } finally {
    await store.close();
    await cleanup();
  }
});
