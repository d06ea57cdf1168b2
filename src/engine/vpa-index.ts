import { NOT_FOUND } from '../common/brand.js';
import { NON_ASCII_HASH, hashKeyBytes, hashQueryWords, lowerAsciiWord } from './hash.js';
import type { KeyIndex } from './key-index.js';
import { freshArrays, type ArrayAllocator } from '../common/scratch-arrays.js';

/**
 * The compact hashed index from VPA to VpaId, over four snapshot arrays
 * (IndexArrays; see snapshot-data.ts).
 *
 * The table has `capacity` slots (any capacity, not a power of two, so the
 * load stays near MAX_LOAD_FACTOR at every size), probed linearly from the
 * key's home slot (homeSlot). Each slot has:
 * - a tag in `slotTags`, 0 when the slot is empty: the low byte of the key's
 *   hash, then a code for the key length, so it is never 0 (slotTag);
 * - an entry of ENTRY_WORDS words in `slotEntries`: [id + 1, then the
 *   lower-cased key bytes packed four to a word, little end first, as
 *   hashQueryWords packs a query]. A key of up to INLINE_KEY_BYTES bytes lies
 *   whole in its entry, zero padded. A longer key keeps its first
 *   INLINE_PREFIX_WORDS words there, and in the last word the position in
 *   `keyTails` of its tail record: [length, the rest of the key's words].
 *
 * `vpaSlots[id]` is the slot of VpaId id, for keyOf.
 *
 * Why this layout: at 10M keys the arrays far exceed the CPU caches, so a
 * lookup costs what its random memory reads cost. A miss reads tags only,
 * 32 to a 64-byte line: one random line. A hit must also compare the key
 * bytes. Where they lay in a separate array, found through the slot, the
 * hit waited for two reads in sequence, and cost about twice a miss. Here
 * the entry's address depends only on the slot number, so
 * while the tag line is on its way the CPU already fetches the entry the
 * probe is likely to compare, and the two reads overlap. Keys longer than
 * INLINE_KEY_BYTES (about one VPA in fifteen) still wait for their tail
 * after the entry. The price is memory: 34 bytes a slot, 48.6 per key at
 * load 0.7, plus the tails and vpaSlots: more than the layout before (tags,
 * [id, key start] pairs, key bytes and offsets). Figures: see
 * bench/MEASUREMENTS.md, 'Index layout'.
 */

/** Words of a slot's entry: id + 1, then INLINE_KEY_BYTES of key: 32 bytes, half a cache line. */
export const ENTRY_WORDS = 8;
/** Keys of at most this many bytes are stored whole in their slot's entry. */
export const INLINE_KEY_BYTES = (ENTRY_WORDS - 1) * 4;
/** Words of a longer key kept in its entry; the entry's last word locates the rest. */
export const INLINE_PREFIX_WORDS = ENTRY_WORDS - 2;
/**
 * Keys of TAG_LONG_KEY bytes or more share one length code in the tag (their
 * tail record carries the length). Below it the code is length + 1, keeping
 * every tag non-zero.
 */
export const TAG_LONG_KEY = 254;

/**
 * The tag a slot stores for a key with this hash and length: a non-zero
 * uint16. Its hash byte is the low one: the keys of neighbouring slots have
 * nearly the same high hash bits (homeSlot), so those would tell little.
 */
export function slotTag(hash: number, length: number): number {
  return ((hash & 0xff) << 8) | tagLengthCode(length);
}

/** The length code in a tag: min(length, TAG_LONG_KEY) + 1. */
function tagLengthCode(length: number): number {
  return length < TAG_LONG_KEY ? length + 1 : TAG_LONG_KEY + 1;
}

/**
 * The home slot of a key with uint32 `hash` in a table of `capacity` slots:
 * floor(hash * capacity / 2^32), which maps hashes onto slots evenly without
 * a power-of-two capacity. Computed in two halves so that every product
 * stays below 2^53 and exact.
 */
export function homeSlot(hash: number, capacity: number): number {
  const high = hash >>> 16;
  const low = hash & 0xffff;
  return Math.floor((high * capacity + Math.floor((low * capacity) / 65536)) / 65536);
}

/**
 * Highest load (keys / capacity) of a built table. Linear probing inspects
 * about (1 + 1/(1-a)^2)/2 slots per miss, 6.1 at 0.7, but a probe reads
 * tags, 32 to a cache line, so a miss still costs one random line; a hit
 * finds its key 1.2 slots past home on average, in the same or the next
 * entry line. A slot takes 34 bytes: 48.6 per key.
 */
export const MAX_LOAD_FACTOR = 0.7;
/** Small tables gain nothing from being smaller. */
export const MIN_CAPACITY = 8;
/** Keeps entry word indexes (below ENTRY_WORDS * 2^28) within int32. */
export const MAX_CAPACITY = 2 ** 28;
/** Most keys one table can hold at MAX_LOAD_FACTOR. */
export const MAX_KEYS = Math.floor(MAX_CAPACITY * MAX_LOAD_FACTOR);

/** Number of slots for `count` keys: the fewest keeping the load at most MAX_LOAD_FACTOR, with one slot always empty. */
export function slotCapacity(count: number): number {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`key count must be a whole number, got ${count}`);
  if (count > MAX_KEYS) throw new RangeError(`too many keys for one index: ${count} (at most ${MAX_KEYS})`);
  return Math.max(MIN_CAPACITY, Math.ceil(count / MAX_LOAD_FACTOR), count + 1);
}

/** The arrays a VpaIndex reads; a snapshot stores them. */
export interface IndexArrays {
  /** The tag of each slot (length: the capacity). */
  readonly slotTags: Uint16Array;
  /** The entry of each slot, ENTRY_WORDS words (length: ENTRY_WORDS times the capacity). */
  readonly slotEntries: Uint32Array;
  /** Tail records of keys longer than INLINE_KEY_BYTES: [length, key words from INLINE_PREFIX_WORDS on]. */
  readonly keyTails: Uint32Array;
  /** The slot of each VpaId (length: the number of keys). */
  readonly vpaSlots: Uint32Array;
}

/** Words a key of `length` bytes packs into. */
function wordCount(length: number): number {
  return (length + 3) >>> 2;
}

/** Words of the tail record of a key of `length` (> INLINE_KEY_BYTES) bytes. */
function tailWords(length: number): number {
  return 1 + wordCount(length) - INLINE_PREFIX_WORDS;
}

/**
 * Lower-case ASCII keys into the layout buildIndexArrays reads (key i becomes
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
 * Build the index arrays for keys 0..count-1 (ids in key order). Checks what
 * lookups rely on and throws RangeError when it does not hold: offsets
 * ascending within `keyBytes`, key bytes lower-cased ASCII, no duplicate
 * keys, and at most MAX_KEYS keys. `arrays` supplies the index's own
 * arrays (freshSharedArrays for an index in shared memory; new ones of its
 * own by default); `scratch` the working arrays (hashes and insert order,
 * 20 bytes per key), which die with the call.
 */
export function buildIndexArrays(
  keyBytes: Uint8Array,
  keyOffsets: Uint32Array,
  count: number,
  options: { readonly arrays?: ArrayAllocator; readonly scratch?: ArrayAllocator } = {},
): IndexArrays {
  const capacity = slotCapacity(count);
  const { tailTotal, longest } = checkKeys(keyBytes, keyOffsets, count);
  const scratch = options.scratch ?? freshArrays;
  const hashes = scratch.zeroed(Uint32Array, count);
  for (let id = 0; id < count; id++) hashes[id] = hashKeyBytes(keyBytes, keyOffsets[id]!, keyOffsets[id + 1]!);
  const own = options.arrays ?? freshArrays;
  const arrays = {
    slotTags: own.zeroed(Uint16Array, capacity),
    slotEntries: own.zeroed(Uint32Array, capacity * ENTRY_WORDS),
    keyTails: own.zeroed(Uint32Array, tailTotal),
    vpaSlots: own.zeroed(Uint32Array, count),
  };
  insertKeys(arrays, keyBytes, keyOffsets, hashes, longest, scratch);
  return arrays;
}

/**
 * What buildIndexArrays needs checked about its keys (throws RangeError),
 * and the words of their tail records and the longest length. A pass of its
 * own: V8 optimises a function loop by loop, and a long one it kept
 * deoptimising.
 */
function checkKeys(keyBytes: Uint8Array, keyOffsets: Uint32Array, count: number): { tailTotal: number; longest: number } {
  if (keyOffsets.length < count + 1) {
    throw new RangeError(`keyOffsets has ${keyOffsets.length} entries, ${count + 1} needed for ${count} keys`);
  }
  let tailTotal = 0;
  let longest = 0;
  for (let i = 0; i < count; i++) {
    const length = keyOffsets[i + 1]! - keyOffsets[i]!;
    if (length < 0) throw new RangeError(`keyOffsets not ascending at key ${i}`);
    if (length > INLINE_KEY_BYTES) tailTotal += tailWords(length);
    if (length > longest) longest = length;
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
  if (tailTotal > 0xffffffff) throw new RangeError(`keys too long in total for 32-bit tail positions: ${tailTotal} words`);
  return { tailTotal, longest };
}

/** Fill the empty `arrays` with keys 0..count-1; throws RangeError for a duplicate key. */
function insertKeys(
  arrays: IndexArrays,
  keyBytes: Uint8Array,
  keyOffsets: Uint32Array,
  hashes: Uint32Array,
  longest: number,
  scratch: ArrayAllocator,
): void {
  const tags = arrays.slotTags;
  const capacity = tags.length;
  const entries = int32View(arrays.slotEntries);
  const tails = int32View(arrays.keyTails);
  const vpaSlots = arrays.vpaSlots;
  const words = new Int32Array(Math.max(ENTRY_WORDS, wordCount(longest)));
  let tailAt = 0;
  // Inserting in id order writes all over a table far larger than the CPU
  // caches, a cache miss or two per key. Inserted in order of home slot, the
  // writes sweep the table once.
  const order = idsByHashRegion(hashes, scratch);
  // In that order, keyOffsets and hashes are random reads. Gathered first in
  // a loop of their own, they overlap each other; inside the insert loop,
  // whose probes branch on memory, each would wait in turn (the profile of a
  // 3M-key build put a quarter of its time on that read).
  const count = order.length;
  const starts = scratch.zeroed(Uint32Array, count);
  const ends = scratch.zeroed(Uint32Array, count);
  const orderedHashes = scratch.zeroed(Uint32Array, count);
  for (let k = 0; k < count; k++) {
    const id = order[k]!;
    starts[k] = keyOffsets[id]!;
    ends[k] = keyOffsets[id + 1]!;
    orderedHashes[k] = hashes[id]!;
  }
  for (let k = 0; k < count; k++) {
    const id = order[k]!;
    const start = starts[k]!;
    const length = ends[k]! - start;
    const hash = orderedHashes[k]!;
    const tag = slotTag(hash, length);
    packWords(keyBytes, start, length, words);
    let i = homeSlot(hash, capacity);
    for (;;) {
      const t = tags[i]!;
      if (t === 0) break;
      if (t === tag && entryMatches(entries, tails, i * ENTRY_WORDS, words, length)) {
        const other = entries[i * ENTRY_WORDS]! - 1;
        throw new RangeError(`duplicate key: ids ${Math.min(id, other)} and ${Math.max(id, other)} are both ${JSON.stringify(decodeAscii(keyBytes, start, length))}`);
      }
      i = i + 1 === capacity ? 0 : i + 1;
    }
    tags[i] = tag;
    vpaSlots[id] = i;
    const e = i * ENTRY_WORDS;
    entries[e] = id + 1;
    const n = wordCount(length);
    if (length <= INLINE_KEY_BYTES) {
      for (let w = 0; w < n; w++) entries[e + 1 + w] = words[w]!;
    } else {
      for (let w = 0; w < INLINE_PREFIX_WORDS; w++) entries[e + 1 + w] = words[w]!;
      entries[e + ENTRY_WORDS - 1] = tailAt;
      tails[tailAt++] = length;
      for (let w = INLINE_PREFIX_WORDS; w < n; w++) tails[tailAt++] = words[w]!;
    }
  }
}

/**
 * Give the keys of an index new ids: key `id` becomes `newIdOf[id]`, a
 * permutation of 0..count-1. The slots stay as they are, so an index can be
 * built before its keys' final order is known and renumbered once it is.
 * One sequential pass over the slots, which rewrites `slotEntries` and
 * `vpaSlots` in place: the pass reads ids from the entries only, and being
 * a permutation, it writes every VPA's slot exactly once.
 */
export function renumberIndex(arrays: IndexArrays, newIdOf: Uint32Array): IndexArrays {
  const { slotTags: tags, slotEntries: entries, vpaSlots } = arrays;
  const count = vpaSlots.length;
  if (newIdOf.length !== count) throw new RangeError(`newIdOf has ${newIdOf.length} ids for an index of ${count} keys`);
  for (let slot = 0; slot < tags.length; slot++) {
    if (tags[slot] === 0) continue;
    const e = slot * ENTRY_WORDS;
    const id = newIdOf[entries[e]! - 1]!;
    entries[e] = id + 1;
    vpaSlots[id] = slot;
  }
  return arrays;
}

/** Int32 words over the same memory: the type hashQueryWords packs queries into. */
function int32View(words: Uint32Array): Int32Array {
  return new Int32Array(words.buffer, words.byteOffset, words.length);
}

/** `length` bytes from `bytes[start..]` packed as hashQueryWords packs a query, the last word zero padded. */
function packWords(bytes: Uint8Array, start: number, length: number, words: Int32Array): void {
  const n = wordCount(length);
  for (let w = 0; w < n; w++) words[w] = 0;
  for (let j = 0; j < length; j++) words[j >>> 2] = words[j >>> 2]! | (bytes[start + j]! << ((j & 3) << 3));
}

/**
 * Whether the key in the entry at word `e` equals the `length` bytes packed
 * in `words`, given that the slot's tag matched (so, below TAG_LONG_KEY, the
 * lengths are equal). A tail position or tail record out of range never
 * matches.
 */
function entryMatches(entries: Int32Array, tails: Int32Array, e: number, words: Int32Array, length: number): boolean {
  const n = wordCount(length);
  if (length <= INLINE_KEY_BYTES) {
    for (let w = 0; w < n; w++) {
      if (entries[e + 1 + w] !== words[w]) return false;
    }
    return true;
  }
  for (let w = 0; w < INLINE_PREFIX_WORDS; w++) {
    if (entries[e + 1 + w] !== words[w]) return false;
  }
  const at = entries[e + ENTRY_WORDS - 1]! >>> 0;
  if (at + n - INLINE_PREFIX_WORDS >= tails.length || tails[at] !== length) return false;
  for (let w = INLINE_PREFIX_WORDS; w < n; w++) {
    if (tails[at + 1 + w - INLINE_PREFIX_WORDS] !== words[w]) return false;
  }
  return true;
}

/**
 * Ids ordered by the top 16 bits of their hash (ids ascending within one),
 * by counting sort: homeSlot grows with the hash, so this is the order of
 * home slot regions. The table a build makes depends only on this order,
 * which depends only on the keys.
 */
function idsByHashRegion(hashes: Uint32Array, scratch: ArrayAllocator): Uint32Array {
  const starts = new Uint32Array(65536 + 1);
  for (let id = 0; id < hashes.length; id++) starts[(hashes[id]! >>> 16) + 1]!++;
  for (let r = 0; r < 65536; r++) starts[r + 1]! += starts[r]!;
  const order = scratch.zeroed(Uint32Array, hashes.length);
  for (let id = 0; id < hashes.length; id++) order[starts[hashes[id]! >>> 16]!++] = id;
  return order;
}

/**
 * Check that the index arrays are what buildIndexArrays makes, except for
 * the hash bits of the tags and for where in its probe run each key sits
 * (checking those means hashing every key; a wrong one only hides a key):
 * each occupied slot names a distinct id below `vpaSlots.length` whose
 * vpaSlots entry is that slot, each key is lower-cased ASCII zero padded to
 * its words, with the length its tag says, and each tail record lies within
 * keyTails. Lookups trust this much (a hit returns the id of the slot whose
 * key matched), so a snapshot loader runs it once. Returns what is wrong, or
 * undefined.
 *
 * Reading vpaSlots[id] for every slot would be a random read per key
 * (seconds at 10M keys; see bench/MEASUREMENTS.md, 'Index layout'), so it compares two 32-bit sums of hashes of (id, slot)
 * instead, over the slots and over vpaSlots, each in one sequential pass.
 * Only when they differ does it look for the slot at fault, to say which.
 */
export function checkIndexArrays(arrays: IndexArrays): string | undefined {
  const { slotTags: tags, slotEntries, keyTails, vpaSlots } = arrays;
  const count = vpaSlots.length;
  const capacity = tags.length;
  if (capacity <= count || capacity > MAX_CAPACITY) return `${capacity} slots for ${count} VPAs; expected more slots, at most ${MAX_CAPACITY}`;
  if (slotEntries.length !== capacity * ENTRY_WORDS) {
    return `slotEntries has ${slotEntries.length} words, expected ${ENTRY_WORDS} for each of ${capacity} slots`;
  }
  const entries = int32View(slotEntries);
  const tails = int32View(keyTails);
  let occupied = 0;
  let low = 0;
  let high = 0;
  for (let i = 0; i < capacity; i++) {
    const t = tags[i]!;
    const e = i * ENTRY_WORDS;
    if (t === 0) {
      for (let w = 0; w < ENTRY_WORDS; w++) {
        if (entries[e + w] !== 0) return `slot ${i} is empty but its entry is not`;
      }
      continue;
    }
    occupied++;
    const v = entries[e]! >>> 0;
    if (v === 0) return `slot ${i} is occupied but names no VPA`;
    if (v > count) return `slot ${i} names VPA ${v - 1}, but there are ${count}`;
    const h = entryHash(v, i);
    low = (low + h) | 0;
    high = (high + mix32(h ^ 0x2545f491)) | 0;
    const problem = checkKey(t & 0xff, entries, e, tails);
    if (problem !== undefined) return `slot ${i} (VPA ${v - 1}): ${problem}`;
  }
  if (occupied !== count) return `slots hold ${occupied} VPAs, expected ${count}`;

  let expectedLow = 0;
  let expectedHigh = 0;
  for (let id = 0; id < count; id++) {
    const h = entryHash(id + 1, vpaSlots[id]!);
    expectedLow = (expectedLow + h) | 0;
    expectedHigh = (expectedHigh + mix32(h ^ 0x2545f491)) | 0;
  }
  if (low === expectedLow && high === expectedHigh) return undefined;
  return findBadSlot(tags, entries, vpaSlots) ?? 'slots do not match vpaSlots';
}

/** What is wrong with the key of an occupied entry whose tag has length code `code`, or undefined. */
function checkKey(code: number, entries: Int32Array, e: number, tails: Int32Array): string | undefined {
  if (code === 0) return 'its tag has no length code';
  if (code <= INLINE_KEY_BYTES + 1) return checkPackedKey(entries, e + 1, code - 1, ENTRY_WORDS - 1);
  const prefix = checkPackedKey(entries, e + 1, INLINE_PREFIX_WORDS * 4, INLINE_PREFIX_WORDS);
  if (prefix !== undefined) return prefix;
  const at = entries[e + ENTRY_WORDS - 1]! >>> 0;
  if (at >= tails.length) return `its tail record at ${at} lies past keyTails (${tails.length} words)`;
  const length = tails[at]!;
  const expected = code === TAG_LONG_KEY + 1 ? length >= TAG_LONG_KEY : length === code - 1;
  if (!expected) return `its tail record gives length ${length}, its tag length code ${code}`;
  if (at + tailWords(length) > tails.length) return `its tail record at ${at} runs past keyTails`;
  const restBytes = length - INLINE_PREFIX_WORDS * 4;
  return checkPackedKey(tails, at + 1, restBytes, wordCount(restBytes));
}

/**
 * Whether `words` words from `array[at]` hold `length` bytes of lower-cased
 * ASCII, then zeros: lookups compare whole words, so a key whose padding is
 * not zero, or that holds upper case, could never be found.
 */
function checkPackedKey(array: Int32Array, at: number, length: number, words: number): string | undefined {
  for (let w = 0; w < words; w++) {
    const bytes = length - w * 4;
    const word = array[at + w]!;
    if (bytes <= 0) {
      if (word !== 0) return 'its key is not zero padded';
      continue;
    }
    const kept = bytes >= 4 ? -1 : (1 << (bytes << 3)) - 1;
    if ((word & ~kept) !== 0) return 'its key is not zero padded';
    if ((word & 0x80808080) !== 0 || lowerAsciiWord(word) !== word) return 'its key is not lower-cased ASCII';
  }
  return undefined;
}

/** A hash of an occupied slot's (v, slot), as checkIndexArrays sums them. */
function entryHash(v: number, slot: number): number {
  return mix32(mix32(v ^ 0x5bd1e995) ^ slot);
}

/** The MurmurHash3 finaliser: every input bit affects every output bit. */
function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The first slot that disagrees with vpaSlots, described; slow (a random read per key). */
function findBadSlot(tags: Uint16Array, entries: Int32Array, vpaSlots: Uint32Array): string | undefined {
  const seen = new Uint8Array((vpaSlots.length + 7) >>> 3);
  for (let i = 0; i < tags.length; i++) {
    if (tags[i] === 0) continue;
    const id = entries[i * ENTRY_WORDS]! - 1;
    const bit = 1 << (id & 7);
    if ((seen[id >>> 3]! & bit) !== 0) return `VPA ${id} has two slots`;
    seen[id >>> 3] = seen[id >>> 3]! | bit;
    if (vpaSlots[id] !== i) return `VPA ${id} is in slot ${i}, but vpaSlots says ${vpaSlots[id]}`;
  }
  return undefined;
}

/**
 * The length of the longest key: from the tags' length codes, reading the
 * tail record only for keys of TAG_LONG_KEY bytes or more. One pass over the
 * tags; done where a snapshot is loaded, so serving threads can skip it
 * (SnapshotData.maxKeyLength). Trusts the arrays (checkIndexArrays).
 */
export function longestKey(arrays: IndexArrays): number {
  const { slotTags, slotEntries, keyTails } = arrays;
  let longest = 0;
  for (let i = 0; i < slotTags.length; i++) {
    const code = slotTags[i]! & 0xff;
    let length = code - 1;
    if (code === TAG_LONG_KEY + 1) length = keyTails[slotEntries[i * ENTRY_WORDS + ENTRY_WORDS - 1]!] ?? 0;
    if (length > longest) longest = length;
  }
  return longest;
}

function decodeAscii(bytes: Uint8Array, start: number, length: number): string {
  let text = '';
  for (let j = 0; j < length; j++) text += String.fromCharCode(bytes[start + j]!);
  return text;
}

/** The production KeyIndex over snapshot arrays: no per-key objects, allocation-free lookups. */
export class VpaIndex implements KeyIndex {
  readonly size: number;
  /** Number of slots. */
  readonly capacity: number;
  /** Length of the longest key; longer queries are answered without hashing. */
  readonly maxKeyLength: number;
  // Plain fields: as fast as #private in measurements, and the hot loop copies them into locals anyway.
  private readonly tags: Uint16Array;
  private readonly entries: Int32Array;
  private readonly tails: Int32Array;
  private readonly vpaSlots: Uint32Array;
  // The lower-cased query of the lookup in progress, packed as by hashQueryWords.
  private readonly words: Int32Array;
  /** What lookupBatch's first reads gave, kept only so that they are made. */
  private read = 0;

  /**
   * Wrap arrays from buildIndexArrays or a loaded snapshot. Checks shapes and
   * that lookups terminate (an empty slot exists), and derives the longest
   * key unless the caller passes the `maxKeyLength` its loader derived (a
   * wrong one could only make longer keys unreachable). The slot contents
   * are otherwise trusted (checkIndexArrays verifies them); whatever they
   * hold, a lookup answers an id below `size` or NOT_FOUND: a slot naming no
   * id, or an id out of range, or a tail out of range, never matches.
   */
  constructor(arrays: IndexArrays, maxKeyLength?: number) {
    const { slotTags, slotEntries, keyTails, vpaSlots } = arrays;
    const capacity = slotTags.length;
    if (capacity < 1 || capacity > MAX_CAPACITY) throw new RangeError(`slot count must be 1 to ${MAX_CAPACITY}, got ${capacity}`);
    if (slotEntries.length !== capacity * ENTRY_WORDS) {
      throw new RangeError(`slotEntries length must be ${ENTRY_WORDS} words for each of ${capacity} slots, got ${slotEntries.length}`);
    }
    const size = vpaSlots.length;
    if (size >= capacity) throw new RangeError(`${size} keys do not fit ${capacity} slots`);
    // Every probe run must end at an empty slot; in a table from buildIndexArrays one is a few slots in.
    let empty = 0;
    while (empty < capacity && slotTags[empty] !== 0) empty++;
    if (empty === capacity) throw new RangeError('slot table has no empty slot');
    if (maxKeyLength === undefined) {
      maxKeyLength = longestKey(arrays);
    } else if (!Number.isSafeInteger(maxKeyLength) || maxKeyLength < 0) {
      throw new RangeError(`maxKeyLength must be a whole number, got ${maxKeyLength}`);
    }
    this.size = size;
    this.capacity = capacity;
    this.maxKeyLength = maxKeyLength;
    this.tags = slotTags;
    this.entries = int32View(slotEntries);
    this.tails = int32View(keyTails);
    this.vpaSlots = vpaSlots;
    this.words = new Int32Array(Math.max(ENTRY_WORDS, wordCount(maxKeyLength)));
  }

  /** Encode and index `keys` (key i gets id i); for tests, tools and benchmarks. */
  static fromKeys(keys: readonly string[]): VpaIndex {
    const { keyBytes, keyOffsets } = encodeKeys(keys);
    return new VpaIndex(buildIndexArrays(keyBytes, keyOffsets, keys.length));
  }

  /** The VpaId of `query` matched ignoring ASCII case, or NOT_FOUND. No allocation. */
  lookup(query: string): number {
    const length = query.length;
    // Also bounds the query to the words scratch.
    if (length > this.maxKeyLength) return NOT_FOUND;
    const words = this.words;
    const hash = hashQueryWords(query, words);
    if (hash < 0) return NOT_FOUND; // non-ASCII: no key can match
    return this.find(hash, length, words);
  }

  /**
   * As lookup, for a query packed once for several indexes (a snapshot's
   * and its live delta's): the hash is not computed again.
   */
  lookupPacked(query: PackedQuery): number {
    if (query.hash < 0 || query.length > this.maxKeyLength) return NOT_FOUND;
    return this.find(query.hash, query.length, query.words);
  }

  /**
   * lookupPacked for each query of `batch`, into `ids[0..batch.count)`.
   * The first read of each probe, its home slot's tag and entry, is made
   * for every query before any is probed: independent reads, whose cache
   * misses the CPU overlaps, where one probe after another waits for each
   * in turn (bench/MEASUREMENTS.md, "Batch lookups in two passes").
   */
  lookupBatch(batch: PackedBatch, ids: Int32Array): void {
    const count = batch.count;
    const hashes = batch.hashes;
    const lengths = batch.lengths;
    const tags = this.tags;
    const entries = this.entries;
    const capacity = this.capacity;
    const maxKeyLength = this.maxKeyLength;
    let read = 0;
    // A query's length is UNMATCHABLE, above every maxKeyLength, where no key can match it.
    for (let i = 0; i < count; i++) {
      if (lengths[i]! > maxKeyLength) continue;
      const slot = homeSlot(hashes[i]!, capacity);
      read ^= tags[slot]! ^ entries[slot * ENTRY_WORDS]!;
    }
    // Kept, so that the reads are not optimised away.
    this.read = read;
    for (let i = 0; i < count; i++) ids[i] = this.lookupBatchItem(batch, i);
  }

  /** lookupPacked for query `i` of `batch` alone. */
  lookupBatchItem(batch: PackedBatch, i: number): number {
    const length = batch.lengths[i]!;
    return length > this.maxKeyLength ? NOT_FOUND : this.find(batch.hashes[i]!, length, batch.words(i));
  }

  /** Whether the tail of the long key in the entry at `e` matches the query's in `words`, its prefix having matched. */
  private tailMatches(e: number, length: number, words: Int32Array): boolean {
    return entryMatches(this.entries, this.tails, e, words, length);
  }

  /** The VpaId of the lower-cased key bytes `bytes[start..end)` (compared exactly), or NOT_FOUND. */
  lookupBytes(bytes: Uint8Array, start: number, end: number): number {
    const length = end - start;
    if (length > this.maxKeyLength) return NOT_FOUND;
    packWords(bytes, start, length, this.words);
    return this.find(hashKeyBytes(bytes, start, end), length, this.words);
  }

  /** The probe for a key of `length` bytes (at most maxKeyLength) with hash `hash`, packed in `words`. */
  private find(hash: number, length: number, words: Int32Array): number {
    const tag = slotTag(hash, length);
    const tags = this.tags;
    const entries = this.entries;
    const capacity = this.capacity;
    // Words compared in the entry: the whole key, or the prefix of a long one.
    const inline = length <= INLINE_KEY_BYTES ? wordCount(length) : INLINE_PREFIX_WORDS;
    let i = homeSlot(hash, capacity);
    for (;;) {
      const t = tags[i]!;
      if (t === tag) {
        // An equal tag means an equal length too, below TAG_LONG_KEY.
        const e = i * ENTRY_WORDS;
        let w = 0;
        while (w < inline && entries[e + 1 + w] === words[w]) w++;
        if (w === inline) {
          const v = entries[e]!;
          // The rare tail compare stays out of line: inlined into this loop, it slowed misses (bench/MEASUREMENTS.md, 'Index layout').
          if (v > 0 && v <= this.size && (length <= INLINE_KEY_BYTES || this.tailMatches(e, length, words))) return v - 1;
        }
      } else if (t === 0) {
        return NOT_FOUND;
      }
      i = i + 1 === capacity ? 0 : i + 1;
    }
  }

  /** The stored (lower-cased) key of `id`. Allocates; not for the lookup path. */
  keyOf(id: number): string {
    if (!Number.isInteger(id) || id < 0 || id >= this.size) {
      throw new RangeError(`no key with id ${id} (size ${this.size})`);
    }
    return this.keyAtSlot(this.vpaSlots[id]!);
  }

  /**
   * The id of the key in `slot` (0 to capacity - 1), or -1 for an empty
   * slot. With keyAtSlot, a scan of every key in slot order: it reads the
   * table side by side, where keyOf reads it at random.
   */
  idAtSlot(slot: number): number {
    return this.tags[slot] === 0 ? -1 : this.entries[slot * ENTRY_WORDS]! - 1;
  }

  /** The slot of the key of `id` (0 to size - 1): with keyBytesAtSlot, a scan of every key in id order, which reads a snapshot's columns side by side. */
  slotOfId(id: number): number {
    return this.vpaSlots[id]!;
  }

  /** The key in `slot`, one idAtSlot names, as bytes written to `out` (room for maxKeyLength); returns its length. No allocation. */
  keyBytesAtSlot(slot: number, out: Uint8Array): number {
    const code = this.tags[slot]! & 0xff;
    const e = slot * ENTRY_WORDS + 1;
    if (code <= INLINE_KEY_BYTES + 1) return unpackBytes(this.entries, e, code - 1, out, 0);
    const at = this.entries[e + ENTRY_WORDS - 2]! >>> 0;
    const prefix = INLINE_PREFIX_WORDS * 4;
    return unpackBytes(this.tails, at + 1, this.tails[at]! - prefix, out, unpackBytes(this.entries, e, prefix, out, 0));
  }

  /** The key in `slot`, one idAtSlot names. */
  keyAtSlot(slot: number): string {
    const code = this.tags[slot]! & 0xff;
    const e = slot * ENTRY_WORDS + 1;
    if (code <= INLINE_KEY_BYTES + 1) return unpackWords(this.entries, e, code - 1);
    const at = this.entries[e + ENTRY_WORDS - 2]! >>> 0;
    const length = this.tails[at]!;
    const prefix = INLINE_PREFIX_WORDS * 4;
    return unpackWords(this.entries, e, prefix) + unpackWords(this.tails, at + 1, length - prefix);
  }
}

/**
 * A query lower-cased, packed and hashed once (VpaIndex.lookupPacked), for
 * indexes whose keys are up to `maxKeyLength` bytes long. Reused from one
 * query to the next: no allocation per lookup.
 */
export class PackedQuery {
  readonly words: Int32Array;
  readonly maxKeyLength: number;
  /** The hash of the query packed last; negative when no key can match it (longer than maxKeyLength, or not ASCII). */
  hash = -1;
  length = 0;

  constructor(maxKeyLength: number) {
    this.maxKeyLength = maxKeyLength;
    this.words = new Int32Array(Math.max(ENTRY_WORDS, wordCount(maxKeyLength)));
  }

  pack(query: string): this {
    this.length = query.length;
    this.hash = query.length > this.maxKeyLength ? -1 : hashQueryWords(query, this.words);
    return this;
  }
}

/** PackedBatch's length of a query no key can match: longer than any index's longest key. */
export const UNMATCHABLE = 0xffffffff;

/**
 * Up to `capacity` queries lower-cased, packed and hashed once each
 * (VpaIndex.lookupBatch), for indexes whose keys are up to `maxKeyLength`
 * bytes long: PackedQuery for a batch. Reused from one batch to the next.
 */
export class PackedBatch {
  readonly maxKeyLength: number;
  readonly capacity: number;
  /** Each query's hash (hashQueryWords), where its length is not UNMATCHABLE. */
  readonly hashes: Uint32Array;
  /** Each query's length, or UNMATCHABLE where no key can match it (longer than maxKeyLength, or not ASCII). */
  readonly lengths: Uint32Array;
  count = 0;
  /** Each query's words, a view each of one array. */
  readonly #words: Int32Array[];

  constructor(maxKeyLength: number, capacity: number) {
    this.maxKeyLength = maxKeyLength;
    this.capacity = capacity;
    this.hashes = new Uint32Array(capacity);
    this.lengths = new Uint32Array(capacity);
    const stride = Math.max(ENTRY_WORDS, wordCount(maxKeyLength));
    const words = new Int32Array(stride * capacity);
    this.#words = Array.from({ length: capacity }, (_, i) => words.subarray(i * stride, (i + 1) * stride));
  }

  pack(queries: readonly string[]): this {
    const count = queries.length;
    if (count > this.capacity) throw new RangeError(`a batch of ${count} queries does not fit ${this.capacity}`);
    for (let i = 0; i < count; i++) {
      const query = queries[i]!;
      const length = query.length;
      const hash = length > this.maxKeyLength ? NON_ASCII_HASH : hashQueryWords(query, this.#words[i]!);
      this.lengths[i] = hash < 0 ? UNMATCHABLE : length;
      this.hashes[i] = hash;
    }
    this.count = count;
    return this;
  }

  /** The words of query `i`, packed as hashQueryWords packs them. */
  words(i: number): Int32Array {
    return this.#words[i]!;
  }
}

/** unpackWords into `out` from `outAt`; returns where it stopped. */
function unpackBytes(array: Int32Array, at: number, length: number, out: Uint8Array, outAt: number): number {
  for (let j = 0; j < length; j++) out[outAt + j] = (array[at + (j >>> 2)]! >>> ((j & 3) << 3)) & 0xff;
  return outAt + length;
}

/** The `length` bytes packed in words from `array[at]`, as text. */
function unpackWords(array: Int32Array, at: number, length: number): string {
  let text = '';
  for (let j = 0; j < length; j++) text += String.fromCharCode((array[at + (j >>> 2)]! >>> ((j & 3) << 3)) & 0xff);
  return text;
}
