import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import roaring from 'roaring';
import { rangeSize, sortedIdsSize, writeRange, writeSortedIds } from '../src/engine/roaring-portable.js';

const { RoaringBitmap32 } = roaring;

// Sets spread over several 2^16 chunks, some dense enough for bitmap containers.
const idSets = fc.oneof(
  fc.uniqueArray(fc.integer({ min: 0, max: 300_000 }), { maxLength: 300 }),
  fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 4000, max: 9000 })).map(([chunk, count]) =>
    Array.from({ length: count }, (_, i) => chunk * 65536 + i * 7),
  ),
  fc.constant([0, 65535, 65536, 4294967295]),
);

test('sorted id sets written by hand read back identically through roaring (property)', () => {
  fc.assert(
    fc.property(idSets, fc.integer({ min: 0, max: 9 }), (ids, at) => {
      const sorted = Uint32Array.from(ids).sort();
      const size = sortedIdsSize(sorted, 0, sorted.length);
      const out = new Uint8Array(at + size);
      assert.equal(writeSortedIds(sorted, 0, sorted.length, out, at), size);
      const bitmap = RoaringBitmap32.deserialize(out.subarray(at), 'portable');
      assert.deepEqual([...bitmap.toUint32Array()], [...sorted]);
    }),
    { numRuns: 300 },
  );
});

test('ranges written as run containers read back identically (property)', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 400_000 }), (from, length) => {
      const size = rangeSize(from, from + length);
      const out = new Uint8Array(size);
      assert.equal(writeRange(from, from + length, out, 0), size);
      const bitmap = RoaringBitmap32.deserialize(out, 'portable');
      assert.equal(bitmap.size, length);
      if (length > 0) {
        assert.equal(bitmap.minimum(), from);
        assert.equal(bitmap.maximum(), from + length - 1);
      }
    }),
    { numRuns: 300 },
  );
});
