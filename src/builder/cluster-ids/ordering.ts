import { compareEntries, decoder } from './key-bytes.js';

/** Pass 1's output: clustered VPAs in VpaId order. */
export interface Collected {
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
export interface Entries {
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

/**
 * Put the entries in (hash, key bytes) order. Permuting ~100 MB of keys with
 * random reads costs a cache and TLB miss per key, so instead: one sequential
 * pass scatters every entry into 256 buckets by the top byte of its hash
 * (few enough write streams to stay cached), then each bucket, small enough
 * to sit in cache, is radix-sorted on the rest of the hash and gathered into
 * place. Keys are compared only inside runs of equal hashes, which is also
 * where a repeated key is caught.
 */
export function sortEntries(collected: Collected): Entries {
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

  return { clustered, ...sorted, maxOld: 0, withOld: 0 };
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

