import { NOT_FOUND } from '../common/brand.js';
import { freshArrays, type ArrayAllocator } from '../common/scratch-arrays.js';
import { hashKeyBytes } from './hash.js';
import type { SnapshotData } from './snapshot-data.js';

/**
 * A snapshot's table from url bytes to url id (`urlSlots`), so that evidence
 * arriving after the build can be matched with the urls the snapshot already
 * holds.
 *
 * Open addressing with linear probing over a power-of-two number of slots
 * (urlSlotCapacity: at least URL_SLOTS_MIN_CAPACITY and twice the url count,
 * so at most half the slots are full and a probe always meets an empty one).
 * A url's home slot is `hashKeyBytes(its UTF-8 bytes) & (capacity - 1)`; a
 * slot holds url id + 1, or 0 when empty. Urls are inserted in id order, so
 * the table depends only on the urls. The key bytes are not copied: a probe
 * compares against `urlBytes` through `urlOffsets`. Costs 4 bytes a slot, 8
 * to 16 a url.
 */

/** Fewest slots of a table, even of one with no urls. */
export const URL_SLOTS_MIN_CAPACITY = 16;
/** Most urls one table holds: its capacity stays within 2^31, so slot numbers stay within int32. */
export const URL_SLOTS_MAX_URLS = 2 ** 30;

/** The number of slots for `urlCount` urls: the smallest power of two of at least URL_SLOTS_MIN_CAPACITY and 2 × urlCount. */
export function urlSlotCapacity(urlCount: number): number {
  if (!Number.isSafeInteger(urlCount) || urlCount < 0) throw new RangeError(`url count must be a whole number, got ${urlCount}`);
  if (urlCount > URL_SLOTS_MAX_URLS) throw new RangeError(`too many urls for one url table: ${urlCount} (at most ${URL_SLOTS_MAX_URLS})`);
  let capacity = URL_SLOTS_MIN_CAPACITY;
  while (capacity < 2 * urlCount) capacity *= 2;
  return capacity;
}

export type UrlTable = Pick<SnapshotData, 'urlSlots' | 'urlBytes' | 'urlOffsets'>;

/**
 * The url id of the url whose UTF-8 bytes are `bytes[start..end)`, or
 * NOT_FOUND. Urls are compared byte for byte (no case folding, no
 * normalisation), as the build interns them. Allocation-free.
 */
export function findUrl(data: UrlTable, bytes: Uint8Array, start: number, end: number): number {
  const slots = data.urlSlots;
  const urlBytes = data.urlBytes;
  const offsets = data.urlOffsets;
  const mask = slots.length - 1;
  const length = end - start;
  let i = hashKeyBytes(bytes, start, end) & mask;
  for (;;) {
    const entry = slots[i]!;
    if (entry === 0) return NOT_FOUND;
    const id = entry - 1;
    const from = offsets[id]!;
    if (offsets[id + 1]! - from === length && sameBytes(urlBytes, from, bytes, start, length)) return id;
    i = (i + 1) & mask;
  }
}

/**
 * The urlSlots of the urls `urlOffsets` delimits in `urlBytes` (url i is
 * `urlBytes[urlOffsets[i]..urlOffsets[i+1])`), in an array from `allocate`.
 * Throws RangeError when two urls are equal: the second could never be found.
 */
export function buildUrlSlots(urlBytes: Uint8Array, urlOffsets: Uint32Array, allocate: ArrayAllocator = freshArrays): Uint32Array {
  const urlCount = Math.max(0, urlOffsets.length - 1);
  const capacity = urlSlotCapacity(urlCount);
  const slots = allocate.zeroed(Uint32Array, capacity);
  const mask = capacity - 1;
  for (let id = 0; id < urlCount; id++) {
    const start = urlOffsets[id]!;
    const end = urlOffsets[id + 1]!;
    const length = end - start;
    let i = hashKeyBytes(urlBytes, start, end) & mask;
    for (;;) {
      const entry = slots[i]!;
      if (entry === 0) break;
      const other = entry - 1;
      const from = urlOffsets[other]!;
      if (urlOffsets[other + 1]! - from === length && sameBytes(urlBytes, from, urlBytes, start, length)) {
        throw new RangeError(`duplicate url: ids ${other} and ${id} are the same ${length} bytes`);
      }
      i = (i + 1) & mask;
    }
    slots[i] = id + 1;
  }
  return slots;
}

/**
 * What is wrong with a snapshot's urlSlots, or undefined: a capacity that is
 * not a power of two of at least URL_SLOTS_MIN_CAPACITY and twice the url
 * count, a slot naming no url, a url in no slot or in two, or a url findUrl
 * does not find (out of its probe run, or behind an equal url). Linear in
 * the slots and the url bytes; allocates nothing. urlOffsets must already be
 * known to ascend within urlBytes.
 */
export function checkUrlSlots(data: UrlTable): string | undefined {
  const slots = data.urlSlots;
  const offsets = data.urlOffsets;
  const urlCount = offsets.length - 1;
  const capacity = slots.length;
  if (!isUrlSlotCapacity(capacity, urlCount)) {
    return `urlSlots has ${capacity} slots for ${urlCount} urls; expected a power of two, at least ${URL_SLOTS_MIN_CAPACITY} and twice the urls`;
  }
  let occupied = 0;
  for (let i = 0; i < capacity; i++) {
    const entry = slots[i]!;
    if (entry === 0) continue;
    if (entry > urlCount) return `urlSlots[${i}] names url ${entry - 1}, but there are ${urlCount}`;
    occupied++;
  }
  // With as many occupied slots as urls, each url found in its own slot is in exactly one.
  if (occupied !== urlCount) return `urlSlots holds ${occupied} urls, expected ${urlCount}`;
  const urlBytes = data.urlBytes;
  for (let id = 0; id < urlCount; id++) {
    const found = findUrl(data, urlBytes, offsets[id]!, offsets[id + 1]!);
    if (found !== id) return `urlSlots does not lead to url ${id}${found === NOT_FOUND ? '' : ` (its bytes find url ${found})`}`;
  }
  return undefined;
}

/** Whether `capacity` slots are a valid url table for `urlCount` urls (any power of two from urlSlotCapacity up). */
export function isUrlSlotCapacity(capacity: number, urlCount: number): boolean {
  return (
    capacity >= URL_SLOTS_MIN_CAPACITY &&
    capacity >= 2 * urlCount &&
    capacity <= 2 * URL_SLOTS_MAX_URLS &&
    (capacity & (capacity - 1)) === 0
  );
}

function sameBytes(a: Uint8Array, aStart: number, b: Uint8Array, bStart: number, length: number): boolean {
  for (let k = 0; k < length; k++) {
    if (a[aStart + k] !== b[bStart + k]) return false;
  }
  return true;
}
