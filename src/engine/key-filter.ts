import type { ArrayAllocator } from '../common/scratch-arrays.js';
import { hashKeyBytes } from './hash.js';

/**
 * A Bloom filter over the keys of a live delta, by the index's own hash
 * (hash.ts), so that a lookup beside a delta tests a bit or two of a small
 * array, likely in cache, instead of probing the delta's index, which at
 * 100,000 VPAs is larger than the caches keep for it under load: most
 * queries name VPAs the delta does not hold (bench/MEASUREMENTS.md, "The live
 * delta"). Eight bits a key and two bits a key set: about 5 % of those
 * queries still probe. No false negatives: a key of the delta always passes.
 */
export const FILTER_BITS_PER_KEY = 8;

/** The filter of keys `keyBytes[keyOffsets[i]..keyOffsets[i+1])`, i < count: a power of two of bits, at least 1,024. */
export function buildKeyFilter(keyBytes: Uint8Array, keyOffsets: Uint32Array, count: number, allocate: ArrayAllocator): Uint32Array {
  let bits = 1024;
  while (bits < count * FILTER_BITS_PER_KEY) bits *= 2;
  const filter = allocate.zeroed(Uint32Array, bits >>> 5);
  const mask = bits - 1;
  for (let i = 0; i < count; i++) {
    const hash = hashKeyBytes(keyBytes, keyOffsets[i]!, keyOffsets[i + 1]!);
    const a = hash & mask;
    const b = secondBit(hash) & mask;
    filter[a >>> 5]! |= 1 << (a & 31);
    filter[b >>> 5]! |= 1 << (b & 31);
  }
  return filter;
}

/** Whether a key with index hash `hash` may be in the filter (false: it is not). */
export function mayHold(filter: Uint32Array, hash: number): boolean {
  const mask = filter.length * 32 - 1;
  const a = hash & mask;
  if ((filter[a >>> 5]! & (1 << (a & 31))) === 0) return false;
  const b = secondBit(hash) & mask;
  return (filter[b >>> 5]! & (1 << (b & 31))) !== 0;
}

/** A second position from the same hash: its bits mixed (a multiply and a rotate), independent enough of its low bits. */
function secondBit(hash: number): number {
  const mixed = Math.imul(hash, 0x9e3779b1);
  return (mixed >>> 15) | (mixed << 17);
}
