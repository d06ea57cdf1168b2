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
/**
 * Bits of the presence filter per entry, about: a bit per value of the
 * hash's top bits, set for those an entry has. At 12 a miss finds its bit
 * clear 93 % of the time, and most payees are misses, so most checks read
 * one word of the filter and never the entries (bench/MEASUREMENTS.md,
 * "Private lookups"): 16 MiB at 10M entries.
 */
const FILTER_BITS_PER_ENTRY = 12;
/** The filter's key bits: at least 2^10, at most 2^28 bits (32 MiB). */
const MIN_FILTER_BITS = 10;
const MAX_FILTER_BITS = 28;

export class MirrorState {
  readonly manifest: MirrorManifest;
  readonly entries: MirrorEntries;
  /** The manifest's `created_at`, ms since the epoch. */
  readonly createdAtMs: number;
  /** Bucket b's entries are [starts[b], starts[b + 1]): those whose hash starts with b's INDEX bits. */
  readonly #starts: Uint32Array;
  readonly #shift: number;
  /** Bit k is set when an entry's hash starts with the #filterShift-less top bits k. */
  readonly #filter: Int32Array;
  readonly #filterShift: number;

  constructor(manifest: MirrorManifest, entries: MirrorEntries) {
    this.manifest = manifest;
    this.entries = entries;
    this.createdAtMs = Date.parse(manifest.created_at);
    // At least one bit: a shift by 32 would be a shift by 0.
    const bits = Math.max(1, Math.min(MAX_INDEX_BITS, Math.floor(Math.log2(Math.max(1, entries.count / ENTRIES_PER_BUCKET)))));
    this.#shift = 32 - bits;
    this.#starts = bucketStarts(entries, bits);
    const filterBits = Math.max(MIN_FILTER_BITS, Math.min(MAX_FILTER_BITS, Math.ceil(Math.log2(Math.max(1, entries.count * FILTER_BITS_PER_ENTRY)))));
    this.#filterShift = 32 - filterBits;
    this.#filter = presenceFilter(entries, filterBits);
  }

  get version(): number {
    return this.manifest.version;
  }

  /**
   * Index of the entry of this hash prefix (its two big-endian words), or
   * -1: most misses end at the filter; the others scan the prefix's bucket,
   * a few entries in one or two cache lines. A payee's first word matches
   * an entry's in about one lookup in 400 at 10M, so the second words
   * (another cache miss) are read only then.
   */
  find(hi: number, lo: number): number {
    const key = hi >>> this.#filterShift;
    if ((this.#filter[key >>> 5]! & (1 << (key & 31))) === 0) return -1;
    const bucket = hi >>> this.#shift;
    const { hi: his, lo: los } = this.entries;
    const end = this.#starts[bucket + 1]!;
    for (let i = this.#starts[bucket]!; i < end; i++) {
      const h = his[i]!;
      if (h < hi) continue;
      if (h > hi) return -1;
      const l = los[i]!;
      if (l === lo) return i;
      if (l > lo) return -1;
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

function presenceFilter(entries: MirrorEntries, bits: number): Int32Array {
  const filter = new Int32Array(2 ** (bits - 5));
  const shift = 32 - bits;
  for (let i = 0; i < entries.count; i++) {
    const key = entries.hi[i]! >>> shift;
    filter[key >>> 5]! |= 1 << (key & 31);
  }
  return filter;
}
