import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_SEGMENTS, segmentsToMerge } from '../../src/builder/carry.js';

// A builder keeps each (id partition, VPA partition) pair's deduplicated
// records as a list of segments, one more per build, and merges the newest
// ones when the list grows long (carry.ts). Simulated here without the
// build: segment sizes stand for their records.

interface Simulated {
  readonly segments: SharedArrayBuffer[];
  /** The builds each segment holds, in order: merging must keep it. */
  readonly contents: number[][];
  copied: number;
}

/** One build adding `size` bytes, merging as the builder does. */
function addBuild(state: Simulated, build: number, size: number): void {
  const merge = segmentsToMerge(state.segments);
  const from = state.segments.length - merge;
  const leading = state.segments.splice(from);
  const leadingContents = state.contents.splice(from).flat();
  const bytes = leading.reduce((sum, s) => sum + s.byteLength, 0) + size;
  state.copied += bytes - size;
  state.segments.push(new SharedArrayBuffer(bytes));
  state.contents.push([...leadingContents, build]);
}

test('carried segments stay fewer than MAX_SEGMENTS, in build order, and a byte is copied a logarithmic number of times (property)', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 400 }), fc.integer({ min: 1, max: 1 << 20 }), (sizes, first) => {
      const state: Simulated = { segments: [new SharedArrayBuffer(first)], contents: [[0]], copied: 0 };
      sizes.forEach((size, i) => {
        addBuild(state, i + 1, size);
        assert.ok(state.segments.length < MAX_SEGMENTS, `${state.segments.length} segments after build ${i + 1}`);
      });
      assert.deepEqual(state.contents.flat(), Array.from({ length: sizes.length + 1 }, (_, i) => i));
      const total = first + sizes.reduce((sum, s) => sum + s, 0);
      // Segments merge with others of like size, so a byte lands in a segment of about twice the size each time it is copied.
      const bound = total * (Math.log2(total) + 2);
      assert.ok(state.copied <= bound, `copied ${state.copied} bytes of ${total}`);
    }),
    { numRuns: 200 },
  );
});

test('no merge while the list is short; the newest two at least once it is long', () => {
  const of = (...sizes: number[]) => sizes.map((size) => new SharedArrayBuffer(size));
  assert.equal(segmentsToMerge(of(100)), 0);
  assert.equal(segmentsToMerge(of(...Array<number>(MAX_SEGMENTS - 2).fill(10))), 0);
  // A large oldest segment stays where it is while the newer ones together are smaller.
  assert.equal(segmentsToMerge(of(1000, ...Array<number>(MAX_SEGMENTS - 2).fill(10))), MAX_SEGMENTS - 2);
  // Sizes falling off fast: only the newest two merge.
  assert.equal(segmentsToMerge(of(1_000_000, 100_000, 10_000, 1000, 100, 10, 1)), 2);
  // Equal sizes: all of them.
  assert.equal(segmentsToMerge(of(...Array<number>(MAX_SEGMENTS - 1).fill(10))), MAX_SEGMENTS - 1);
});
