import { asciiBytes, ByteScratch, putAscii, putBytes, putDigits, putPiece } from '../common/byte-scratch.js';
import {
  RANGE_RECORD_WORDS,
  RECORD_CLUSTER,
  RECORD_FIELDS,
  firstInRange,
  largestRange,
  rangeOf,
  recordClustered,
  recordConfidence,
  recordRiskCategory,
  type DeltaHashes,
  type HashRanges,
} from '../engine/hash-ranges.js';
import type { ServingView } from '../engine/serving-view.js';
import { NO_CLUSTER, type SnapshotData } from '../engine/snapshot-data.js';
import { CLUSTER_ID_PREFIX } from '../engine/verdict.js';
import { RISK_CATEGORIES } from '../vpa/categories.js';
import { vpaHashWords } from '../vpa/vpa-hash.js';
import { putConfidence } from './flagged-verdict-bytes.js';

/**
 * GET /v1/verify/upi/range/{prefix} (docs/api.md, "Private lookups"):
 * every flagged VPA whose h(upi) begins with the five hex digits, as its
 * other 59 digits and its verdict's fields, in suffix order.
 *
 * Padded, every answer of one data version has as many entries as the
 * largest range holds and the same length in bytes: padding entries carry
 * suffixes no VPA has and fields like a real entry's, and every entry is
 * written ENTRY_WIDTH bytes wide (JSON's spaces before its closing brace).
 * The padding is a function of the data version and the prefix alone, so
 * an answer may be cached by its ETag.
 *
 * A snapshot VPA's entry comes from its range record (engine/hash-ranges.ts),
 * read side by side with the rest of its range; a VPA of the delta from
 * the delta's hashes and fields. The answer is written as
 * bytes into a reused buffer (byte-scratch.ts), the entries kept as hash
 * words and field codes in reused arrays until then, the padding copied
 * from views made with its pool: an answer allocates next to nothing
 * (bench/MEASUREMENTS.md, "Range lookup p99").
 */

/** Hex digits of a range prefix. */
export const PREFIX_DIGITS = 5;
const PREFIX_BITS = 4 * PREFIX_DIGITS;
/** No cluster, in `cluster` below. */
const NONE = -1;

const ENTRY_START = asciiBytes('{"suffix":"');
const STATUS_CATEGORY = asciiBytes('","status":"FLAGGED","risk_category":"');
const CONFIDENCE = asciiBytes('","confidence":');
const CLUSTER_NULL = asciiBytes(',"cluster_id":null');
const CLUSTER_ID = asciiBytes(`,"cluster_id":"${CLUSTER_ID_PREFIX}`);
const CATEGORY_TEXT = RISK_CATEGORIES.map((name) => asciiBytes(name));
/** What follows a suffix up to the confidence, by risk category: one copy instead of three. */
const AFTER_SUFFIX = RISK_CATEGORIES.map((name) => asciiBytes(`","status":"FLAGGED","risk_category":"${name}","confidence":`));
const HEX = asciiBytes('0123456789abcdef');
/** Each byte's two hex digits. */
const HEX_PAIRS = Uint8Array.from({ length: 512 }, (_, i) => HEX[i & 1 ? (i >>> 1) & 15 : i >>> 5]!);
const SPACE = 0x20;
const QUOTE = 0x22;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
/** The widest entry: the longest risk category, a 6-character confidence (0.0001) and the largest cluster id. */
const ENTRY_WIDTH =
  ENTRY_START.length + 64 - PREFIX_DIGITS + STATUS_CATEGORY.length + Math.max(...CATEGORY_TEXT.map((t) => t.length)) + CONFIDENCE.length + 6 + CLUSTER_ID.length + 10 + 2;
/** Room for an answer's start and end around its entries. */
const FRAME_BOUND = 256;

/** The range a prefix names (0 to 2^20 - 1), or -1 unless it is five lowercase hex digits. */
export function parseRangePrefix(text: string): number {
  return /^[0-9a-f]{5}$/.test(text) ? Number.parseInt(text, 16) : -1;
}

/** An answer's entries before they are written: each one's hash words and fields, reused from answer to answer. */
class RangeEntries {
  count = 0;
  words = new Uint32Array(8 * 32);
  category = new Uint8Array(32);
  confidence = new Uint16Array(32);
  /** Cluster number, or NONE. */
  cluster = new Float64Array(32);
  /** Padding pool entries drawn for the answer. */
  readonly picks: number[] = [];
  /** Entry indexes, and padding picks as -1 - pick, in suffix order. */
  readonly order: number[] = [];

  /** A new entry's index; its words are to be written at 8 times it. */
  add(category: number, confidence: number, cluster: number): number {
    if (this.count === this.category.length) this.#grow();
    const i = this.count++;
    this.category[i] = category;
    this.confidence[i] = confidence;
    this.cluster[i] = cluster;
    return i;
  }

  #grow(): void {
    const size = 2 * this.category.length;
    const words = new Uint32Array(8 * size);
    words.set(this.words);
    this.words = words;
    const category = new Uint8Array(size);
    category.set(this.category);
    this.category = category;
    const confidence = new Uint16Array(size);
    confidence.set(this.confidence);
    this.confidence = confidence;
    const cluster = new Float64Array(size);
    cluster.set(this.cluster);
    this.cluster = cluster;
  }
}

const entries = new RangeEntries();

/**
 * The largest range of the view last answered, by its version (not the
 * objects: holding them would keep a replaced snapshot's ranges in memory):
 * a walk over every range the delta touches, once per state of the delta
 * rather than once per answer.
 */
let largestFor: string | null = null;
let largestCount = 0;

function paddedCount(view: ServingView, ranges: HashRanges, delta: DeltaHashes | null): number {
  if (view.version !== largestFor) {
    largestCount = largestRange(ranges, delta);
    largestFor = view.version;
  }
  return largestCount;
}
const hashWords = new Uint32Array(8);

/** How many bytes an answer of `count` entries may take, for a ByteScratch to be sized. */
export function rangeAnswerBound(count: number, version: string): number {
  return FRAME_BOUND + version.length + count * (ENTRY_WIDTH + 1);
}

/** The answer for `range` from `view`, whose snapshot's ranges are `ranges` and whose delta's hashes are `delta`, written into `out`. */
export function answerRange(view: ServingView, ranges: HashRanges, delta: DeltaHashes | null, range: number, padded: boolean, out: ByteScratch): Uint8Array {
  entries.count = 0;
  const overlay = delta !== null ? view.delta : null;
  const held = overlay !== null ? deltaInRange(delta!, range) : 0;
  const records = ranges.records;
  for (let i = ranges.starts[range]!; i < ranges.starts[range + 1]!; i++) {
    const at = RANGE_RECORD_WORDS * i;
    // A VPA the delta holds is answered from the delta, below (or not at all, when a correction took it back).
    if (held > 0 && heldByDelta(records, at, delta!.words, held)) continue;
    const fields = records[at + RECORD_FIELDS]!;
    addReal(records, at, recordRiskCategory(fields), recordConfidence(fields), recordClustered(fields) ? records[at + RECORD_CLUSTER]! : NONE);
  }
  if (held > 0) addDeltaEntries(overlay!.data, delta!.words, held);
  entries.picks.length = 0;
  const pool = padded ? paddingPool(view) : null;
  if (pool !== null) addPadding(pool, view.version, range, entries.count, paddedCount(view, ranges, delta));
  sortBySuffix(pool);

  const version = versionJson(view.version);
  const b = out.clear().room(rangeAnswerBound(entries.order.length, version));
  let at = putAscii(b, 0, '{"prefix":"');
  at = putDigits(b, at, range, 16, PREFIX_DIGITS);
  at = putAscii(b, at, '","data_version":');
  at = putAscii(b, at, version);
  at = putAscii(b, at, ',"entries":[');
  for (let k = 0; k < entries.order.length; k++) {
    if (k > 0) b[at++] = COMMA;
    const item = entries.order[k]!;
    at = item >= 0 ? putEntry(b, at, item, padded) : putBytes(b, at, pool!.entries[-1 - item]!, 0, ENTRY_WIDTH);
  }
  at = putAscii(b, at, ']}');
  return out.commit(at).view();
}

function addReal(words: Uint32Array, at: number, category: number, confidence: number, cluster: number): void {
  const i = entries.add(category, confidence, cluster);
  for (let k = 0; k < 8; k++) entries.words[8 * i + k] = words[at + k]!;
}

/** The entries of the first `held` VPAs in `deltaHeld` that count, from the overlay `d` and their hashes in `words` by overlay id. */
function addDeltaEntries(d: SnapshotData, words: Uint32Array, held: number): void {
  for (let k = 0; k < held; k++) {
    const id = deltaHeld[k]!;
    if (d.evidenceCount[id] === 0) continue;
    const cluster = d.vpaCluster[id]!;
    addReal(words, 8 * id, d.riskCategory[id]!, d.confidence[id]!, cluster === NO_CLUSTER ? NONE : d.clusterNumber[cluster]!);
  }
}

/** The overlay ids of the delta's VPAs in the range being answered, reused from answer to answer. */
const deltaHeld: number[] = [];

/** Gathers into `deltaHeld` the VPAs of the delta (whose hashes are `delta`) in `range`: a range holds few of them. Returns how many. */
function deltaInRange(delta: DeltaHashes, range: number): number {
  deltaHeld.length = 0;
  for (let i = firstInRange(delta, range); i < delta.sorted.length; i++) {
    const id = delta.sorted[i]!;
    if (rangeOf(delta.heads.hi[id]!) !== range) break;
    deltaHeld.push(id);
  }
  return deltaHeld.length;
}

/** Whether the hash at `at` in `words` is that of one of the first `held` VPAs in `deltaHeld`, whose hashes are in `theirs` by overlay id. */
function heldByDelta(words: Uint32Array, at: number, theirs: Uint32Array, held: number): boolean {
  for (let k = 0; k < held; k++) {
    const from = 8 * deltaHeld[k]!;
    let same = true;
    for (let w = 0; w < 8 && same; w++) same = words[at + w] === theirs[from + w];
    if (same) return true;
  }
  return false;
}

/**
 * Padding up to `target` entries, drawn from the snapshot's padding pool
 * (into `entries.picks`, as pool indexes) by a xoshiro128** generator
 * seeded from h of the data version, the range mixed in, so that an answer
 * is the same for every caller and every server of the version.
 */
function addPadding(pool: PaddingPool, version: string, range: number, real: number, target: number): void {
  const random = paddingRandom.seed(versionSeed(version), range);
  const picks = entries.picks;
  while (real + picks.length < target) {
    const pick = random.next() % PADDING_POOL;
    if (!picks.includes(pick) && !sameSuffixAsReal(pool.words, pick, real)) picks.push(pick);
  }
}

/** True when pool entry `pick` has the suffix of one of the first `real` entries (a chance of 2^-236). */
function sameSuffixAsReal(words: Uint32Array, pick: number, real: number): boolean {
  for (let r = 0; r < real; r++) {
    if (compareSuffixes(words, 8 * pick, entries.words, 8 * r) === 0) return true;
  }
  return false;
}

/** h of the padding's name for a data version, made once per version (its first four words). */
const seedWords = new Uint32Array(4);
let seededVersion: string | null = null;

function versionSeed(version: string): Uint32Array {
  if (version !== seededVersion) {
    seedWords.set(vpaHashWords(`padding/${version}`, hashWords).subarray(0, 4));
    seededVersion = version;
  }
  return seedWords;
}

/** The data version as a JSON string, made once per version. */
let jsonVersion = '';
let jsonOf: string | null = null;

function versionJson(version: string): string {
  if (version !== jsonOf) {
    jsonVersion = JSON.stringify(version);
    jsonOf = version;
  }
  return jsonVersion;
}

/**
 * A xoshiro128** generator seeded from four words and a number mixed into
 * them (a range, or 0). Seeded again for each answer rather than made anew,
 * so that an answer allocates nothing for it.
 */
class SeededRandom {
  #a = 0;
  #b = 0;
  #c = 0;
  #d = 0;

  seed(words: Uint32Array, mix: number): this {
    this.#a = (words[0]! ^ Math.imul(mix, 0x9e3779b9)) | 1;
    this.#b = words[1]! ^ Math.imul(mix ^ 0x85ebca6b, 0xc2b2ae35);
    this.#c = words[2]!;
    this.#d = words[3]! ^ mix;
    return this;
  }

  next(): number {
    const result = Math.imul(rotate(Math.imul(this.#b, 5), 7), 9) >>> 0;
    const t = this.#b << 9;
    this.#c ^= this.#a;
    this.#d ^= this.#b;
    this.#b ^= this.#c;
    this.#a ^= this.#d;
    this.#c ^= t;
    this.#d = rotate(this.#d, 11);
    return result;
  }
}

const paddingRandom = new SeededRandom();

/**
 * PADDING_POOL padding entries of a snapshot, written once (a serving thread
 * makes it at its first padded answer over the snapshot): random suffixes,
 * and fields spread as flagged VPAs' are, a cluster, when one is named,
 * being one of the snapshot's. A suffix is no part of the range, so one pool
 * serves every range; a caller comparing ranges can tell padding from real
 * entries, as it can by asking with the padding off, while the answers'
 * size still tells an observer of the connection nothing.
 */
interface PaddingPool {
  readonly snapshotId: string;
  /** Each entry's hash words, the range's bits zero. */
  readonly words: Uint32Array;
  /** Each entry written ENTRY_WIDTH bytes wide, a view each of one buffer: copied whole, an answer makes no view. */
  readonly entries: readonly Uint8Array[];
  /** Each entry's place in suffix order: an answer's picks are ordered by it (sortBySuffix). */
  readonly rank: Uint16Array;
}

const PADDING_POOL = 4096;
let pool: PaddingPool | null = null;

function paddingPool(view: ServingView): PaddingPool {
  const snapshotId = view.base.meta.id;
  if (pool !== null && pool.snapshotId === snapshotId) return pool;
  const random = new SeededRandom().seed(vpaHashWords(`padding/${snapshotId}`, hashWords), 0);
  const next = () => random.next();
  const clusters = view.base.data.clusterNumber;
  const saved = entries.count;
  const words = new Uint32Array(8 * PADDING_POOL);
  const bytes = new Uint8Array(PADDING_POOL * ENTRY_WIDTH);
  for (let p = 0; p < PADDING_POOL; p++) {
    for (let k = 0; k < 8; k++) words[8 * p + k] = next();
    words[8 * p] = words[8 * p]! & ((1 << (32 - PREFIX_BITS)) - 1);
    // Written through the entries' own writer, as the entry past the answer's ones.
    const i = entries.add(next() % RISK_CATEGORIES.length, 3000 + (next() % 6999), clusters.length === 0 || (next() & 1) === 0 ? NONE : clusters[next() % clusters.length]!);
    entries.words.set(words.subarray(8 * p, 8 * p + 8), 8 * i);
    putEntry(bytes, p * ENTRY_WIDTH, i, true);
    entries.count = saved;
  }
  const rank = new Uint16Array(PADDING_POOL);
  Array.from({ length: PADDING_POOL }, (_, p) => p)
    .sort((a, b) => compareSuffixes(words, 8 * a, words, 8 * b))
    .forEach((p, at) => (rank[p] = at));
  pool = { snapshotId, words, entries: Array.from({ length: PADDING_POOL }, (_, p) => bytes.subarray(p * ENTRY_WIDTH, (p + 1) * ENTRY_WIDTH)), rank };
  return pool;
}

function rotate(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/**
 * `entries.order`: the real entries (their indexes) and the padding picks
 * (-1 - pick) in suffix order: the picks by their rank in the pool, the
 * real entries (a handful) by insertion, then the two merged.
 */
function sortBySuffix(pool: PaddingPool | null): void {
  const order = entries.order;
  const words = entries.words;
  order.length = 0;
  for (let i = 0; i < entries.count; i++) {
    let j = i - 1;
    while (j >= 0 && compareSuffixes(words, 8 * order[j]!, words, 8 * i) > 0) {
      order[j + 1] = order[j]!;
      j--;
    }
    order[j + 1] = i;
  }
  const picks = entries.picks;
  if (picks.length === 0) return;
  for (let k = 0; k < picks.length; k++) order.push(0);
  for (let i = 1; i < picks.length; i++) {
    const pick = picks[i]!;
    let j = i - 1;
    while (j >= 0 && pool!.rank[picks[j]!]! > pool!.rank[pick]!) {
      picks[j + 1] = picks[j]!;
      j--;
    }
    picks[j + 1] = pick;
  }
  // Merged from the back, in place: the real entries move up as the picks go in behind them.
  let r = entries.count - 1;
  let p = picks.length - 1;
  for (let at = entries.count + picks.length - 1; p >= 0; at--) {
    if (r >= 0 && compareSuffixes(words, 8 * order[r]!, pool!.words, 8 * picks[p]!) > 0) order[at] = order[r--]!;
    else order[at] = -1 - picks[p--]!;
  }
}

/** Orders two hashes by their suffixes: the words after the range's bits. */
function compareSuffixes(x: Uint32Array, a: number, y: Uint32Array, b: number): number {
  const mask = (1 << (32 - PREFIX_BITS)) - 1;
  const first = (x[a]! & mask) - (y[b]! & mask);
  if (first !== 0) return first;
  for (let k = 1; k < 8; k++) {
    const p = x[a + k]!;
    const q = y[b + k]!;
    if (p !== q) return p > q ? 1 : -1;
  }
  return 0;
}

function putEntry(b: Uint8Array, start: number, i: number, padded: boolean): number {
  let at = putPiece(b, start, ENTRY_START);
  const w = entries.words;
  // The suffix: the first word's last three hex digits, then the other seven words' eight each, a byte's two at a time.
  const first = w[8 * i]!;
  b[at++] = HEX[(first >>> 8) & 15]!;
  at = putHexByte(b, at, first & 255);
  for (let k = 1; k < 8; k++) {
    const word = w[8 * i + k]!;
    at = putHexByte(b, at, word >>> 24);
    at = putHexByte(b, at, (word >>> 16) & 255);
    at = putHexByte(b, at, (word >>> 8) & 255);
    at = putHexByte(b, at, word & 255);
  }
  const afterSuffix = AFTER_SUFFIX[entries.category[i]!]!;
  at = putPiece(b, at, afterSuffix);
  at = putConfidence(b, at, entries.confidence[i]!);
  const cluster = entries.cluster[i]!;
  if (cluster === NONE) at = putPiece(b, at, CLUSTER_NULL);
  else {
    at = putPiece(b, at, CLUSTER_ID);
    at = putDigits(b, at, cluster, 10, 1);
    b[at++] = QUOTE;
  }
  if (padded) while (at < start + ENTRY_WIDTH - 1) b[at++] = SPACE;
  b[at++] = CLOSE_BRACE;
  return at;
}

function putHexByte(b: Uint8Array, at: number, byte: number): number {
  b[at] = HEX_PAIRS[2 * byte]!;
  b[at + 1] = HEX_PAIRS[2 * byte + 1]!;
  return at + 2;
}
