/**
 * Typed arrays in shared memory. A snapshot assembled this way can be posted
 * to the serving threads as it is: every thread reads the one copy, and
 * nothing is copied to get it there.
 */

interface TypedArrayType<T> {
  // The constructors' signatures name ArrayBuffer only; shared memory is fine.
  new (buffer: ArrayBuffer, byteOffset: number, length: number): T;
  readonly BYTES_PER_ELEMENT: number;
}

/** A zeroed array of `length` elements of `type` over a SharedArrayBuffer of its own. */
export function sharedArray<T>(type: TypedArrayType<T>, length: number): T {
  return new type(new SharedArrayBuffer(length * type.BYTES_PER_ELEMENT) as unknown as ArrayBuffer, 0, length);
}
