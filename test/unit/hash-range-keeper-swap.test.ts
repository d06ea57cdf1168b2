import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { enableCollector, threadCollector } from '../../src/common/collector.js';
import { silentLogger } from '../../src/common/logger.js';
import type { SnapshotData } from '../../src/engine/snapshot-data.js';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import type { ServedData, SwapEvent } from '../../src/service/served-data.js';
import { HashRangeKeeper } from '../../src/service/hash-range-keeper.js';
import { buildInProcess, evidence } from '../helpers.js';

/** Just what the keeper reads of a served data source: the snapshot served, and its swaps. */
class Swaps {
  current: SnapshotView;
  readonly #listeners: ((event: SwapEvent) => void)[] = [];

  constructor(first: SnapshotView) {
    this.current = first;
  }

  onSwap(listener: (event: SwapEvent) => void): () => void {
    this.#listeners.push(listener);
    return () => {};
  }

  beforeServing(): () => void {
    return () => {};
  }

  swap(next: SnapshotView): void {
    this.current = next;
    for (const listener of this.#listeners) listener({ previous: null, next, delta: null as never, reason: 'rebuild' });
  }
}

async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 10_000) throw new Error('timed out');
    await sleep(10);
  }
}

test('a replaced snapshot is not held by its ranges once the swap is made, before the new ranges are', async () => {
  enableCollector();
  const collect = threadCollector()!;
  const swaps = new Swaps(buildInProcess([evidence('first@ybl', 'https://a.example/1')]));
  const keeper = new HashRangeKeeper(swaps as unknown as ServedData, { threads: 1, logger: silentLogger });
  // Made before an await: a WeakRef keeps its target alive until the end of the job that made it.
  const replaced = new WeakRef<SnapshotData>(swaps.current.data);
  await until(() => keeper.snapshot !== null);

  const next = buildInProcess([evidence('first@ybl', 'https://a.example/1'), evidence('second@ybl', 'https://a.example/2')]);
  swaps.swap(next);
  // The new ranges are made on a worker thread: none yet, and the replaced snapshot is already unreachable.
  assert.equal(keeper.snapshot, null);
  collect();
  assert.equal(replaced.deref(), undefined, 'the replaced snapshot is collected');

  await until(() => keeper.snapshot !== null);
  assert.equal(keeper.snapshot!.data, next.data);
  assert.equal(keeper.rangesOf(next.data), keeper.snapshot!.ranges);
  keeper.close();
});
