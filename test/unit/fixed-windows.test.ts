import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FixedWindows } from '../../src/access/fixed-windows.js';

test('a window admits its points, refuses the rest, and reopens when it ends', () => {
  const windows = new FixedWindows(3, 10);
  const t0 = 1_000_000;
  const results = [0, 1, 2, 3, 4].map((k) => windows.consume('key_a', t0 + k));
  assert.deepEqual(results.map((r) => r.rejected), [false, false, false, true, true]);
  assert.deepEqual(results[2]!.state, { consumedPoints: 3, remainingPoints: 0, msBeforeNext: 9_998 });
  // Refused requests count too, as with RateLimiterMemory.
  assert.equal(results[4]!.state.consumedPoints, 5);
  const reopened = windows.consume('key_a', t0 + 10_000);
  assert.equal(reopened.rejected, false);
  assert.deepEqual(reopened.state, { consumedPoints: 1, remainingPoints: 2, msBeforeNext: 10_000 });
});

test('keys have separate windows, and get() reads one without counting', () => {
  const windows = new FixedWindows(2, 1);
  windows.consume('key_a', 0);
  assert.equal(windows.get('key_b', 0), null);
  assert.deepEqual(windows.get('key_a', 400), { consumedPoints: 1, remainingPoints: 1, msBeforeNext: 600 });
  assert.deepEqual(windows.get('key_a', 400), { consumedPoints: 1, remainingPoints: 1, msBeforeNext: 600 });
  assert.equal(windows.get('key_a', 1000), null, 'an ended window is no window');
});

test('limits must be positive', () => {
  assert.throws(() => new FixedWindows(0, 1), RangeError);
  assert.throws(() => new FixedWindows(1, 0), RangeError);
});
