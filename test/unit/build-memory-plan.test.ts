import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BuildMemory, FIRST_BUILD_SNAPSHOTS, PLANNED_SHARE } from '../../src/service/build-memory.js';

const MB = 1024 ** 2;

test('before any build is measured, a build is expected to grow by FIRST_BUILD_SNAPSHOTS snapshots; lean when that nears the limit', () => {
  const memory = new BuildMemory(1000 * MB);
  const fits = memory.plan({ residentBytes: 400 * MB, snapshotBytes: 150 * MB });
  assert.equal(fits.expectedPeak, 400 * MB + FIRST_BUILD_SNAPSHOTS * 150 * MB);
  assert.equal(fits.lean, false, `850 MB is within ${PLANNED_SHARE} of 1000`);
  const near = memory.plan({ residentBytes: 500 * MB, snapshotBytes: 150 * MB });
  assert.equal(near.lean, true, '950 MB is not');
  assert.equal(memory.leanBuilds, 1);
});

test('a measured usual build sets the growth expected of the next; lean builds teach nothing', () => {
  const memory = new BuildMemory(1000 * MB);
  const first = memory.plan({ residentBytes: 300 * MB, snapshotBytes: 100 * MB });
  assert.equal(first.lean, false);
  memory.measured(first, 850 * MB);
  const second = memory.plan({ residentBytes: 400 * MB, snapshotBytes: 100 * MB });
  assert.equal(second.expectedPeak, 950 * MB);
  assert.equal(second.lean, true);
  memory.measured(second, 500 * MB);
  assert.equal(memory.plan({ residentBytes: 400 * MB, snapshotBytes: 100 * MB }).expectedPeak, 950 * MB);
});

test('memory is tight while the last plan was lean', () => {
  const memory = new BuildMemory(1000 * MB);
  assert.equal(memory.tight, false);
  memory.plan({ residentBytes: 900 * MB, snapshotBytes: 100 * MB });
  assert.equal(memory.tight, true);
  memory.plan({ residentBytes: 100 * MB, snapshotBytes: 100 * MB });
  assert.equal(memory.tight, false);
  assert.equal(memory.leanBuilds, 1);
});

test('a limit is a positive whole number of bytes', () => {
  for (const bad of [0, -1, 1.5, Number.NaN]) assert.throws(() => new BuildMemory(bad), RangeError);
});
