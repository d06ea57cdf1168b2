import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import roaring from 'roaring';
import {
  portableCardinality,
  portableDecode,
  portableIntersectionCardinality,
  portableRangeCardinality,
  rangeSize,
  sortedIdsSize,
  writeRange,
  writeSortedIds,
} from '../../src/engine/roaring-portable.js';

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

/**
 * Bitmaps as the roaring library serialises them: array, bitmap and (after
 * runOptimize) run containers, with and without the offset header (which a
 * run-container bitmap of fewer than four containers omits).
 */
const librarySets = fc
  .tuple(
    idSets,
    fc.array(fc.tuple(fc.integer({ min: 0, max: 400_000 }), fc.integer({ min: 1, max: 70_000 })), { maxLength: 3 }),
    fc.boolean(),
  )
  .map(([ids, ranges, optimise]) => {
    const bitmap = new RoaringBitmap32(ids);
    for (const [from, length] of ranges) bitmap.addRange(from, from + length);
    if (optimise) bitmap.runOptimize();
    return bitmap;
  });

function serialised(bitmap: InstanceType<typeof RoaringBitmap32>): Uint8Array {
  return new Uint8Array(bitmap.serialize('portable'));
}

test('counts read off the bytes agree with roaring: cardinality and ranges (property)', () => {
  fc.assert(
    fc.property(librarySets, fc.integer({ min: 0, max: 500_000 }), fc.integer({ min: 0, max: 200_000 }), (bitmap, from, length) => {
      const bytes = serialised(bitmap);
      assert.equal(portableCardinality(bytes), bitmap.size);
      assert.equal(portableRangeCardinality(bytes, from, from + length), bitmap.rangeCardinality(from, from + length));
      assert.equal(portableRangeCardinality(bytes, 0, 2 ** 32), bitmap.size);
    }),
    { numRuns: 300 },
  );
});

test('intersection counts with contiguous and scattered id sets agree with roaring (property)', () => {
  const contiguous = fc.tuple(fc.integer({ min: 0, max: 400_000 }), fc.integer({ min: 1, max: 70_000 })).map(([from, length]) =>
    Uint32Array.from({ length }, (_, i) => from + i),
  );
  const scattered = idSets.map((ids) => Uint32Array.from(ids).sort());
  fc.assert(
    fc.property(librarySets, fc.oneof(contiguous, scattered), (bitmap, ids) => {
      const expected = bitmap.andCardinality(new RoaringBitmap32(ids));
      assert.equal(portableIntersectionCardinality(serialised(bitmap), ids), expected);
    }),
    { numRuns: 300 },
  );
});

test('decoded ids agree with roaring, for its own bitmaps and those written here (property)', () => {
  const decoded = (bytes: Uint8Array): number[] => {
    const out = new Uint32Array(portableCardinality(bytes));
    assert.equal(portableDecode(bytes, out), out.length);
    return Array.from(out);
  };
  fc.assert(
    fc.property(librarySets, (bitmap) => {
      assert.deepEqual(decoded(serialised(bitmap)), bitmap.toArray());
    }),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(idSets, (ids) => {
      const sorted = Uint32Array.from(ids).sort();
      const out = new Uint8Array(sortedIdsSize(sorted, 0, sorted.length));
      writeSortedIds(sorted, 0, sorted.length, out, 0);
      assert.deepEqual(decoded(out), Array.from(sorted));
    }),
    { numRuns: 200 },
  );
  const range = new Uint8Array(rangeSize(65_530, 140_000));
  writeRange(65_530, 140_000, range, 0);
  assert.deepEqual(decoded(range), Array.from({ length: 140_000 - 65_530 }, (_, i) => 65_530 + i));
  assert.throws(() => portableDecode(range, new Uint32Array(10)), /do not fit/);
});

test('counts over bitmaps this module writes, and refusal of bytes that are no bitmap', () => {
  const ids = Uint32Array.from([3, 70_000, 70_001, 200_000]);
  const out = new Uint8Array(sortedIdsSize(ids, 0, ids.length));
  writeSortedIds(ids, 0, ids.length, out, 0);
  assert.equal(portableCardinality(out), 4);
  assert.equal(portableRangeCardinality(out, 70_000, 200_000), 2);
  assert.equal(portableIntersectionCardinality(out, Uint32Array.from([3, 4, 200_000])), 2);
  const range = new Uint8Array(rangeSize(65_530, 300_000));
  writeRange(65_530, 300_000, range, 0);
  assert.equal(portableCardinality(range), 300_000 - 65_530);
  assert.equal(portableIntersectionCardinality(range, Uint32Array.from([65_529, 65_530, 299_999, 300_000])), 2);
  assert.equal(portableIntersectionCardinality(range, new Uint32Array(0)), 0);

  assert.throws(() => portableCardinality(new Uint8Array([1, 2])), RangeError);
  assert.throws(() => portableCardinality(new Uint8Array(8).fill(7)), /not a portable roaring bitmap/);
  assert.throws(() => portableRangeCardinality(out.subarray(0, out.length - 1), 0, 2 ** 32), /truncated/);
});

test('a run container holding far more ids than its header says is refused at once, not walked', () => {
  // One run container: header says 2 ids; 65,535 runs of 65,536 ids follow (2^32 in all, a 256 KB bitmap).
  const runs = 65_535;
  const bytes = new Uint8Array(4 + 1 + 4 + 2 + 4 * runs);
  const view = new DataView(bytes.buffer);
  view.setUint16(0, 12_347, true); // SERIAL_COOKIE: run containers present
  view.setUint16(2, 0, true); // one container
  bytes[4] = 1; // it is a run container
  view.setUint16(5, 0, true); // its key
  view.setUint16(7, 1, true); // its cardinality less one: 2
  view.setUint16(9, runs, true);
  for (let r = 0; r < runs; r++) view.setUint16(11 + 4 * r + 2, 65_535, true);
  const started = performance.now();
  assert.throws(() => portableDecode(bytes, new Uint32Array(16)), /more ids than its header says/);
  assert.ok(performance.now() - started < 1_000, `refused after ${(performance.now() - started).toFixed(0)} ms`);
});
