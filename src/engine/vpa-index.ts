import { NOT_FOUND } from '../common/brand.js';
import { hashKeyBytes, hashQueryWords } from './hash.js';
import type { KeyIndex } from './key-index.js';

/**
 * The compact hashed index from VPA to VpaId, over the snapshot's `slots`,
 * `keyBytes` and `keyOffsets` (see snapshot-data.ts).
 *
 * `slots` is an open-addressing table of `capacity` slots, capacity a power
 * of two, probed linearly from `hash & (capacity - 1)`. It is one
 * Uint32Array of SLOT_WORDS * capacity words in two parts:
 * - words [0, capacity): the tag of each slot, 0 when the slot is empty. A
 *   tag (slotTag) is the key's hash with its low byte replaced by a code for
 *   the key length; the low hash bits mostly repeat the slot position anyway,
 *   so the tag is still a fingerprint, and never 0.
 * - words [capacity, 3 * capacity): a pair per slot, [id + 1, key start],
 *   the key start being keyOffsets[id].
 *
 * At 10M keys the arrays far exceed the CPU caches, so latency is memory
 * bound. A miss reads tags only, 16 to a 64-byte line: one random line
 * (sometimes spilling into the next), from a tag array of 4 bytes a slot. A
 * hit waits for two random lines in sequence: the tag line, then the key
 * bytes. The slot's pair sits in a third line, but its address depends only
 * on the slot number, so the CPU fetches it while the tag line is on its
 * way. With the length code and the key start a hit compares the key without
 * reading keyOffsets, and as an equal tag almost always means an equal key,
 * it rarely reads the bytes of another key.
 */

/** Words per slot: a tag, and a pair [id + 1, key start]. */
export const SLOT_WORDS = 3;
/**
 * Keys of TAG_LONG_KEY bytes or more share one length code in the tag, so
 * for them a lookup compares the length against keyOffsets too. Below it the
 * code is length + 1, keeping every tag non-zero.
 */
export const TAG_LONG_KEY = 254;

/** The tag a slot stores for a key with this hash and length: a non-zero uint32. */
export function slotTag(hash: number, length: number): number {
  return ((hash & 0xffffff00) | tagLengthCode(length)) >>> 0;
}

/** The length code in a tag: min(length, TAG_LONG_KEY) + 1. */
function tagLengthCode(length: number): number {
  return length < TAG_LONG_KEY ? length + 1 : TAG_LONG_KEY + 1;
}

/**
 * Highest load (keys / capacity) a built table may have. Linear probing
 * inspects about (1 + 1/(1-a)^2)/2 slots per miss, 6.1 at 0.7 (3.6 at 0.6),
 * but a probe reads tags, 16 to a cache line, so a miss still costs one
 * random line: at 11.5M keys, 2^24 slots (load 0.69) measured no slower
 * than 2^25 (load 0.34). Tables are sized to a power of two, so the load of
 * a table lies in (0.35, 0.7] and its slots take 12 / load bytes per key:
 * 17 to 34 (20.1 at 10M keys). At 0.75 misses began to slow down.
 */
export const MAX_LOAD_FACTOR = 0.7;
/** Small tables gain nothing from being smaller. */
export const MIN_CAPACITY = 8;
/** 2^29 slots is a 6 GiB table, and keeps slot word indexes (below 3 * 2^29) within int32. */
export const MAX_CAPACITY = 2 ** 29;
/** Most keys one table can hold at MAX_LOAD_FACTOR. */
export const MAX_KEYS = Math.floor(MAX_CAPACITY * MAX_LOAD_FACTOR);

/** Number of slots for `count` keys: the smallest power of two keeping the load at most MAX_LOAD_FACTOR. */
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

  const mask = capacity - 1;
  const hashes = new Uint32Array(count);
  for (let id = 0; id < count; id++) hashes[id] = hashKeyBytes(keyBytes, keyOffsets[id]!, keyOffsets[id + 1]!);
  const slots = new Uint32Array(capacity * SLOT_WORDS);
  const tags = slots.subarray(0, capacity);
  const pairs = slots.subarray(capacity);
  // Inserting in id order writes all over a table far larger than the CPU
  // caches, a cache miss or two per key. Inserted in order of home slot, the
  // writes sweep the table once.
  const order = idsBySlotRegion(hashes, capacity);
  for (let k = 0; k < count; k++) {
    const id = order[k]!;
    const start = keyOffsets[id]!;
    const end = keyOffsets[id + 1]!;
    const hash = hashes[id]!;
    const tag = slotTag(hash, end - start);
    let i = hash & mask;
    for (;;) {
      const t = tags[i]!;
      if (t === 0) {
        tags[i] = tag;
        pairs[2 * i] = id + 1;
        pairs[2 * i + 1] = start;
        break;
      }
      if (t === tag && sameBytes(keyBytes, keyOffsets, pairs[2 * i]! - 1, start, end)) {
        const other = pairs[2 * i]! - 1;
        throw new RangeError(`duplicate key: ids ${Math.min(id, other)} and ${Math.max(id, other)} are both ${JSON.stringify(decodeKey(keyBytes, start, end))}`);
      }
      i = (i + 1) & mask;
    }
  }
  return slots;
}

/**
 * Ids ordered by the region of the table their home slot lies in (at most
 * 2^16 regions, ids ascending within one), by counting sort. The table a
 * build makes depends only on this order, which depends only on the keys.
 */
function idsBySlotRegion(hashes: Uint32Array, capacity: number): Uint32Array {
  const mask = capacity - 1;
  const shift = Math.max(0, Math.log2(capacity) - 16);
  const regions = capacity >>> shift;
  const starts = new Uint32Array(regions + 1);
  for (let id = 0; id < hashes.length; id++) starts[((hashes[id]! & mask) >>> shift) + 1]!++;
  for (let r = 0; r < regions; r++) starts[r + 1]! += starts[r]!;
  const order = new Uint32Array(hashes.length);
  for (let id = 0; id < hashes.length; id++) order[starts[(hashes[id]! & mask) >>> shift]!++] = id;
  return order;
}

/**
 * Check that `slots` is the table buildSlots makes for these keys, except
 * for the hash bits of the tags (checking those means hashing every key):
 * one occupied slot per key, each naming a distinct id below
 * `keyOffsets.length - 1` with that key's start and length code. Lookups
 * trust these (a hit returns the id of the slot whose key bytes matched), so
 * a snapshot loader runs this once. Returns what is wrong, or undefined.
 *
 * Reading keyOffsets[id] for every slot would be a random read per key
 * (0.5 to 2.5 s measured at 10M keys), so it compares sums instead, each
 * computed in one sequential pass (0.3 s): two 32-bit sums of hashes of
 * (id, key start, length code), over the occupied slots and over the ids
 * from keyOffsets. Only when they differ does it look for the slot at fault,
 * to say which.
 */
export function checkSlots(slots: Uint32Array, keyBytes: Uint8Array, keyOffsets: Uint32Array): string | undefined {
  const count = keyOffsets.length - 1;
  const capacity = slots.length / SLOT_WORDS;
  if (count < 0 || !Number.isInteger(capacity)) return 'slots or keyOffsets have the wrong shape';
  const tags = slots.subarray(0, capacity);
  const pairs = slots.subarray(capacity);
  // Without branches: occupancy is random, so a branch would mispredict on a large share of the slots.
  let occupied = 0;
  let highest = 0;
  let low = 0;
  let high = 0;
  for (let i = 0; i < capacity; i++) {
    const t = tags[i]!;
    const used = (t | -t) >> 31; // -1 for every non-zero 32-bit t, else 0
    occupied -= used;
    const v = (pairs[2 * i]! & used) >>> 0;
    highest = v > highest ? v : highest;
    const h = entryHash(v, pairs[2 * i + 1]!, t & 0xff);
    low = (low + (h & used)) | 0;
    high = (high + (mix32(h ^ 0x2545f491) & used)) | 0;
  }
  if (highest > count) return `a slot names VPA ${highest - 1}, but there are ${count}`;
  if (occupied !== count) return `slots hold ${occupied} VPAs, expected ${count}`;

  let expectedLow = 0;
  let expectedHigh = 0;
  for (let id = 0; id < count; id++) {
    const start = keyOffsets[id]!;
    const h = entryHash(id + 1, start, tagLengthCode(keyOffsets[id + 1]! - start));
    expectedLow = (expectedLow + h) | 0;
    expectedHigh = (expectedHigh + mix32(h ^ 0x2545f491)) | 0;
  }
  if (low === expectedLow && high === expectedHigh) return undefined;
  return findBadSlot(tags, pairs, keyBytes, keyOffsets) ?? 'slots do not match keyOffsets';
}

/** A hash of one slot's contents, as checkSlots sums them. */
function entryHash(v: number, start: number, lengthCode: number): number {
  return mix32(mix32(mix32(v ^ 0x5bd1e995) ^ start) ^ lengthCode);
}

/** The MurmurHash3 finaliser: every input bit affects every output bit. */
function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The first slot that disagrees with keyOffsets, described; slow (a random read per key). */
function findBadSlot(tags: Uint32Array, pairs: Uint32Array, keyBytes: Uint8Array, keyOffsets: Uint32Array): string | undefined {
  const count = keyOffsets.length - 1;
  const seen = new Uint8Array((count + 7) >>> 3);
  for (let i = 0; i < tags.length; i++) {
    const t = tags[i]!;
    if (t === 0) continue;
    const v = pairs[2 * i]!;
    if (v === 0) return `slot ${i} is occupied but names no VPA`;
    const id = v - 1;
    const bit = 1 << (id & 7);
    if ((seen[id >>> 3]! & bit) !== 0) return `VPA ${id} has two slots`;
    seen[id >>> 3] = seen[id >>> 3]! | bit;
    const start = keyOffsets[id]!;
    const length = keyOffsets[id + 1]! - start;
    const slotStart = pairs[2 * i + 1]!;
    if (slotStart !== start) return `slot ${i} gives VPA ${id} key start ${slotStart}, keyOffsets says ${start}`;
    if ((t & 0xff) !== tagLengthCode(length)) {
      return `slot ${i} gives VPA ${id} key length code ${t & 0xff}, keyOffsets says length ${length}`;
    }
    if (start + length > keyBytes.length) return `VPA ${id}'s key runs past keyBytes`;
  }
  return undefined;
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

/**
 * The length of the longest key (keyOffsets must ascend; throws RangeError
 * where it does not). One pass over keyOffsets: done where a snapshot is
 * loaded, so serving threads can skip it (SnapshotData.maxKeyLength).
 */
export function longestKey(keyOffsets: Uint32Array): number {
  let longest = 0;
  for (let i = 0; i + 1 < keyOffsets.length; i++) {
    const length = keyOffsets[i + 1]! - keyOffsets[i]!;
    if (length < 0) throw new RangeError(`keyOffsets not ascending at key ${i}`);
    if (length > longest) longest = length;
  }
  return longest;
}

/** The production KeyIndex over snapshot arrays: no per-key objects, allocation-free lookups. */
export class VpaIndex implements KeyIndex {
  readonly size: number;
  /** Number of slots, a power of two. */
  readonly capacity: number;
  /** Length of the longest key; longer queries are answered without hashing. */
  readonly maxKeyLength: number;
  // Plain fields: as fast as #private in measurements, and the hot loop copies them into locals anyway.
  // Views of the two parts of the slot table.
  private readonly tags: Uint32Array;
  private readonly pairs: Uint32Array;
  private readonly keyBytes: Uint8Array;
  private readonly keyOffsets: Uint32Array;
  // Unaligned little-endian reads of key bytes, four at a time.
  private readonly keyView: DataView;
  private readonly mask: number;
  // The lower-cased query of the lookup in progress, packed as by hashQueryWords.
  private readonly words: Int32Array;

  /**
   * Wrap arrays from buildSlots or a loaded snapshot. Checks shapes and
   * offsets (one pass over keyOffsets, skipped when the caller passes the
   * `maxKeyLength` its loader derived; a wrong one could only make longer
   * keys unreachable) and that lookups terminate; the slot
   * contents are otherwise trusted to come from buildSlots over these keys
   * (checkSlots verifies them). Whatever they hold, a lookup answers an id
   * below `size` or NOT_FOUND: a slot naming no id, or an id out of range, or
   * a key running past `keyBytes`, never matches.
   */
  constructor(slots: Uint32Array, keyBytes: Uint8Array, keyOffsets: Uint32Array, maxKeyLength?: number) {
    const capacity = slots.length / SLOT_WORDS;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > MAX_CAPACITY || (capacity & (capacity - 1)) !== 0) {
      throw new RangeError(`slots length must be ${SLOT_WORDS} times a power of two up to ${MAX_CAPACITY}, got ${slots.length}`);
    }
    if (keyOffsets.length < 1) throw new RangeError('keyOffsets must have count + 1 entries');
    const size = keyOffsets.length - 1;
    if (size >= capacity) throw new RangeError(`${size} keys do not fit ${capacity} slots`);
    // Every probe run must end at an empty slot; in a table from buildSlots one is a few slots in.
    let empty = 0;
    while (empty < capacity && slots[empty] !== 0) empty++;
    if (empty === capacity) throw new RangeError('slot table has no empty slot');
    if (maxKeyLength === undefined) {
      maxKeyLength = longestKey(keyOffsets);
    } else if (!Number.isSafeInteger(maxKeyLength) || maxKeyLength < 0) {
      throw new RangeError(`maxKeyLength must be a whole number, got ${maxKeyLength}`);
    }
    if (keyOffsets[size]! > keyBytes.length) throw new RangeError('keyOffsets run past keyBytes');
    this.size = size;
    this.capacity = capacity;
    this.maxKeyLength = maxKeyLength;
    this.tags = slots.subarray(0, capacity);
    this.pairs = slots.subarray(capacity);
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
    const tag = slotTag(hash, length);
    const tags = this.tags;
    const mask = this.mask;
    let i = hash & mask;
    for (;;) {
      const t = tags[i]!;
      if (t === tag) {
        // An equal tag means an equal length too, below TAG_LONG_KEY.
        const pairs = this.pairs;
        const v = pairs[2 * i]!;
        if (this.matchesWords(pairs[2 * i + 1]!, length, v)) return v - 1;
      } else if (t === 0) {
        return NOT_FOUND;
      }
      i = (i + 1) & mask;
    }
  }

  /**
   * Whether the key at `start` of the slot naming id `v - 1`, whose tag
   * matched, equals the `length` chars packed in `words` by the current lookup.
   */
  private matchesWords(start: number, length: number, v: number): boolean {
    if (v === 0 || v > this.size || start + length > this.keyBytes.length) return false;
    if (length >= TAG_LONG_KEY && this.keyOffsets[v]! - start !== length) return false;
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
    const length = end - start;
    const hash = hashKeyBytes(bytes, start, end);
    const tag = slotTag(hash, length);
    const tags = this.tags;
    const mask = this.mask;
    let i = hash & mask;
    for (;;) {
      const t = tags[i]!;
      if (t === tag) {
        const v = this.pairs[2 * i]!;
        const s = this.pairs[2 * i + 1]!;
        const keyBytes = this.keyBytes;
        const sane = v !== 0 && v <= this.size && s + length <= keyBytes.length;
        if (sane && (length < TAG_LONG_KEY || this.keyOffsets[v]! - s === length)) {
          let j = 0;
          while (j < length && keyBytes[s + j] === bytes[start + j]) j++;
          if (j === length) return v - 1;
        }
      } else if (t === 0) {
        return NOT_FOUND;
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
