import { NOT_FOUND } from '../common/brand.js';
import { hashKeyBytes, hashQueryWords } from './hash.js';
import type { KeyIndex } from './key-index.js';

/**
 * The compact hashed index from VPA to VpaId, over the snapshot's `slots`,
 * `keyBytes` and `keyOffsets` (see snapshot-data.ts).
 *
 * `slots` is an open-addressing table of `capacity` pairs [hash32, id + 1]
 * (0 in the second word = empty), capacity a power of two, probed linearly
 * from `hash & (capacity - 1)`. Comparing the stored hash first makes it a
 * 32-bit fingerprint: a miss almost never reads key bytes, and a pair is 8
 * bytes, so a typical probe run stays within one 64-byte cache line.
 *
 * At 10M keys the arrays far exceed the CPU caches, so latency is memory
 * bound: a miss costs one random line (the probe run), a hit three in
 * sequence (probe run, then keyOffsets[id], then the key bytes).
 */

/**
 * Highest load (keys / capacity) a built table may have. Linear probing
 * inspects about (1 + 1/(1-a)^2)/2 slots per miss: 3.6 at 0.6, all in one
 * cache line of 8 pairs most of the time, against 8.5 (two lines) at 0.75.
 * Going to 0.5 instead would double the table for 10M keys (2^25 pairs,
 * 27 bytes per key) where 0.6 still fits 2^24 pairs (13.4 bytes per key).
 */
export const MAX_LOAD_FACTOR = 0.6;
/** One cache line of pairs; small tables gain nothing from being smaller. */
export const MIN_CAPACITY = 8;
/** 2^29 pairs is a 4 GiB table, and keeps slot word indexes (2i + 1) within int32. */
export const MAX_CAPACITY = 2 ** 29;
/** Most keys one table can hold at MAX_LOAD_FACTOR. */
export const MAX_KEYS = Math.floor(MAX_CAPACITY * MAX_LOAD_FACTOR);

/** Number of slot pairs for `count` keys: the smallest power of two keeping the load at most MAX_LOAD_FACTOR. */
export function slotCapacity(count: number): number {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`key count must be a whole number, got ${count}`);
  if (count > MAX_KEYS) throw new RangeError(`too many keys for one index: ${count} (at most ${MAX_KEYS})`);
  let capacity = MIN_CAPACITY;
  while (count > capacity * MAX_LOAD_FACTOR) capacity *= 2;
  return capacity;
}

/**
 * Lower-case ASCII keys into the snapshot key layout (key i becomes
 * `keyBytes[keyOffsets[i] .. keyOffsets[i+1])`). Throws RangeError for a key
 * with a non-ASCII char, which could never be matched.
 */
export function encodeKeys(keys: readonly string[]): { keyBytes: Uint8Array; keyOffsets: Uint32Array } {
  let total = 0;
  for (const key of keys) total += key.length;
  if (total > 0xffffffff) throw new RangeError(`keys too long in total for 32-bit offsets: ${total} bytes`);
  const keyBytes = new Uint8Array(total);
  const keyOffsets = new Uint32Array(keys.length + 1);
  let at = 0;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    for (let j = 0; j < key.length; j++) {
      const c = key.charCodeAt(j);
      if (c > 0x7f) throw new RangeError(`key ${i} is not ASCII: ${JSON.stringify(key)}`);
      keyBytes[at++] = c >= 65 && c <= 90 ? c | 32 : c;
    }
    keyOffsets[i + 1] = at;
  }
  return { keyBytes, keyOffsets };
}

/**
 * Build the slot table for keys 0..count-1 (ids in key order). Checks what
 * lookups rely on and throws RangeError when it does not hold: offsets
 * ascending within `keyBytes`, key bytes lower-cased ASCII, no duplicate
 * keys, and at most MAX_KEYS keys.
 */
export function buildSlots(keyBytes: Uint8Array, keyOffsets: Uint32Array, count: number): Uint32Array {
  const capacity = slotCapacity(count);
  if (keyOffsets.length < count + 1) {
    throw new RangeError(`keyOffsets has ${keyOffsets.length} entries, ${count + 1} needed for ${count} keys`);
  }
  for (let i = 0; i < count; i++) {
    if (keyOffsets[i]! > keyOffsets[i + 1]!) throw new RangeError(`keyOffsets not ascending at key ${i}`);
  }
  const bytesEnd = keyOffsets[count]!;
  if (bytesEnd > keyBytes.length) throw new RangeError(`keyOffsets run past keyBytes (${bytesEnd} > ${keyBytes.length})`);
  for (let i = keyOffsets[0]!; i < bytesEnd; i++) {
    const b = keyBytes[i]!;
    // A stored upper-case or non-ASCII byte would make its key unreachable.
    if (b > 0x7f || (b >= 65 && b <= 90)) {
      throw new RangeError(`key byte ${i} is not lower-cased ASCII (0x${b.toString(16)})`);
    }
  }

  const slots = new Uint32Array(capacity * 2);
  const mask = capacity - 1;
  for (let id = 0; id < count; id++) {
    const start = keyOffsets[id]!;
    const end = keyOffsets[id + 1]!;
    const hash = hashKeyBytes(keyBytes, start, end);
    let i = hash & mask;
    for (;;) {
      const p = i << 1;
      const other = slots[p + 1]!;
      if (other === 0) {
        slots[p] = hash;
        slots[p + 1] = id + 1;
        break;
      }
      if (slots[p] === hash && sameBytes(keyBytes, keyOffsets, other - 1, start, end)) {
        throw new RangeError(`duplicate key: ids ${other - 1} and ${id} are both ${JSON.stringify(decodeKey(keyBytes, start, end))}`);
      }
      i = (i + 1) & mask;
    }
  }
  return slots;
}

function sameBytes(keyBytes: Uint8Array, keyOffsets: Uint32Array, id: number, start: number, end: number): boolean {
  const s = keyOffsets[id]!;
  if (keyOffsets[id + 1]! - s !== end - start) return false;
  for (let j = 0; j < end - start; j++) {
    if (keyBytes[s + j] !== keyBytes[start + j]) return false;
  }
  return true;
}

const decoder = new TextDecoder();

function decodeKey(keyBytes: Uint8Array, start: number, end: number): string {
  return decoder.decode(keyBytes.subarray(start, end));
}

/** The production KeyIndex over snapshot arrays: no per-key objects, allocation-free lookups. */
export class VpaIndex implements KeyIndex {
  readonly size: number;
  /** Number of slot pairs, a power of two. */
  readonly capacity: number;
  /** Length of the longest key; longer queries are answered without hashing. */
  readonly maxKeyLength: number;
  // Plain fields: as fast as #private in measurements, and the hot loop copies them into locals anyway.
  private readonly slots: Uint32Array;
  private readonly keyBytes: Uint8Array;
  private readonly keyOffsets: Uint32Array;
  // Unaligned little-endian reads of key bytes, four at a time.
  private readonly keyView: DataView;
  private readonly mask: number;
  // The lower-cased query of the lookup in progress, packed as by hashQueryWords.
  private readonly words: Int32Array;

  /**
   * Wrap arrays from buildSlots or a loaded snapshot. Checks shapes and
   * offsets (one pass over keyOffsets) and that lookups terminate; the slot
   * contents are otherwise trusted to come from buildSlots over these keys.
   */
  constructor(slots: Uint32Array, keyBytes: Uint8Array, keyOffsets: Uint32Array) {
    const capacity = slots.length / 2;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > MAX_CAPACITY || (capacity & (capacity - 1)) !== 0) {
      throw new RangeError(`slots length must be twice a power of two up to ${MAX_CAPACITY}, got ${slots.length}`);
    }
    if (keyOffsets.length < 1) throw new RangeError('keyOffsets must have count + 1 entries');
    const size = keyOffsets.length - 1;
    if (size >= capacity) throw new RangeError(`${size} keys do not fit ${capacity} slots`);
    // Every probe run must end at an empty slot; in a table from buildSlots one is a few slots in.
    let empty = 0;
    while (empty < capacity && slots[2 * empty + 1] !== 0) empty++;
    if (empty === capacity) throw new RangeError('slot table has no empty slot');
    let maxKeyLength = 0;
    for (let i = 0; i < size; i++) {
      const length = keyOffsets[i + 1]! - keyOffsets[i]!;
      if (length < 0) throw new RangeError(`keyOffsets not ascending at key ${i}`);
      if (length > maxKeyLength) maxKeyLength = length;
    }
    if (keyOffsets[size]! > keyBytes.length) throw new RangeError('keyOffsets run past keyBytes');
    this.size = size;
    this.capacity = capacity;
    this.maxKeyLength = maxKeyLength;
    this.slots = slots;
    this.keyBytes = keyBytes;
    this.keyOffsets = keyOffsets;
    this.keyView = new DataView(keyBytes.buffer, keyBytes.byteOffset, keyBytes.byteLength);
    this.mask = capacity - 1;
    this.words = new Int32Array((maxKeyLength + 3) >>> 2);
  }

  /** Encode, hash and wrap `keys` (key i gets id i); for tests, tools and benchmarks. */
  static fromKeys(keys: readonly string[]): VpaIndex {
    const { keyBytes, keyOffsets } = encodeKeys(keys);
    return new VpaIndex(buildSlots(keyBytes, keyOffsets, keys.length), keyBytes, keyOffsets);
  }

  /** The VpaId of `query` matched ignoring ASCII case, or NOT_FOUND. No allocation. */
  lookup(query: string): number {
    const length = query.length;
    // Also bounds the query to the words scratch.
    if (length > this.maxKeyLength) return NOT_FOUND;
    const words = this.words;
    const hash = hashQueryWords(query, words);
    if (hash < 0) return NOT_FOUND; // non-ASCII: no key can match
    const slots = this.slots;
    const mask = this.mask;
    let i = hash & mask;
    for (;;) {
      const p = i << 1;
      const v = slots[p + 1]!;
      if (v === 0) return NOT_FOUND;
      if (slots[p] === hash) {
        const id = v - 1;
        const offsets = this.keyOffsets;
        const start = offsets[id]!;
        if (offsets[id + 1]! - start === length && this.matchesWords(start, length)) return id;
      }
      i = (i + 1) & mask;
    }
  }

  /** Whether the key bytes at `start` equal the `length` chars packed in `words` by the current lookup. */
  private matchesWords(start: number, length: number): boolean {
    const view = this.keyView;
    const words = this.words;
    const blocks = length >>> 2;
    for (let w = 0; w < blocks; w++) {
      if (view.getInt32(start + (w << 2), true) !== words[w]) return false;
    }
    const rest = length & 3;
    if (rest === 0) return true;
    const bytes = this.keyBytes;
    const at = start + (blocks << 2);
    let k = bytes[at]!;
    if (rest > 1) k |= bytes[at + 1]! << 8;
    if (rest > 2) k |= bytes[at + 2]! << 16;
    return k === words[blocks];
  }

  /** The VpaId of the lower-cased key bytes `bytes[start..end)` (compared exactly), or NOT_FOUND. */
  lookupBytes(bytes: Uint8Array, start: number, end: number): number {
    const hash = hashKeyBytes(bytes, start, end);
    const slots = this.slots;
    const mask = this.mask;
    const length = end - start;
    let i = hash & mask;
    for (;;) {
      const p = i << 1;
      const v = slots[p + 1]!;
      if (v === 0) return NOT_FOUND;
      if (slots[p] === hash) {
        const id = v - 1;
        const offsets = this.keyOffsets;
        const s = offsets[id]!;
        if (offsets[id + 1]! - s === length) {
          const keyBytes = this.keyBytes;
          let j = 0;
          while (j < length && keyBytes[s + j] === bytes[start + j]) j++;
          if (j === length) return id;
        }
      }
      i = (i + 1) & mask;
    }
  }

  /** The stored (lower-cased) key of `id`. Allocates; not for the lookup path. */
  keyOf(id: number): string {
    if (!Number.isInteger(id) || id < 0 || id >= this.size) {
      throw new RangeError(`no key with id ${id} (size ${this.size})`);
    }
    return decodeKey(this.keyBytes, this.keyOffsets[id]!, this.keyOffsets[id + 1]!);
  }
}
