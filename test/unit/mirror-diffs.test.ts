import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { changesBetween } from '../../src/mirror/mirror-cut.js';
import { MirrorDiffs } from '../../src/mirror/mirror-diffs.js';
import { applyMirrorDiff, decodeMirrorFile, type MirrorEntries } from '../../src/mirror/mirror-format.js';

const triple = fc.tuple(fc.integer({ min: 0, max: 11 }), fc.integer({ min: 0, max: 3 }), fc.constantFrom(0x00, 0x01, 0x12, 0x22, 0x40));
const entrySet = fc.array(triple, { maxLength: 12 }).map((triples): MirrorEntries => {
  const sorted = [...new Map(triples.map((t) => [`${t[0]}:${t[1]}`, t])).values()].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return { count: sorted.length, hi: Uint32Array.from(sorted, (t) => t[0]), lo: Uint32Array.from(sorted, (t) => t[1]), meta: Uint8Array.from(sorted, (t) => t[2]) };
});
const plain = (e: MirrorEntries) => [...Array(e.count).keys()].map((i) => [e.hi[i], e.lo[i], e.meta[i]]);

test('the diff kept from any recent version, applied to that version, makes the newest', () => {
  fc.assert(
    fc.property(fc.array(entrySet, { minLength: 1, maxLength: 9 }), fc.integer({ min: 1, max: 5 }), (sets, keep) => {
      const diffs = new MirrorDiffs(keep, 1e9);
      let previous: MirrorEntries | null = null;
      sets.forEach((set, i) => {
        diffs.advance(i, i + 1, changesBetween(previous, set), set.count);
        previous = set;
      });
      const newest = sets.at(-1)!;
      const versions = diffs.versions();
      assert.deepEqual(versions, [...Array(Math.min(keep, sets.length - 1)).keys()].map((k) => sets.length - 1 - k));
      for (const from of versions) assert.deepEqual(plain(applyMirrorDiff(sets[from - 1]!, decodeMirrorFile(diffs.file(from)))), plain(newest), `from ${from}`);
    }),
  );
});

test('a version whose diff would hold most of the set is not kept', () => {
  const set = (n: number, meta: number): MirrorEntries => ({ count: n, hi: Uint32Array.from({ length: n }, (_, i) => i), lo: new Uint32Array(n), meta: new Uint8Array(n).fill(meta) });
  const diffs = new MirrorDiffs(10, 0.25);
  diffs.advance(0, 1, changesBetween(null, set(8, 0)), 8);
  diffs.advance(1, 2, changesBetween(set(8, 0), set(8, 1)), 8);
  assert.deepEqual(diffs.versions(), []);
  assert.throws(() => diffs.file(1), RangeError);
});

test('the diffs offered are the newest whose files fit the budget together', () => {
  const set = (n: number): MirrorEntries => ({ count: n, hi: Uint32Array.from({ length: n }, (_, i) => i), lo: new Uint32Array(n), meta: new Uint8Array(n) });
  const diffs = new MirrorDiffs(10, 1);
  // Each version adds ten entries: the diff from an older version holds more of them.
  for (let v = 1; v <= 5; v++) diffs.advance(v - 1, v, changesBetween(v === 1 ? null : set(10 * (v - 1)), set(10 * v)), 10 * v);
  const sizes = new Map(diffs.versions().map((from) => [from, diffs.file(from).length]));
  assert.deepEqual([...sizes.keys()], [4, 3, 2, 1]);
  assert.deepEqual(diffs.offered(Number.MAX_SAFE_INTEGER).map((d) => d.from), [4, 3, 2, 1]);
  assert.deepEqual(diffs.offered(sizes.get(4)! + sizes.get(3)!).map((d) => d.from), [4, 3]);
  assert.deepEqual(diffs.offered(sizes.get(4)! + sizes.get(3)! - 1).map((d) => d.from), [4]);
  assert.deepEqual(diffs.offered(0), []);
  for (const { from, bytes } of diffs.offered(Number.MAX_SAFE_INTEGER)) assert.deepEqual(bytes, diffs.file(from));
});
