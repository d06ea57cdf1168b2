/**
 * Typed arrays in shared memory. A snapshot assembled this way can be posted
 * to the serving threads as it is: every thread reads the one copy, and
 * nothing is copied to get it there.
 */

import type { TypedArrayType } from '../common/scratch-arrays.js';

/** A zeroed array of `length` elements of `type` over a SharedArrayBuffer of its own. */
export function sharedArray<T>(type: TypedArrayType<T>, length: number): T {
  return new type(new SharedArrayBuffer(length * type.BYTES_PER_ELEMENT) as unknown as ArrayBuffer, 0, length);
}
