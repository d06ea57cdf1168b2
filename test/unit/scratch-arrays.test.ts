import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScratchArrays, freshArrays } from '../../src/common/scratch-arrays.js';

const KiB = 1024;

test('arrays taken between two resets are zeroed, aligned and do not overlap', () => {
  const scratch = new ScratchArrays({ chunkBytes: 4 * KiB });
  // An odd-length byte array first: the next array must still start on its element boundary.
  const bytes = scratch.zeroed(Uint8Array, 13);
  const doubles = scratch.zeroed(Float64Array, 100);
  const words = scratch.zeroed(Uint32Array, 333);
  const signed = scratch.zeroed(Int32Array, 7);
  for (const array of [bytes, doubles, words, signed]) {
    assert.equal(array.byteOffset % 8, 0);
    assert.ok(array.every((value) => value === 0));
  }
  bytes.fill(0xaa);
  doubles.fill(1.5);
  words.fill(0xdeadbeef);
  signed.fill(-7);
  assert.ok(bytes.every((value) => value === 0xaa));
  assert.ok(doubles.every((value) => value === 1.5));
  assert.ok(words.every((value) => value === 0xdeadbeef));
  assert.ok(signed.every((value) => value === -7));
});

test('after a reset the same memory is handed out again, cleared', () => {
  const scratch = new ScratchArrays({ chunkBytes: 64 * KiB });
  const first = scratch.zeroed(Uint32Array, 1000).fill(42);
  const retained = scratch.retainedBytes;
  scratch.reset();
  const second = scratch.zeroed(Uint32Array, 1000);
  assert.equal(second.buffer, first.buffer);
  assert.equal(second.byteOffset, first.byteOffset);
  assert.ok(second.every((value) => value === 0), 'a reused array reads as new');
  // The same work again takes no more memory.
  for (let round = 0; round < 5; round++) {
    scratch.reset();
    scratch.zeroed(Float64Array, 2000);
    scratch.zeroed(Uint8Array, 999);
  }
  assert.equal(scratch.retainedBytes, retained);
});

test('an array reaching past the memory used before is zero throughout', () => {
  const scratch = new ScratchArrays({ chunkBytes: 64 * KiB });
  scratch.zeroed(Uint8Array, 3).fill(1);
  scratch.zeroed(Float64Array, 100).fill(-1);
  scratch.reset();
  // Starts over what the first task wrote and ends in memory no task had.
  const wider = scratch.zeroed(Uint32Array, 1000);
  assert.equal(wider.byteOffset, 0);
  assert.ok(wider.every((value) => value === 0));
  wider.fill(7);
  scratch.reset();
  assert.ok(scratch.zeroed(Uint8Array, 5000).every((value) => value === 0));
});

test('an array larger than a chunk gets a chunk of its own with room to grow into', () => {
  const scratch = new ScratchArrays({ chunkBytes: 4 * KiB });
  const large = scratch.zeroed(Uint8Array, 1024 * KiB);
  assert.ok(large.buffer.byteLength >= 1024 * KiB + 128 * KiB);
  const retained = scratch.retainedBytes;
  scratch.reset();
  // The next build's data is a little larger: it still fits the chunk it had.
  const larger = scratch.zeroed(Uint8Array, 1100 * KiB);
  assert.equal(larger.buffer, large.buffer);
  assert.equal(scratch.retainedBytes, retained);
});

test('chunks unused for idleResets resets in a row are let go', () => {
  const scratch = new ScratchArrays({ chunkBytes: 4 * KiB, idleResets: 3 });
  const large = scratch.zeroed(Uint8Array, 256 * KiB);
  // More than the large chunk has left: a chunk of its own.
  const small = scratch.zeroed(Uint8Array, 40 * KiB);
  assert.notEqual(small.buffer, large.buffer);
  for (let reset = 0; reset < 3; reset++) {
    scratch.reset();
    // Only the small work since: it takes the chunk that fits it best, and the large one idles.
    assert.equal(scratch.zeroed(Uint8Array, 40 * KiB).buffer, small.buffer);
  }
  scratch.reset();
  assert.equal(scratch.retainedBytes, small.buffer.byteLength);
  for (let reset = 0; reset < 3; reset++) scratch.reset();
  assert.equal(scratch.retainedBytes, 0);
});

test('a chunk whose buffer was transferred away is dropped, not reused', () => {
  const scratch = new ScratchArrays({ chunkBytes: 4 * KiB });
  const array = scratch.zeroed(Uint8Array, 100);
  structuredClone(array.buffer, { transfer: [array.buffer] });
  // Before the next reset, too: not even an empty array is placed in it.
  const empty = scratch.zeroed(Float64Array, 0);
  assert.notEqual(empty.buffer, array.buffer);
  scratch.reset();
  // Only the chunk made for the empty array is left.
  assert.equal(scratch.retainedBytes, 4 * KiB);
  assert.equal(scratch.zeroed(Uint8Array, 100).length, 100);
});

test('bad sizes and options are RangeErrors', () => {
  const scratch = new ScratchArrays();
  assert.throws(() => scratch.zeroed(Uint8Array, -1), RangeError);
  assert.throws(() => scratch.zeroed(Uint8Array, 1.5), RangeError);
  assert.throws(() => new ScratchArrays({ chunkBytes: 10 }), RangeError);
  assert.throws(() => new ScratchArrays({ idleResets: 0 }), RangeError);
  assert.equal(scratch.zeroed(Float64Array, 0).length, 0);
});

test('freshArrays gives each array a zeroed buffer of its own', () => {
  const a = freshArrays.zeroed(Uint16Array, 10);
  const b = freshArrays.zeroed(Uint16Array, 10);
  assert.notEqual(a.buffer, b.buffer);
  assert.equal(a.buffer.byteLength, 20);
  assert.ok(a.every((value) => value === 0));
});
