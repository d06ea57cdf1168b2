import { readFile } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { Packr, Unpackr } from 'msgpackr';
import { writeFileAtomic } from '../common/atomic-file.js';
import { ClusterStateError } from '../common/errors.js';
import type { Components } from './clustering.js';

/**
 * Stable public cluster numbers (`MC-<number>`) across rebuilds.
 *
 * The state remembers, for every VPA that was clustered in the last build, the
 * number its cluster had, plus the next number never handed out. A rebuild
 * then resolves the new components against it:
 *
 *  1. Votes. Every clustered VPA that had a number votes for its new
 *     component. Each old number goes to the component holding most of its
 *     old members (ties: the part whose smallest old-member key sorts first).
 *     So a persisting cluster keeps its number, and on a split the largest
 *     part keeps it, even when that part merged with other clusters.
 *  2. Merges. A component that received several numbers keeps the smallest
 *     (numbers are handed out increasingly, so that is the oldest); the rest
 *     are retired.
 *  3. Fresh numbers. Components that received none (new clusters and the
 *     smaller parts of splits) get nextNumber, nextNumber + 1, ... in order of
 *     their smallest member key, so the result does not depend on VpaId order.
 *
 * Numbers are never reused: nextNumber only grows, and a retired or vanished
 * number stays below it.
 *
 * Keys are compared as UTF-8 bytes (code point order); VPA keys are
 * lower-cased ASCII, where that is plain string order. Keys are used as given:
 * callers pass the canonical lower-cased form.
 */
export interface ClusterIdState {
  /** The next number to hand out; every number below it has been used. */
  readonly nextNumber: number;
  /** Cluster number by lower-cased VPA key, for every clustered VPA; 0 when none. */
  numberOf(key: string): number;
  /** Number of clustered VPA keys held. */
  readonly size: number;
}

const MAX_NUMBER = 0xffffffff;

// The state can hold millions of keys, so it is kept packed rather than as a
// Map of strings: one UTF-8 blob of keys, their offsets and numbers, all in
// ascending order of (hash of the key, key bytes), with the hashes alongside.
// That order turns the rebuild's millions of lookups into one sequential
// merge of two sorted lists; random probes into a state of this size cost
// several cache and TLB misses each, which dominated the rebuild. A single
// lookup is a binary search over the hashes.
class PackedClusterIdState implements ClusterIdState {
  readonly nextNumber: number;
  readonly keyBytes: Uint8Array;
  readonly keyOffsets: Uint32Array;
  readonly numbers: Uint32Array;
  readonly hashes: Uint32Array;

  /** The entries must already be in (hash, key bytes) order without duplicates. */
  constructor(nextNumber: number, keyBytes: Uint8Array, keyOffsets: Uint32Array, numbers: Uint32Array, hashes: Uint32Array) {
    this.nextNumber = nextNumber;
    this.keyBytes = keyBytes;
    this.keyOffsets = keyOffsets;
    this.numbers = numbers;
    this.hashes = hashes;
  }

  get size(): number {
    return this.numbers.length;
  }

  numberOf(key: string): number {
    if (typeof key !== 'string') return 0;
    if (scratch.length < key.length * 3) scratch = new Uint8Array(key.length * 3);
    const end = encodeInto(key, scratch, 0);
    const hash = hashBytes(scratch, 0, end);
    const { hashes, keyBytes, keyOffsets } = this;
    // Lower bound of `hash`, then the (almost always single) entry with that hash.
    let lo = 0;
    let hi = hashes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (hashes[mid]! < hash) lo = mid + 1;
      else hi = mid;
    }
    for (let e = lo; e < hashes.length && hashes[e] === hash; e++) {
      if (compareBytes(keyBytes, keyOffsets[e]!, keyOffsets[e + 1]!, scratch, 0, end) === 0) return this.numbers[e]!;
    }
    return 0;
  }
}

export function emptyClusterIdState(): ClusterIdState {
  return new PackedClusterIdState(1, new Uint8Array(0), new Uint32Array(1), new Uint32Array(0), new Uint32Array(0));
}

/**
 * Cluster numbers for `components` (see the algorithm at the top of this
 * file), and the state to persist for the next rebuild.
 *
 * `keyOf` must give each clustered VPA its own key (a RangeError otherwise,
 * since a shared key would make the state ambiguous). It is called once per
 * clustered VPA, in VpaId order.
 */
export function assignClusterNumbers(
  components: Components,
  keyOf: (vpaId: number) => string,
  previous: ClusterIdState,
): { numbers: Uint32Array; state: ClusterIdState } {
  const { count, of, sizes } = components;
  if (!(of instanceof Int32Array)) throw new TypeError('components.of must be an Int32Array');
  if (!(sizes instanceof Uint32Array)) throw new TypeError('components.sizes must be a Uint32Array');
  if (!Number.isInteger(count) || count < 0 || count !== sizes.length) {
    throw new RangeError(`components.count must equal components.sizes.length (${sizes.length}), got ${String(count)}`);
  }
  if (typeof keyOf !== 'function') throw new TypeError('keyOf must be a function');
  const previousNext = previous.nextNumber;
  if (!Number.isInteger(previousNext) || previousNext < 1 || previousNext > MAX_NUMBER + 1) {
    throw new RangeError(`previous.nextNumber must be a positive integer, got ${String(previousNext)}`);
  }

  // Each pass is its own function: one function holding all these loops gets
  // optimised on the stack loop by loop and deoptimised at each new loop,
  // which cost more than the work itself.
  const packedPrevious = previous instanceof PackedClusterIdState ? previous : null;
  const collected = collectKeys(of, count, sizes, keyOf, packedPrevious === null ? previous : null);
  const entries = sortEntries(collected);
  if (packedPrevious !== null) mergeOldNumbers(entries, packedPrevious);
  const componentNumber = resolveOldNumbers(entries, count);
  const nextNumber = assignFreshNumbers(entries, componentNumber, Math.max(previousNext, entries.maxOld + 1));

  // The per-entry component array becomes the per-entry number array in place.
  const { entryComponent, clustered } = entries;
  const entryNumber = new Uint32Array(entryComponent.buffer, entryComponent.byteOffset, clustered);
  for (let e = 0; e < clustered; e++) entryNumber[e] = componentNumber[entryComponent[e]!]!;
  return {
    numbers: componentNumber,
    state: new PackedClusterIdState(nextNumber, entries.blob, entries.keyOffsets, entryNumber, entries.hashes),
  };
}

/** Pass 1's output: clustered VPAs in VpaId order. */
interface Collected {
  readonly clustered: number;
  readonly blob: Uint8Array;
  readonly length: number;
  readonly keyOffsets: Uint32Array;
  readonly hashes: Uint32Array;
  readonly entryComponent: Int32Array;
  /** Previous numbers, when the previous state could only be asked key by key. */
  readonly oldNumber: Uint32Array | null;
}

/** Clustered VPAs ("entries") in (hash, key bytes) order. */
interface Entries {
  readonly clustered: number;
  /** UTF-8 keys of the entries: blob[keyOffsets[e] .. keyOffsets[e + 1]). */
  readonly blob: Uint8Array;
  readonly keyOffsets: Uint32Array;
  readonly hashes: Uint32Array;
  readonly entryComponent: Int32Array;
  /** Number each entry's key had in the previous state, 0 for none. */
  readonly oldNumber: Uint32Array;
  maxOld: number;
  withOld: number;
}

/**
 * Pass 1, in VpaId order: encode and hash each clustered VPA's key, and ask a
 * foreign previous state for its number (a packed one is merged later).
 */
function collectKeys(
  of: Int32Array,
  count: number,
  sizes: Uint32Array,
  keyOf: (vpaId: number) => string,
  foreignPrevious: ClusterIdState | null,
): Collected {
  const clustered = countClustered(sizes, of.length);
  const keyOffsets = new Uint32Array(clustered + 1);
  const hashes = new Uint32Array(clustered);
  const entryComponent = new Int32Array(clustered);
  const oldNumber = foreignPrevious === null ? null : new Uint32Array(clustered);
  let blob: Uint8Array = new Uint8Array(Math.max(64, clustered * 24));
  let position = 0;
  let entry = 0;

  for (let v = 0; v < of.length; v++) {
    const c = of[v]!;
    if (c < 0) {
      if (c !== -1) throw new RangeError(`components.of[${v}] = ${c} is neither -1 nor a component index`);
      continue;
    }
    if (c >= count) throw new RangeError(`components.of[${v}] = ${c} is not below components.count (${count})`);
    if (entry === clustered) throw new RangeError(`components.of has more clustered VPAs than components.sizes adds up to (${clustered})`);

    const key = keyOf(v);
    if (typeof key !== 'string') throw new TypeError(`keyOf(${v}) did not return a string`);
    if (blob.length - position < key.length * 3) blob = grow(blob, position + key.length * 3);
    const start = position;
    // Copy and hash in one walk over an ASCII key; anything else goes the long way.
    let h = FNV_OFFSET;
    let ascii = true;
    const keyLength = key.length;
    for (let i = 0; i < keyLength; i++) {
      const code = key.charCodeAt(i);
      if (code >= 0x80) {
        ascii = false;
        break;
      }
      blob[position++] = code;
      h = Math.imul(h ^ code, FNV_PRIME);
    }
    if (!ascii) position = encodeInto(key, blob, start);
    hashes[entry] = ascii ? finishHash(h) : hashBytes(blob, start, position);
    keyOffsets[entry + 1] = position;
    entryComponent[entry] = c;
    if (oldNumber !== null) oldNumber[entry] = checkedNumber(foreignPrevious!.numberOf(key), key);
    entry++;
  }
  // Only the total matters here (per-component sizes are not used), and it
  // bounds every array above.
  if (entry !== clustered) throw new RangeError(`components.of has ${entry} clustered VPAs, components.sizes adds up to ${clustered}`);
  return { clustered, blob, length: position, keyOffsets, hashes, entryComponent, oldNumber };
}

function checkedNumber(old: number, key: string): number {
  if (old !== 0 && (!Number.isInteger(old) || old < 0 || old > MAX_NUMBER)) {
    throw new RangeError(`previous.numberOf("${key}") returned ${String(old)}, not a cluster number`);
  }
  return old;
}

function countClustered(sizes: Uint32Array, vpaCount: number): number {
  let clustered = 0;
  for (let c = 0; c < sizes.length; c++) {
    if (sizes[c]! < 1) throw new RangeError(`components.sizes[${c}] must be at least 1`);
    clustered += sizes[c]!;
  }
  if (clustered > vpaCount) {
    throw new RangeError(`components.sizes add up to ${clustered}, more than components.of.length (${vpaCount})`);
  }
  return clustered;
}

/**
 * Put the entries in (hash, key bytes) order. Permuting ~100 MB of keys with
 * random reads costs a cache and TLB miss per key, so instead: one sequential
 * pass scatters every entry into 256 buckets by the top byte of its hash
 * (few enough write streams to stay cached), then each bucket, small enough
 * to sit in cache, is radix-sorted on the rest of the hash and gathered into
 * place. Keys are compared only inside runs of equal hashes, which is also
 * where a repeated key is caught.
 */
function sortEntries(collected: Collected): Entries {
  const { clustered, length, keyOffsets, hashes, entryComponent, oldNumber } = collected;
  // Each loop below is its own small function, so each is optimised quickly
  // on its own (see assignClusterNumbers).
  const { entryStart, byteStart, largest } = bucketBounds(hashes, keyOffsets, clustered);
  const parts = scatterToBuckets(collected, entryStart, byteStart);

  // Sort each bucket and gather it into the final arrays (which reuse the
  // collected ones where the sizes match).
  const sorted: Gathered = {
    blob: new Uint8Array(length),
    keyOffsets,
    hashes,
    entryComponent,
    oldNumber: oldNumber ?? new Uint32Array(clustered),
  };
  const scratch = new BucketScratch(largest);
  let position = 0;
  keyOffsets[0] = 0;
  for (let b = 0; b < BUCKETS; b++) {
    const from = entryStart[b]!;
    const to = entryStart[b + 1]!;
    if (from === to) continue;
    const order = scratch.sort(parts.hashes, from, to);
    orderEqualHashes(order, from, to, parts);
    position = gatherBucket(order, from, to, parts, sorted, position);
  }

  const entries: Entries = { clustered, ...sorted, maxOld: 0, withOld: 0 };
  countOld(entries);
  return entries;
}

/** Entries (and their key bytes) split into buckets; a bucket is contiguous in both. */
interface Parts {
  readonly blob: Uint8Array;
  /** Entry k's key is blob[keyOffsets[k] .. keyOffsets[k + 1]), across bucket boundaries too. */
  readonly keyOffsets: Uint32Array;
  readonly hashes: Uint32Array;
  readonly entryComponent: Int32Array;
  readonly oldNumber: Uint32Array | null;
}

interface Gathered {
  readonly blob: Uint8Array;
  readonly keyOffsets: Uint32Array;
  readonly hashes: Uint32Array;
  readonly entryComponent: Int32Array;
  readonly oldNumber: Uint32Array;
}

/** Where each bucket starts, in entries and in key bytes, and the largest bucket. */
function bucketBounds(
  hashes: Uint32Array,
  keyOffsets: Uint32Array,
  clustered: number,
): { entryStart: Uint32Array; byteStart: Uint32Array; largest: number } {
  const entryStart = new Uint32Array(BUCKETS + 1);
  const byteStart = new Uint32Array(BUCKETS + 1);
  for (let e = 0; e < clustered; e++) {
    const b = hashes[e]! >>> BUCKET_SHIFT;
    entryStart[b + 1]!++;
    byteStart[b + 1]! += keyOffsets[e + 1]! - keyOffsets[e]!;
  }
  let largest = 0;
  for (let b = 0; b < BUCKETS; b++) {
    if (entryStart[b + 1]! > largest) largest = entryStart[b + 1]!;
    entryStart[b + 1]! += entryStart[b]!;
    byteStart[b + 1]! += byteStart[b]!;
  }
  return { entryStart, byteStart, largest };
}

/** One sequential pass moving every entry into its bucket. */
function scatterToBuckets(collected: Collected, entryStart: Uint32Array, byteStart: Uint32Array): Parts {
  const { clustered, blob, length, keyOffsets, hashes, entryComponent, oldNumber } = collected;
  const partBlob = new Uint8Array(length);
  const partOffsets = new Uint32Array(clustered + 1);
  const partHash = new Uint32Array(clustered);
  const partComponent = new Int32Array(clustered);
  const entryCursor = entryStart.slice(0, BUCKETS);
  const byteCursor = byteStart.slice(0, BUCKETS);
  for (let e = 0; e < clustered; e++) {
    const hash = hashes[e]!;
    const b = hash >>> BUCKET_SHIFT;
    const k = entryCursor[b]!++;
    const at = byteCursor[b]!;
    partOffsets[k] = at;
    byteCursor[b] = copyBytes(blob, keyOffsets[e]!, keyOffsets[e + 1]!, partBlob, at);
    partHash[k] = hash;
    partComponent[k] = entryComponent[e]!;
  }
  partOffsets[clustered] = length;
  let partOld: Uint32Array | null = null;
  if (oldNumber !== null) {
    partOld = new Uint32Array(clustered);
    const cursor = entryStart.slice(0, BUCKETS);
    for (let e = 0; e < clustered; e++) partOld[cursor[hashes[e]! >>> BUCKET_SHIFT]!++] = oldNumber[e]!;
  }
  return { blob: partBlob, keyOffsets: partOffsets, hashes: partHash, entryComponent: partComponent, oldNumber: partOld };
}

/** Within runs of equal hashes (rare, tiny), order by key bytes; a repeated key is refused. */
function orderEqualHashes(order: Uint32Array, from: number, to: number, parts: Parts): void {
  const hashes = parts.hashes;
  const n = to - from;
  for (let i = 0; i + 1 < n; ) {
    const hash = hashes[from + order[i]!];
    let j = i + 1;
    while (j < n && hashes[from + order[j]!] === hash) j++;
    if (j - i > 1) sortRunByKey(order, i, j, from, parts.blob, parts.keyOffsets);
    i = j;
  }
}

/** Copy bucket entries from..to, in `order`, to the same positions of the final arrays; answers the byte position reached. */
function gatherBucket(order: Uint32Array, from: number, to: number, parts: Parts, sorted: Gathered, position: number): number {
  const { blob, keyOffsets, hashes, entryComponent, oldNumber } = parts;
  const out = sorted;
  for (let r = 0; r < to - from; r++) {
    const k = from + order[r]!;
    position = copyBytes(blob, keyOffsets[k]!, keyOffsets[k + 1]!, out.blob, position);
    out.keyOffsets[from + r + 1] = position;
    out.hashes[from + r] = hashes[k]!;
    out.entryComponent[from + r] = entryComponent[k]!;
  }
  if (oldNumber !== null) for (let r = 0; r < to - from; r++) out.oldNumber[from + r] = oldNumber[from + order[r]!]!;
  return position;
}

/** Copy source[start .. end) to target at `at`; answers the end in target. Keys are short, so a loop beats set(). */
function copyBytes(source: Uint8Array, start: number, end: number, target: Uint8Array, at: number): number {
  for (let i = start; i < end; i++) target[at++] = source[i]!;
  return at;
}

const BUCKET_SHIFT = 24;
const BUCKETS = 1 << (32 - BUCKET_SHIFT);

/**
 * Reused arrays for sorting one bucket on the low 24 bits of its hashes: LSD
 * radix, three 8-bit passes (small count tables suit small buckets too).
 */
class BucketScratch {
  private keys: Uint32Array;
  private keysOut: Uint32Array;
  private order: Uint32Array;
  private orderOut: Uint32Array;
  private readonly counts = new Uint32Array(256);

  constructor(capacity: number) {
    this.keys = new Uint32Array(capacity);
    this.keysOut = new Uint32Array(capacity);
    this.order = new Uint32Array(capacity);
    this.orderOut = new Uint32Array(capacity);
  }

  /** Positions 0..to-from-1 of hashes[from .. to) in ascending hash order, stable; valid until the next call. */
  sort(hashes: Uint32Array, from: number, to: number): Uint32Array {
    const n = to - from;
    let keys = this.keys;
    let order = this.order;
    let keysOut = this.keysOut;
    let orderOut = this.orderOut;
    for (let i = 0; i < n; i++) {
      keys[i] = hashes[from + i]! & 0xffffff;
      order[i] = i;
    }
    const counts = this.counts;
    for (let shift = 0; shift < 24; shift += 8) {
      counts.fill(0);
      for (let i = 0; i < n; i++) counts[(keys[i]! >>> shift) & 0xff]!++;
      let sum = 0;
      for (let d = 0; d < 256; d++) {
        const c = counts[d]!;
        counts[d] = sum;
        sum += c;
      }
      for (let i = 0; i < n; i++) {
        const key = keys[i]!;
        const at = counts[(key >>> shift) & 0xff]!++;
        keysOut[at] = key;
        orderOut[at] = order[i]!;
      }
      [keys, keysOut] = [keysOut, keys];
      [order, orderOut] = [orderOut, order];
    }
    return order;
  }
}

/**
 * Insertion sort of order[lo .. hi) (positions relative to `base`) by key
 * bytes; runs of equal hashes are tiny. Equal keys are refused.
 */
function sortRunByKey(order: Uint32Array, lo: number, hi: number, base: number, blob: Uint8Array, keyOffsets: Uint32Array): void {
  for (let i = lo + 1; i < hi; i++) {
    const e = order[i]!;
    let j = i - 1;
    for (; j >= lo; j--) {
      const cmp = compareEntries(blob, keyOffsets, base + order[j]!, base + e);
      if (cmp === 0) {
        const key = decoder.decode(blob.subarray(keyOffsets[base + e]!, keyOffsets[base + e + 1]!));
        throw new RangeError(`keyOf returned the key "${key}" for more than one VPA`);
      }
      if (cmp < 0) break;
      order[j + 1] = order[j]!;
    }
    order[j + 1] = e;
  }
}

/** Previous numbers by a merge of the two (hash, key bytes)-ordered lists. */
function mergeOldNumbers(entries: Entries, previous: PackedClusterIdState): void {
  const { clustered, hashes, blob, keyOffsets, oldNumber } = entries;
  const { hashes: oldHashes, keyBytes: oldBlob, keyOffsets: oldOffsets, numbers: oldNumbers } = previous;
  const oldCount = oldHashes.length;
  let i = 0;
  let j = 0;
  while (i < clustered && j < oldCount) {
    const h = hashes[i]!;
    const oldH = oldHashes[j]!;
    if (h < oldH) i++;
    else if (h > oldH) j++;
    else {
      const cmp = compareBytes(blob, keyOffsets[i]!, keyOffsets[i + 1]!, oldBlob, oldOffsets[j]!, oldOffsets[j + 1]!);
      if (cmp < 0) i++;
      else if (cmp > 0) j++;
      else oldNumber[i++] = oldNumbers[j++]!;
    }
  }
  countOld(entries);
}

function countOld(entries: Entries): void {
  const { clustered, oldNumber } = entries;
  let maxOld = 0;
  let withOld = 0;
  for (let e = 0; e < clustered; e++) {
    const old = oldNumber[e]!;
    if (old !== 0) {
      withOld++;
      if (old > maxOld) maxOld = old;
    }
  }
  entries.maxOld = maxOld;
  entries.withOld = withOld;
}

/**
 * Pass 2: bucket the entries that had a number by that number (counting
 * sort), hand each old number to the component with most of its members, and
 * let each component keep the smallest it receives. Answers the number per
 * component, 0 where none was received.
 */
function resolveOldNumbers(entries: Entries, count: number): Uint32Array {
  const { clustered, oldNumber, entryComponent, maxOld, withOld } = entries;
  const bucketStart = new Uint32Array(maxOld + 2);
  for (let e = 0; e < clustered; e++) {
    const old = oldNumber[e]!;
    if (old !== 0) bucketStart[old + 1]!++;
  }
  for (let o = 1; o < bucketStart.length; o++) bucketStart[o]! += bucketStart[o - 1]!;
  const bucketed = new Uint32Array(withOld);
  const fill = bucketStart.slice(0, maxOld + 1);
  for (let e = 0; e < clustered; e++) {
    const old = oldNumber[e]!;
    if (old !== 0) bucketed[fill[old]!++] = e;
  }

  const componentNumber = new Uint32Array(count);
  const tally = new Uint32Array(count);
  for (let o = 1; o <= maxOld; o++) {
    const from = bucketStart[o]!;
    const to = bucketStart[o + 1]!;
    if (from === to) continue;
    let best = -1;
    let bestCount = 0;
    let tie = false;
    for (let k = from; k < to; k++) {
      const c = entryComponent[bucketed[k]!]!;
      const n = ++tally[c]!;
      if (n > bestCount) {
        best = c;
        bestCount = n;
        tie = false;
      } else if (n === bestCount && c !== best) {
        tie = true;
      }
    }
    if (tie) best = breakTie(bucketed, from, to, entryComponent, tally, bestCount, entries.blob, entries.keyOffsets);
    for (let k = from; k < to; k++) tally[entryComponent[bucketed[k]!]!] = 0;
    // Numbers arrive in ascending order, so the first one a component receives is its smallest.
    if (componentNumber[best] === 0) componentNumber[best] = o;
  }
  return componentNumber;
}

/**
 * Pass 3: fresh numbers from `nextNumber` on, in order of each unnumbered
 * component's smallest key; answers the new nextNumber. Only unnumbered
 * components need their smallest key (few, on a rebuild). Keys are compared
 * by their first eight bytes (two big-endian words, zero-padded, so a smaller
 * prefix means a smaller key) before touching the blob.
 */
function assignFreshNumbers(entries: Entries, componentNumber: Uint32Array, nextNumber: number): number {
  const { clustered, entryComponent, blob, keyOffsets } = entries;
  const count = componentNumber.length;
  let freshCount = 0;
  for (let c = 0; c < count; c++) if (componentNumber[c] === 0) freshCount++;
  if (freshCount === 0) return nextNumber;
  if (nextNumber + freshCount > MAX_NUMBER + 1) throw new RangeError('cluster numbers exhausted');

  const minEntry = new Int32Array(count).fill(-1);
  const minHigh = new Uint32Array(count);
  const minLow = new Uint32Array(count);
  for (let e = 0; e < clustered; e++) {
    const c = entryComponent[e]!;
    if (componentNumber[c] !== 0) continue;
    const start = keyOffsets[e]!;
    const end = keyOffsets[e + 1]!;
    const high = keyWord(blob, start, end);
    const current = minEntry[c]!;
    if (current >= 0 && high > minHigh[c]!) continue;
    const low = keyWord(blob, start + 4, end);
    if (
      current < 0 ||
      high < minHigh[c]! ||
      low < minLow[c]! ||
      (low === minLow[c] && compareEntries(blob, keyOffsets, e, current) < 0)
    ) {
      minEntry[c] = e;
      minHigh[c] = high;
      minLow[c] = low;
    }
  }

  // Sort the unnumbered components by their smallest key, with the prefixes
  // gathered side by side so most comparisons stay in cache.
  const freshComponent = new Uint32Array(freshCount);
  const freshHigh = new Uint32Array(freshCount);
  const freshLow = new Uint32Array(freshCount);
  const freshMin = new Uint32Array(freshCount);
  for (let c = 0, k = 0; c < count; c++) {
    if (componentNumber[c] !== 0) continue;
    if (minEntry[c]! < 0) throw new RangeError(`component ${c} has no members in components.of`);
    freshComponent[k] = c;
    freshHigh[k] = minHigh[c]!;
    freshLow[k] = minLow[c]!;
    freshMin[k] = minEntry[c]!;
    k++;
  }
  const order = new Uint32Array(freshCount);
  for (let k = 0; k < freshCount; k++) order[k] = k;
  order.sort(
    (a, b) =>
      freshHigh[a]! - freshHigh[b]! ||
      freshLow[a]! - freshLow[b]! ||
      compareEntries(blob, keyOffsets, freshMin[a]!, freshMin[b]!),
  );
  for (let k = 0; k < freshCount; k++) componentNumber[freshComponent[order[k]!]!] = nextNumber++;
  return nextNumber;
}

/** Among components tied at `bestCount` votes, the one whose smallest voting key sorts first. */
function breakTie(
  bucketed: Uint32Array,
  from: number,
  to: number,
  entryComponent: Int32Array,
  tally: Uint32Array,
  bestCount: number,
  blob: Uint8Array,
  keyOffsets: Uint32Array,
): number {
  let best = -1;
  let bestEntry = -1;
  for (let k = from; k < to; k++) {
    const e = bucketed[k]!;
    const c = entryComponent[e]!;
    if (tally[c] !== bestCount) continue;
    if (bestEntry < 0 || compareEntries(blob, keyOffsets, e, bestEntry) < 0) {
      best = c;
      bestEntry = e;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------
// Persistence
//
// File layout: 16-byte header, then a msgpack body.
//   0  magic "UPCI"
//   4  format version, uint32 LE
//   8  body length, uint32 LE
//   12 crc32 of the body, uint32 LE
// Body: { nextNumber, keyBytes: bin, keyOffsets: bin (Uint32 LE), numbers: bin (Uint32 LE) }.
// The arrays travel as raw bytes, so millions of keys cost three bin fields
// rather than millions of msgpack values; the uint32 arrays are native
// typed-array bytes, little-endian on every platform the service runs on.
// Entries are in (hashBytes(key), key bytes) order, so the hash function is
// part of the format: changing it needs a new version.

const MAGIC = 0x49435055; // "UPCI" read as uint32 LE
const FORMAT_VERSION = 1;
const HEADER_BYTES = 16;

const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

/** Read the state; a missing file is the empty state of a first build. */
export async function readClusterIdState(path: string): Promise<ClusterIdState> {
  let file: Buffer;
  try {
    file = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyClusterIdState();
    throw error;
  }
  return decodeState(path, file);
}

/** Persist the state atomically (a crash leaves the old file or the new one). */
export async function writeClusterIdState(path: string, state: ClusterIdState): Promise<void> {
  if (!(state instanceof PackedClusterIdState)) {
    throw new TypeError('writeClusterIdState needs a state from emptyClusterIdState, assignClusterNumbers or readClusterIdState');
  }
  const body = packr.pack({
    nextNumber: state.nextNumber,
    keyBytes: state.keyBytes,
    keyOffsets: asBytes(state.keyOffsets),
    numbers: asBytes(state.numbers),
  });
  if (body.length > MAX_NUMBER) throw new RangeError('cluster id state too large to persist');
  const header = new Uint8Array(HEADER_BYTES);
  const view = new DataView(header.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, FORMAT_VERSION, true);
  view.setUint32(8, body.length, true);
  view.setUint32(12, crc32(body), true);
  await writeFileAtomic(path, [header, body]);
}

function decodeState(path: string, file: Uint8Array): ClusterIdState {
  const fail: (why: string, cause?: unknown) => never = (why, cause) => {
    throw new ClusterStateError(`cluster id state ${path} is unusable: ${why}`, cause === undefined ? undefined : { cause });
  };
  if (file.length < HEADER_BYTES) fail(`truncated (${file.length} bytes)`);
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  if (view.getUint32(0, true) !== MAGIC) fail('not a cluster id state file (bad magic)');
  const version = view.getUint32(4, true);
  if (version !== FORMAT_VERSION) fail(`unknown format version ${version} (this build reads version ${FORMAT_VERSION})`);
  const bodyLength = view.getUint32(8, true);
  if (file.length - HEADER_BYTES !== bodyLength) fail(`body is ${file.length - HEADER_BYTES} bytes, header says ${bodyLength}`);
  const body = file.subarray(HEADER_BYTES);
  if (crc32(body) !== view.getUint32(12, true)) fail('checksum mismatch');

  let decoded: unknown;
  try {
    decoded = unpackr.unpack(body);
  } catch (error) {
    fail('body is not valid msgpack', error);
  }
  if (decoded === null || typeof decoded !== 'object') fail('body is not a map');
  const { nextNumber, keyBytes, keyOffsets: offsetBytes, numbers: numberBytes } = decoded as Record<string, unknown>;
  if (typeof nextNumber !== 'number' || !Number.isInteger(nextNumber) || nextNumber < 1 || nextNumber > MAX_NUMBER + 1) {
    fail('nextNumber is missing or not a positive integer');
  }
  const next = nextNumber as number;
  if (!(keyBytes instanceof Uint8Array)) fail('keyBytes is missing');
  if (!(offsetBytes instanceof Uint8Array) || offsetBytes.length % 4 !== 0) fail('keyOffsets is missing or not whole uint32s');
  if (!(numberBytes instanceof Uint8Array) || numberBytes.length % 4 !== 0) fail('numbers is missing or not whole uint32s');
  const keys = plainBytes(keyBytes as Uint8Array);
  const offsets = uint32FromBytes(offsetBytes as Uint8Array);
  const numbers = uint32FromBytes(numberBytes as Uint8Array);
  if (offsets.length !== numbers.length + 1) fail(`${numbers.length} numbers but ${offsets.length} key offsets`);
  if (offsets[0] !== 0) fail('keyOffsets does not start at 0');
  for (let i = 1; i < offsets.length; i++) {
    if (offsets[i]! < offsets[i - 1]!) fail(`keyOffsets decreases at ${i}`);
  }
  if (offsets[offsets.length - 1] !== keys.length) fail('keyOffsets does not end at the key bytes length');
  for (let i = 0; i < numbers.length; i++) {
    const n = numbers[i]!;
    if (n === 0 || n >= next) fail(`number ${n} at entry ${i} is outside 1..${next - 1}`);
  }
  // Hashes are not stored: recomputing them is one sequential pass, and
  // checking the (hash, key) order also catches duplicates and any damage the
  // checksum could not (a file written by a faulty build).
  const hashes = new Uint32Array(numbers.length);
  for (let e = 0; e < numbers.length; e++) {
    const hash = hashBytes(keys, offsets[e]!, offsets[e + 1]!);
    hashes[e] = hash;
    if (e > 0) {
      const before = hashes[e - 1]!;
      if (hash < before || (hash === before && compareEntries(keys, offsets, e - 1, e) >= 0)) {
        fail(`entries out of order or repeated at entry ${e}`);
      }
    }
  }
  return new PackedClusterIdState(next, keys, offsets, numbers, hashes);
}

// ---------------------------------------------------------------------------
// Byte helpers

/** FNV-1a with a murmur3 finaliser, so low bits (the table slot) are well mixed. */
function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
  return finishHash(h);
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function finishHash(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Four key bytes from `start` as a big-endian uint32, zero-padded past `end`. */
function keyWord(blob: Uint8Array, start: number, end: number): number {
  let word = 0;
  for (let i = start; i < start + 4; i++) word = (word << 8) | (i < end ? blob[i]! : 0);
  return word >>> 0;
}

/** Lexicographic order of two entries' key bytes. */
function compareEntries(blob: Uint8Array, keyOffsets: Uint32Array, a: number, b: number): number {
  return compareBytes(blob, keyOffsets[a]!, keyOffsets[a + 1]!, blob, keyOffsets[b]!, keyOffsets[b + 1]!);
}

function compareBytes(a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): number {
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
const decoder = new TextDecoder();
let scratch = new Uint8Array(1024);

/** UTF-8 encode `key` at `at` (room for key.length * 3 bytes is assured); returns the end. */
function encodeInto(key: string, target: Uint8Array, at: number): number {
  // VPA keys are ASCII: copy char codes, and only hand other text to TextEncoder.
  const length = key.length;
  for (let i = 0; i < length; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x80) return at + encoder.encodeInto(key, target.subarray(at)).written;
    target[at + i] = c;
  }
  return at + length;
}

function grow(blob: Uint8Array, needed: number): Uint8Array<ArrayBuffer> {
  let capacity = blob.length * 2;
  while (capacity < needed) capacity *= 2;
  const grown = new Uint8Array(capacity);
  grown.set(blob);
  return grown;
}

function asBytes(array: Uint32Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

/** A plain Uint8Array view (msgpackr hands back Buffers). */
function plainBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Reinterpret little-endian uint32 bytes, copying when the view is misaligned. */
function uint32FromBytes(bytes: Uint8Array): Uint32Array {
  if (bytes.byteOffset % 4 === 0) return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  // A fresh copy: Buffer#slice would share (and keep) the misaligned memory.
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Uint32Array(copy.buffer);
}
