import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyDelta } from '../../src/builder/delta-merge.js';
import { silentLogger } from '../../src/common/logger.js';
import type { DeltaData } from '../../src/engine/delta-data.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { createMirrorKey } from '../../src/mirror/signing-key.js';
import type { MirrorVersionRecord } from '../../src/mirror/version-record.js';
import { HashRangeKeeper } from '../../src/service/hash-range-keeper.js';
import { MirrorKeeper } from '../../src/service/mirror-keeper.js';
import type { ServedData } from '../../src/service/served-data.js';
import { fakeSnapshot } from '../fixtures/fake-snapshot.js';
import { tempDataDir, until } from '../helpers.js';

// A mirror version that cannot be made (its record fails: a full disk,
// the store down) is tried again after the interval, then twice that, and
// so on, not at once: a cut is seconds of work at 10M. Once one is made,
// the failures are forgotten: the next one waits the interval again.

const INTERVAL_MS = 150;

test('versions that cannot be made are tried again after a doubling wait, then made as usual', { timeout: 60_000 }, async () => {
  const t = await tempDataDir();
  const current = new SnapshotView(fakeSnapshot(300, { seed: 5 }));
  let delta: DeltaData = emptyDelta(current.data, Date.now());
  let deltaListener: ((delta: DeltaData) => void) | null = null;
  const served: ServedData = {
    current,
    get delta() {
      return delta;
    },
    get view() {
      return new ServingView(current, delta);
    },
    onSwap: () => () => {},
    beforeServing: () => () => {},
    onDelta: (listener) => {
      deltaListener = listener;
      return () => {};
    },
    reuseMemoryOf: () => false,
  };
  const attempts: number[] = [];
  let refusals = 3;
  const record: MirrorVersionRecord = {
    last: () => Promise.resolve(0),
    record: () => {
      attempts.push(performance.now());
      if (refusals > 0) {
        refusals--;
        return Promise.reject(new Error('no space left on device'));
      }
      return Promise.resolve();
    },
  };
  const hashes = new HashRangeKeeper(served, { threads: 1, logger: silentLogger });
  const keeper = await MirrorKeeper.start(served, hashes, { record, key: await createMirrorKey(t.root), logger: silentLogger, intervalMs: INTERVAL_MS, serves: false });
  try {
    await until('a version made after three failures', 30_000, () => keeper.publication !== null);
    assert.equal(attempts.length, 4);
    const gaps = attempts.slice(1).map((at, i) => at - attempts[i]!);
    gaps.forEach((gap, i) => assert.ok(gap >= INTERVAL_MS * 2 ** i - 20, `try ${i + 2} came ${gap.toFixed(0)} ms after the one before; at least ${INTERVAL_MS * 2 ** i} ms asked`));
    assert.equal(keeper.publication!.version, 1, 'a version that failed did not take its number');

    // The failures forgotten once a version is made: the next failure waits the interval again, not the next doubling (1,200 ms).
    refusals = 1;
    delta = emptyDelta(current.data, Date.now(), 1);
    deltaListener!(delta);
    await until('the next version, after one failure', 10_000, () => keeper.publication!.version === 2);
    assert.equal(attempts.length, 6);
    const retry = attempts[5]! - attempts[4]!;
    assert.ok(retry >= INTERVAL_MS - 20 && retry < 4 * INTERVAL_MS, `the retry came ${retry.toFixed(0)} ms after the failure`);
  } finally {
    keeper.close();
    hashes.close();
    await t.cleanup();
  }
});
