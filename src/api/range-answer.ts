import { firstInRange, largestRange, rangeOf, type DeltaHashes, type HashRanges } from '../engine/hash-ranges.js';
import type { ServingView } from '../engine/serving-view.js';
import type { SnapshotView } from '../engine/snapshot-view.js';
import { RISK_CATEGORIES } from '../vpa/categories.js';
import { formatClusterId } from '../engine/verdict.js';
import { vpaHashWords, wordsHex } from '../vpa/vpa-hash.js';

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
 */

/** Hex digits of a range prefix. */
export const PREFIX_DIGITS = 5;
const SUFFIX_DIGITS = 64 - PREFIX_DIGITS;

/** The widest entry: an 18-character risk category, a 6-character confidence (0.0001) and `"MC-4294967295"`. */
const ENTRY_WIDTH = entryText('0'.repeat(SUFFIX_DIGITS), 'nbfc_impersonation', '0.0001', '"MC-4294967295"').length;

interface RangeEntry {
  readonly suffix: string;
  readonly text: string;
}

/** The range a prefix names (0 to 2^20 - 1), or -1 unless it is five lowercase hex digits. */
export function parseRangePrefix(text: string): number {
  return /^[0-9a-f]{5}$/.test(text) ? Number.parseInt(text, 16) : -1;
}

/** The answer for `range` from `view`, whose snapshot's ranges are `ranges` and whose delta's hashes are `delta`. */
export function answerRange(view: ServingView, ranges: HashRanges, delta: DeltaHashes | null, range: number, padded: boolean): string {
  const words = new Uint32Array(8);
  const entries: RangeEntry[] = [];
  const base = view.base;
  for (let i = ranges.starts[range]!; i < ranges.starts[range + 1]!; i++) {
    const id = ranges.order[i]!;
    const key = base.keyOf(id);
    if (view.delta !== null) {
      // A VPA the delta holds is answered from the delta, below (or not at all, when a correction took it back).
      view.locate(key);
      if (view.located === view.delta) continue;
    }
    entries.push(realEntry(base, id, key, words));
  }
  if (delta !== null && view.delta !== null) {
    const overlay = view.delta;
    for (let i = firstInRange(delta, range); i < delta.sorted.length; i++) {
      const id = delta.sorted[i]!;
      if (rangeOf(delta.heads.hi[id]!) !== range) break;
      if (overlay.data.evidenceCount[id] === 0) continue;
      entries.push(realEntry(overlay, id, overlay.keyOf(id), words));
    }
  }
  if (padded) {
    const target = largestRange(ranges, delta);
    const taken = new Set(entries.map((e) => e.suffix));
    const random = paddingRandom(view.version, range, words);
    while (entries.length < target) {
      const entry = paddingEntry(view, range, random, words);
      if (taken.has(entry.suffix)) continue;
      taken.add(entry.suffix);
      entries.push(entry);
    }
  }
  entries.sort((a, b) => (a.suffix < b.suffix ? -1 : a.suffix > b.suffix ? 1 : 0));
  let body = `{"prefix":"${range.toString(16).padStart(PREFIX_DIGITS, '0')}","data_version":${JSON.stringify(view.version)},"entries":[`;
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) body += ',';
    const text = entries[i]!.text;
    body += padded ? text.slice(0, -1) + ' '.repeat(ENTRY_WIDTH - text.length) + '}' : text;
  }
  return body + ']}';
}

function realEntry(view: SnapshotView, id: number, key: string, words: Uint32Array): RangeEntry {
  const item = view.flaggedBatchItem(id, key);
  const suffix = wordsHex(vpaHashWords(key, words), PREFIX_DIGITS, 64);
  return { suffix, text: entryText(suffix, item.risk_category!, String(item.confidence), item.cluster_id === null ? 'null' : `"${item.cluster_id}"`) };
}

/**
 * The padding's random numbers for one range of one data version: a
 * xoshiro128** generator seeded from h of the two, so that an answer is the
 * same for every caller and every server of the version, at one hash a
 * request rather than one an entry.
 */
function paddingRandom(version: string, range: number, words: Uint32Array): () => number {
  vpaHashWords(`padding/${version}/${range}`, words);
  let a = words[0]! | 1;
  let b = words[1]!;
  let c = words[2]!;
  let d = words[3]!;
  return () => {
    const result = Math.imul(rotate(Math.imul(b, 5), 7), 9) >>> 0;
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotate(d, 11);
    return result;
  };
}

function rotate(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** A padding entry: its suffix and fields drawn from `random`. Confidences and categories spread as flagged VPAs' do; a cluster, when it names one, is one of the snapshot's. */
function paddingEntry(view: ServingView, range: number, random: () => number, words: Uint32Array): RangeEntry {
  for (let i = 0; i < 8; i++) words[i] = random();
  words[0] = (range << (32 - 4 * PREFIX_DIGITS)) | (words[0]! & ((1 << (32 - 4 * PREFIX_DIGITS)) - 1));
  const suffix = wordsHex(words, PREFIX_DIGITS, 64);
  const category = RISK_CATEGORIES[random() % RISK_CATEGORIES.length]!;
  const confidence = (3000 + (random() % 6999)) / 10_000;
  const clusters = view.base.data.clusterNumber;
  const cluster = clusters.length === 0 || (random() & 1) === 0 ? 'null' : `"${formatClusterId(clusters[random() % clusters.length]!)}"`;
  return { suffix, text: entryText(suffix, category, String(confidence), cluster) };
}

function entryText(suffix: string, category: string, confidence: string, cluster: string): string {
  return `{"suffix":"${suffix}","status":"FLAGGED","risk_category":"${category}","confidence":${confidence},"cluster_id":${cluster}}`;
}
