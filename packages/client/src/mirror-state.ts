/**
 * A state the mirror holds: a verified manifest and its entry set, with an
 * index for lookups. Immutable once built, so a sync builds the next one
 * aside and swaps it in with one assignment while lookups go on reading
 * the last.
 */
import type { MirrorEntries, MirrorManifest } from './mirror-format.js';

/**
 * Entries an index bucket holds on average, at most. A binary search over
 * all of 10M entries misses the cache at most of its 24 steps (about 1 µs);
 * within a bucket it reads one or two cache lines.
 */
const ENTRIES_PER_BUCKET = 8;
/** Top bits of the hash the index is keyed on, at most: 2^20 buckets (4 MiB) for 8M entries and more. */
const MAX_INDEX_BITS = 20;

export class MirrorState {
  readonly manifest: MirrorManifest;
  readonly entries: MirrorEntries;
  /** The manifest's `created_at`, ms since the epoch. */
  readonly createdAtMs: number;
  /** Bucket b's entries are [starts[b], starts[b + 1]): those whose hash starts with b's INDEX bits. */
  readonly #starts: Uint32Array;
  readonly #shift: number;

  constructor(manifest: MirrorManifest, entries: MirrorEntries) {
    this.manifest = manifest;
    this.entries = entries;
    this.createdAtMs = Date.parse(manifest.created_at);
    // At least one bit: a shift by 32 would be a shift by 0.
    const bits = Math.max(1, Math.min(MAX_INDEX_BITS, Math.floor(Math.log2(Math.max(1, entries.count / ENTRIES_PER_BUCKET)))));
    this.#shift = 32 - bits;
    this.#starts = bucketStarts(entries, bits);
  }

  get version(): number {
    return this.manifest.version;
  }

  /**
   * Index of the entry of this hash prefix (its two big-endian words), or
   * -1: findMirrorEntry's search, within the prefix's bucket.
   */
  find(hi: number, lo: number): number {
    const bucket = hi >>> this.#shift;
    const { hi: his, lo: los } = this.entries;
    let low = this.#starts[bucket]!;
    let high = this.#starts[bucket + 1]! - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const h = his[mid]!;
      const l = los[mid]!;
      if (h < hi || (h === hi && l < lo)) low = mid + 1;
      else if (h === hi && l === lo) return mid;
      else high = mid - 1;
    }
    return -1;
  }
}

function bucketStarts(entries: MirrorEntries, bits: number): Uint32Array {
  const buckets = 2 ** bits;
  const shift = 32 - bits;
  const starts = new Uint32Array(buckets + 1);
  let i = 0;
  for (let bucket = 0; bucket <= buckets; bucket++) {
    while (i < entries.count && entries.hi[i]! >>> shift < bucket) i++;
    starts[bucket] = i;
  }
  return starts;
}
