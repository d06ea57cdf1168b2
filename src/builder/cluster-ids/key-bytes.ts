/** Byte helpers for cluster id keys: hashing, ordering, UTF-8 and typed-array views. */
import { fmix32 } from '../../engine/hash.js';

/** FNV-1a with a murmur3 finaliser, so low bits (the table slot) are well mixed. */
export function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
  return fmix32(h);
}

export const FNV_OFFSET = 0x811c9dc5;
export const FNV_PRIME = 0x01000193;

/** Four key bytes from `start` as a big-endian uint32, zero-padded past `end`. */
export function keyWord(blob: Uint8Array, start: number, end: number): number {
  let word = 0;
  for (let i = start; i < start + 4; i++) word = (word << 8) | (i < end ? blob[i]! : 0);
  return word >>> 0;
}

/** Lexicographic order of two entries' key bytes. */
export function compareEntries(blob: Uint8Array, keyOffsets: Uint32Array, a: number, b: number): number {
  return compareBytes(blob, keyOffsets[a]!, keyOffsets[a + 1]!, blob, keyOffsets[b]!, keyOffsets[b + 1]!);
}

export function compareBytes(a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): number {
  const aLength = aEnd - aStart;
  const bLength = bEnd - bStart;
  const length = aLength < bLength ? aLength : bLength;
  for (let i = 0; i < length; i++) {
    const d = a[aStart + i]! - b[bStart + i]!;
    if (d !== 0) return d;
  }
  return aLength - bLength;
}

const encoder = new TextEncoder();
export const decoder = new TextDecoder();

/** UTF-8 encode `key` at `at` (room for key.length * 3 bytes is assured); returns the end. */
export function encodeInto(key: string, target: Uint8Array, at: number): number {
  // VPA keys are ASCII: copy char codes, and only hand other text to TextEncoder.
  const length = key.length;
  for (let i = 0; i < length; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x80) return at + encoder.encodeInto(key, target.subarray(at)).written;
    target[at + i] = c;
  }
  return at + length;
}

export function grow(blob: Uint8Array, needed: number): Uint8Array<ArrayBuffer> {
  let capacity = blob.length * 2;
  while (capacity < needed) capacity *= 2;
  const grown = new Uint8Array(capacity);
  grown.set(blob);
  return grown;
}

export function asBytes(array: Uint32Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

/** A plain Uint8Array view (msgpackr hands back Buffers). */
export function plainBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Reinterpret little-endian uint32 bytes, copying when the view is misaligned. */
export function uint32FromBytes(bytes: Uint8Array): Uint32Array {
  if (bytes.byteOffset % 4 === 0) return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  // A fresh copy: Buffer#slice would share (and keep) the misaligned memory.
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Uint32Array(copy.buffer);
}

