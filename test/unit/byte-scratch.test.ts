import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ByteScratch, putAscii, putBytes, putDigits } from '../../src/common/byte-scratch.js';

const textOf = (view: Uint8Array): string => Buffer.from(view).toString('utf8');

test('decimal writes every number as String does, at the digit-count and 2^31 edges', () => {
  const out = new ByteScratch(64);
  const edges = [0, 1, 9, 10, 99, 100, 101, 999, 1000, 65_535, 999_999_999, 1_000_000_000, 1_795_420_000];
  edges.push(0x7fffffff, 0x80000000, 9_999_999_999, 10_000_000_000, Number.MAX_SAFE_INTEGER);
  // Not whole, negative, unsafe or not finite: written as String writes them.
  edges.push(-1, 0.5, 1e21, Number.MAX_SAFE_INTEGER + 2, Number.NaN, Number.POSITIVE_INFINITY, -0);
  for (const n of edges) assert.equal(textOf(out.clear().decimal(n).view()), String(n), `n = ${n}`);
  fc.assert(fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), (n) => textOf(out.clear().decimal(n).view()) === String(n)), { numRuns: 5000 });
});

test('base36 writes every whole number as toString(36) does', () => {
  const out = new ByteScratch(64);
  for (const n of [0, 35, 36, 1295, 1296, 0x7fffffff, 0x80000000, Number.MAX_SAFE_INTEGER, 0.5, -7]) {
    assert.equal(textOf(out.clear().base36(n).view()), n.toString(36), `n = ${n}`);
  }
  fc.assert(fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), (n) => textOf(out.clear().base36(n).view()) === n.toString(36)), { numRuns: 2000 });
});

test('putDigits writes whole numbers in a radix with leading zeros to the width, as toString and padStart do', () => {
  const target = new Uint8Array(64);
  const put = (n: number, radix: number, width: number): string => textOf(target.subarray(3, putDigits(target, 3, n, radix, width)));
  for (const [n, width] of [[0, 1], [0, 4], [7, 2], [42, 2], [123, 2], [5, 3], [2026, 4], [0x80000000, 12]] as const) {
    assert.equal(put(n, 10, width), String(n).padStart(width, '0'), `${n}, ${width}`);
  }
  fc.assert(
    fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), fc.constantFrom(10, 36), fc.integer({ min: 1, max: 20 }), (n, radix, width) =>
      assert.equal(put(n, radix, width), n.toString(radix).padStart(width, '0')),
    ),
    { numRuns: 3000 },
  );
});

test('room and commit let a writer put pieces in place, checked once for the whole', () => {
  const out = new ByteScratch(256);
  out.text('head:');
  const source = Buffer.from('0123456789'.repeat(10));
  const b = out.room(100);
  let at = putBytes(b, out.length, source, 3, 7);
  at = putAscii(b, at, '|');
  at = putBytes(b, at, source, 10, 90);
  out.commit(at);
  assert.equal(textOf(out.view()), `head:3456|${source.toString('latin1', 10, 90)}`);
  // No room past the capacity, and no commit before what is written or past the end.
  assert.throws(() => out.room(256 - out.length + 1), RangeError);
  assert.throws(() => out.commit(out.length - 1), RangeError);
  assert.throws(() => out.commit(257), RangeError);
  assert.equal(textOf(out.view()), `head:3456|${source.toString('latin1', 10, 90)}`);
});

test('text is written as UTF-8, ASCII or not, after what came before', () => {
  const out = new ByteScratch(1024);
  fc.assert(
    fc.property(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 }), (a, b) => {
      const view = out.clear().text(a).text(b).view();
      assert.deepEqual(Buffer.from(view), Buffer.from(a + b, 'utf8'));
    }),
  );
});

test('bytes, truncate and clear build the text in place', () => {
  const out = new ByteScratch(256);
  const long = Buffer.alloc(100, 0x61);
  out.bytes(Buffer.from('start:')).bytes(long);
  assert.equal(out.length, 106);
  assert.equal(textOf(out.view()), `start:${'a'.repeat(100)}`);
  out.truncate(6).text('end');
  assert.equal(textOf(out.view()), 'start:end');
  assert.throws(() => out.truncate(10), RangeError);
  assert.equal(out.clear().length, 0);
  assert.equal(out.view().length, 0);
});

test('a view of a length is made once, and shows what is written now', () => {
  const out = new ByteScratch(16);
  const first = out.clear().text('abc').view();
  const second = out.clear().text('xyz').view();
  // The same view object: writing an answer allocates none once its length has come up.
  assert.equal(first, second);
  assert.equal(textOf(first), 'xyz');
});

test('writing past the capacity throws instead of truncating the answer', () => {
  const out = new ByteScratch(8);
  out.text('12345678');
  assert.throws(() => out.text('9'), RangeError);
  assert.throws(() => out.clear().decimal(123_456_789), RangeError);
  // A number that just fits is written whole.
  assert.equal(textOf(out.clear().text('ab').decimal(123_456).view()), 'ab123456');
  assert.throws(() => out.clear().text('abc').decimal(123_456), RangeError);
  assert.equal(textOf(out.clear().text('abcdef').base36(1295).view()), 'abcdefzz');
  assert.throws(() => out.clear().bytes(new Uint8Array(9)), RangeError);
  assert.throws(() => out.clear().text('ééééé'), RangeError);
  // Nothing of a refused write is kept.
  assert.equal(textOf(out.clear().text('ok').view()), 'ok');
});
