import { asciiBytes, putAscii, putBytes, putDigits, putPiece, type ByteScratch } from '../common/byte-scratch.js';
import { putIso } from '../common/time.js';
import type { SnapshotView } from '../engine/snapshot-view.js';
import { CONFIDENCE_SCALE, NO_CLUSTER, SOURCE_FLAG_SCREENSHOT } from '../engine/snapshot-data.js';
import { CLUSTER_ID_PREFIX } from '../engine/verdict.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../vpa/categories.js';
import { MAX_JSON_BYTES_PER_CHAR, jsonStringBound, putJsonString } from './answer-json.js';

/**
 * `verdictJson(view.flaggedVerdict(id, upi))` as UTF-8, written into `out`
 * straight from the snapshot's arrays: no verdict object, no source
 * objects, no timestamp or url strings. A flagged answer built as objects
 * and joined as text left kilobytes of garbage per answer (see
 * bench/MEASUREMENTS.md, 'The request path: allocation and native calls'); this is
 * the flagged counterpart of `clearedVerdictBytes`, and a test holds the
 * two ways to the same bytes.
 *
 * Returns null, having written nothing it keeps, when the answer might not
 * fit in `out` (a VPA seen on very many urls): the caller then writes the
 * text. The view is valid until `out` is written again.
 */
export function flaggedVerdictBytes(out: ByteScratch, view: SnapshotView, id: number, upi: string): Uint8Array | null {
  view.requireFlagged(id);
  const d = view.data;
  // Read up front: at scale each is a cache miss of its own, and read
  // together the CPU waits for them at once rather than one after another.
  const confidence = d.confidence[id]!;
  const risk = d.riskCategory[id]!;
  const cluster = d.vpaCluster[id]!;
  const firstSeen = d.firstSeen[id]!;
  const evidence = d.evidenceCount[id]!;
  const from = d.sourceOffsets[id]!;
  const to = d.sourceOffsets[id + 1]!;
  // Then what those name: the cluster, and the newest capture (sources are newest first).
  const clustered = cluster !== NO_CLUSTER;
  const clusterNumber = clustered ? d.clusterNumber[cluster]! : 0;
  const clusterSize = clustered ? view.clusterSize(cluster) : 0;
  const lastSeen = d.sourceCapturedAt[from]!;
  const bound = flaggedVerdictBound(view, id, upi);
  if (bound > out.capacity) return null;

  // Room for the bound once; the pieces are then put without a check or a method call each (byte-scratch.ts).
  const b = out.clear().room(bound);
  let at = putJsonString(b, putPiece(b, 0, UPI), upi);
  at = putConfidence(b, putPiece(b, at, STATUS_CONFIDENCE), confidence);
  at = putPiece(b, putPiece(b, at, RISK_CATEGORY), RISK_CATEGORY_TEXT[risk]!);
  at = putClusterFields(b, at, clustered, clusterNumber, clusterSize);
  at = putIso(b, putPiece(b, at, FIRST_SEEN), firstSeen);
  // A loaded snapshot gives every VPA a source, so there is a newest capture.
  at = putPiece(b, putIso(b, putPiece(b, at, LAST_SEEN), lastSeen), SOURCES);
  for (let s = from; s < to; s++) {
    if (s > from) b[at++] = COMMA;
    const url = d.sourceUrl[s]!;
    at = putUrl(b, putPiece(b, at, URL), view, url);
    at = putPiece(b, putPiece(b, at, CATEGORY), SOURCE_CATEGORY_TEXT[d.urlCategory[url]!]!);
    at = putIso(b, putPiece(b, at, CAPTURED_AT), d.sourceCapturedAt[s]!);
    at = putPiece(b, at, (d.sourceFlags[s]! & SOURCE_FLAG_SCREENSHOT) !== 0 ? SCREENSHOT_TRUE : SCREENSHOT_FALSE);
  }
  at = putDigits(b, putPiece(b, at, EVIDENCE_COUNT), evidence, 10, 1);
  b[at++] = CLOSE_BRACE;
  return out.commit(at).view();
}

/**
 * `batchItemJson(view.flaggedBatchItem(id, upi))` as bytes, put at `at`:
 * a batch's flagged item written from the snapshot's arrays like a single
 * answer, without the item object or its text. `upi` is a valid VPA
 * (printable ASCII needing no escape, vpa.ts); the caller has made room
 * for FLAGGED_BATCH_ITEM_BOUND bytes and the VPA. A test holds the two
 * ways to the same bytes.
 */
export function putFlaggedBatchItem(b: Uint8Array, at: number, view: SnapshotView, id: number, upi: string): number {
  view.requireFlagged(id);
  const d = view.data;
  const confidence = d.confidence[id]!;
  const risk = d.riskCategory[id]!;
  const cluster = d.vpaCluster[id]!;
  const evidence = d.evidenceCount[id]!;
  at = putPiece(b, at, UPI);
  b[at++] = QUOTE;
  at = putAscii(b, at, upi);
  b[at++] = QUOTE;
  at = putConfidence(b, putPiece(b, at, STATUS_CONFIDENCE), confidence);
  at = putPiece(b, putPiece(b, at, RISK_CATEGORY), RISK_CATEGORY_TEXT[risk]!);
  const clustered = cluster !== NO_CLUSTER;
  at = putClusterFields(b, at, clustered, clustered ? d.clusterNumber[cluster]! : 0, clustered ? view.clusterSize(cluster) : 0);
  at = putDigits(b, putPiece(b, at, BATCH_EVIDENCE_COUNT), evidence, 10, 1);
  b[at++] = CLOSE_BRACE;
  return at;
}

/** The most bytes `putFlaggedBatchItem` writes besides the VPA: its fixed text, a confidence and three numbers of up to 16 digits. */
export const FLAGGED_BATCH_ITEM_BOUND = 256;

/**
 * The most bytes `flaggedVerdictBytes` can write for this VPA (`id`
 * checked by the caller): the fixed text and numbers, the VPA's JSON
 * string, and per source SOURCE_BOUND and 6 bytes per byte of its url.
 */
export function flaggedVerdictBound(view: SnapshotView, id: number, upi: string): number {
  const d = view.data;
  const urlOffsets = d.urlOffsets;
  let bound = FIXED_BOUND + jsonStringBound(upi);
  for (let s = d.sourceOffsets[id]!; s < d.sourceOffsets[id + 1]!; s++) {
    const url = d.sourceUrl[s]!;
    bound += SOURCE_BOUND + MAX_JSON_BYTES_PER_CHAR * (urlOffsets[url + 1]! - urlOffsets[url]!);
  }
  return bound;
}

/** `,"cluster_id":"MC-<number>","cluster_size":<size>`, or their null form: the same in a verdict and a batch item. */
function putClusterFields(b: Uint8Array, at: number, clustered: boolean, clusterNumber: number, clusterSize: number): number {
  if (!clustered) return putPiece(b, at, NO_CLUSTER_FIELDS);
  return putDigits(b, putPiece(b, putDigits(b, putPiece(b, at, CLUSTER_ID), clusterNumber, 10, 1), CLUSTER_SIZE), clusterSize, 10, 1);
}

const UPI = asciiBytes('{"upi":');
const STATUS_CONFIDENCE = asciiBytes(',"status":"FLAGGED","confidence":');
const RISK_CATEGORY = asciiBytes(',"risk_category":');
const NO_CLUSTER_FIELDS = asciiBytes(',"cluster_id":null,"cluster_size":0');
const CLUSTER_ID = asciiBytes(`,"cluster_id":"${CLUSTER_ID_PREFIX}`);
const CLUSTER_SIZE = asciiBytes('","cluster_size":');
const FIRST_SEEN = asciiBytes(',"first_seen":"');
const LAST_SEEN = asciiBytes('","last_seen":"');
const SOURCES = asciiBytes('","sources":[');
const URL = asciiBytes('{"url":');
const CATEGORY = asciiBytes(',"category":');
const CAPTURED_AT = asciiBytes(',"captured_at":"');
const SCREENSHOT_TRUE = asciiBytes('","screenshot_available":true}');
const SCREENSHOT_FALSE = asciiBytes('","screenshot_available":false}');
const EVIDENCE_COUNT = asciiBytes('],"evidence_count":');
const BATCH_EVIDENCE_COUNT = asciiBytes(',"evidence_count":');
/** Enum values as JSON strings, quotes included, by code. */
const RISK_CATEGORY_TEXT = RISK_CATEGORIES.map((name) => asciiBytes(JSON.stringify(name)));
const SOURCE_CATEGORY_TEXT = SOURCE_CATEGORIES.map((name) => asciiBytes(JSON.stringify(name)));
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
const DOT = 0x2e;

/**
 * Upper bounds of an answer's length, for the check that it fits: the
 * fixed text and numbers of a verdict (six-digit ISO years included) and
 * of each source; the VPA and the urls add MAX_JSON_BYTES_PER_CHAR a char.
 */
const FIXED_BOUND = 512;
const SOURCE_BOUND = 128;

/** Digits after the point of a fixed-point confidence: CONFIDENCE_SCALE is 10^this. */
const SCALE_DIGITS = Math.round(Math.log10(CONFIDENCE_SCALE));
if (10 ** SCALE_DIGITS !== CONFIDENCE_SCALE) throw new Error('CONFIDENCE_SCALE must be a power of ten');

/**
 * `String(fixed / CONFIDENCE_SCALE)`, put at `at`: the shortest text of the quotient is
 * the fraction's digits without trailing zeros, since a decimal of at most
 * SCALE_DIGITS places is the only one that short to round to its double
 * (a test compares every value a snapshot can hold).
 */
export function putConfidence(target: Uint8Array, at: number, fixed: number): number {
  const whole = Math.floor(fixed / CONFIDENCE_SCALE);
  let fraction = fixed - whole * CONFIDENCE_SCALE;
  let end = putDigits(target, at, whole, 10, 1);
  if (fraction === 0) return end;
  let width = SCALE_DIGITS;
  while (fraction % 10 === 0) {
    fraction /= 10;
    width--;
  }
  target[end++] = DOT;
  return putDigits(target, end, fraction, 10, width);
}

/**
 * A url as a JSON string. Its UTF-8 bytes are copied as they are when they
 * are printable ASCII with no quote or backslash, as urls nearly always
 * are; anything else goes through its text, the way the text answer does
 * (which also decides what invalid UTF-8 in a snapshot becomes).
 */
function putUrl(target: Uint8Array, at: number, view: SnapshotView, url: number): number {
  const d = view.data;
  const bytes = d.urlBytes;
  const start = d.urlOffsets[url]!;
  const end = d.urlOffsets[url + 1]!;
  for (let i = start; i < end; i++) {
    const c = bytes[i]!;
    if (c < 0x20 || c === QUOTE || c === BACKSLASH || c > 0x7e) return putJsonString(target, at, view.urlOf(url));
  }
  target[at] = QUOTE;
  const close = putBytes(target, at + 1, bytes, start, end);
  target[close] = QUOTE;
  return close + 1;
}
