/**
 * Typed arrays in shared memory. A snapshot assembled this way can be posted
 * to the serving threads as it is: every thread reads the one copy, and
 * nothing is copied to get it there.
 *
 * Each array has a SharedArrayBuffer of its own, so that once a snapshot is
 * replaced and no thread can read it any more, its buffers can carry the
 * arrays of a later snapshot (ReusedSharedArrays) instead of being unmapped
 * while the build maps as many new ones. A page touched for the first time
 * is what costs on this kind of VM (scratch-arrays.ts), and a large
 * snapshot is a great many of them (see bench/MEASUREMENTS.md, 'First
 * touch of a page').
 */

import type { ArrayAllocator, TypedArrayType } from '../common/scratch-arrays.js';

/**
 * Arrays from here up get a buffer with a sixteenth to spare: the next
 * build's snapshot is usually a little larger, and a buffer too small for
 * its array cannot carry it. The spare bytes are never touched, so they
 * take address space and no memory (a buffer this large is a mapping of its
 * own, zero-filled on demand). Smaller arrays get their exact size.
 */
const SPARE_FROM_BYTES = 64 * 1024;
const PAGE_BYTES = 4096;

/** A zeroed array of `length` elements of `type` over a SharedArrayBuffer of its own. */
export function sharedArray<T>(type: TypedArrayType<T>, length: number): T {
  return new type(new SharedArrayBuffer(capacityFor(length * type.BYTES_PER_ELEMENT)) as unknown as ArrayBuffer, 0, length);
}

/** Each array in a new SharedArrayBuffer of its own (sharedArray). */
export const freshSharedArrays: ArrayAllocator = { zeroed: sharedArray };

function capacityFor(bytes: number): number {
  if (bytes < SPARE_FROM_BYTES) return bytes;
  return Math.ceil((bytes + bytes / 16) / PAGE_BYTES) * PAGE_BYTES;
}

/**
 * Shared arrays over buffers a replaced snapshot no longer needs, one array
 * per buffer: each array takes the smallest buffer it fits in, if it fills
 * at least half of it (a small array must not pin a large buffer's
 * memory), cleared over its own length; an array no buffer suits gets a new
 * one, as sharedArray. The caller vouches that nothing reads the buffers
 * any more (RetiredSnapshots waits for every serving thread to drop them).
 */
export class ReusedSharedArrays implements ArrayAllocator {
  readonly #free: SharedArrayBuffer[];
  #reusedBytes = 0;
  #freshBytes = 0;

  constructor(buffers: readonly SharedArrayBuffer[]) {
    // Smallest first: the first that fits is the best fit.
    this.#free = [...new Set(buffers)].sort((a, b) => a.byteLength - b.byteLength);
  }

  zeroed<T>(type: TypedArrayType<T>, length: number): T {
    if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`length must be a non-negative integer, got ${length}`);
    const bytes = length * type.BYTES_PER_ELEMENT;
    const at = bytes === 0 ? -1 : this.#free.findIndex((buffer) => buffer.byteLength >= bytes);
    if (at < 0 || bytes < this.#free[at]!.byteLength / 2) {
      this.#freshBytes += bytes;
      return sharedArray(type, length);
    }
    const [buffer] = this.#free.splice(at, 1) as [SharedArrayBuffer];
    // What the replaced snapshot left there, cleared as a new array would be; past `bytes` it is never read.
    new Uint8Array(buffer, 0, bytes).fill(0);
    this.#reusedBytes += bytes;
    return new type(buffer as unknown as ArrayBuffer, 0, length);
  }

  /** Let go of the buffers no array took, so they can be freed; how many there were. */
  releaseUnused(): number {
    const unused = this.#free.length;
    this.#free.length = 0;
    return unused;
  }

  /** Bytes of arrays placed in reused buffers so far. */
  get reusedBytes(): number {
    return this.#reusedBytes;
  }

  /** Bytes of arrays that needed new buffers so far. */
  get freshBytes(): number {
    return this.#freshBytes;
  }
}
