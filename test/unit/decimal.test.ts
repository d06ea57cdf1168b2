import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decimalText } from '../../src/common/decimal.js';

test('decimalText writes every whole number as String does, across the three-digit group edges', () => {
  const edges = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1010, 1099, 1100, 9999, 10_000, 100_007, 999_999, 1_000_000, 1_000_001];
  for (const n of edges) assert.equal(decimalText(n), String(n), `n = ${n}`);
  for (let n = 0; n < 20_000; n++) assert.equal(decimalText(n), String(n));
  // Counting down from a large quota, as X-RateLimit-Remaining does.
  for (let n = 1_000_000_000; n > 999_990_000; n--) assert.equal(decimalText(n), String(n));
  assert.equal(decimalText(Number.MAX_SAFE_INTEGER), String(Number.MAX_SAFE_INTEGER));
  assert.equal(decimalText(1_795_420_000), '1795420000');
});

test('decimalText falls back to String for anything that is not a safe whole number ≥ 0', () => {
  for (const n of [-1, -1000, 0.5, 1.25, 1e21, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Infinity, -Infinity, -0]) {
    assert.equal(decimalText(n), String(n), `n = ${n}`);
  }
});
