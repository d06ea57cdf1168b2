import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isDeclaredWithin } from '../../src/http/request-body.js';

/**
 * Which Content-Length values let a body be read without promises
 * (request-body.ts, readDeclaredBody): digits alone, from 1 to the cap.
 * Every other value is left to readBody, which answers it.
 */
test('a length from 1 to the cap, in digits, is read as declared', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 1_000_000 }), fc.nat({ max: 3 }), (length, limit, zeros) => {
      assert.equal(isDeclaredWithin('0'.repeat(zeros) + String(length), limit), length <= limit);
    }),
  );
});

test('no length, zero, or anything but digits is left to readBody', () => {
  for (const value of ['', '0', '000', ' 12', '12 ', '+12', '-1', '1e3', '0x10', '12abc', '１２', '1.5']) {
    assert.equal(isDeclaredWithin(value, 1_000_000), false, JSON.stringify(value));
  }
  fc.assert(
    fc.property(fc.string({ minLength: 1, maxLength: 12 }), (value) => {
      fc.pre(/[^0-9]/.test(value));
      assert.equal(isDeclaredWithin(value, Number.MAX_SAFE_INTEGER), false);
    }),
  );
});

test('a length past the cap, however many digits it has, is left to readBody', () => {
  assert.equal(isDeclaredWithin('9'.repeat(400), 1_000_000), false);
  assert.equal(isDeclaredWithin('1000001', 1_000_000), false);
  assert.equal(isDeclaredWithin('1000000', 1_000_000), true);
});
