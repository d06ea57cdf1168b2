import { asciiBytes, putAscii, putPiece, type ByteScratch } from '../common/byte-scratch.js';
import type { BatchItem, BatchResponse, Source, VpaVerdict } from '../engine/verdict.js';

/**
 * JSON text of the lookup answers, written by hand: JSON.stringify walks
 * each object's properties generically, and on the single-lookup path that
 * was a larger cost than the lookup itself (bench/answer-json.bench.ts).
 * The output is exactly JSON.stringify's, field order included (the
 * property order of the answer objects); a test holds the two together.
 *
 * Strings that can hold any character (urls, and in principle the echoed
 * VPA) go through `jsonString`; enum values, ids and ISO timestamps cannot
 * need escaping and are written as they are.
 */
export function verdictJson(v: VpaVerdict): string {
  let out = `{"upi":${jsonString(v.upi)},"status":"${v.status}","confidence":${v.confidence},"risk_category":${nullableText(v.risk_category)},"cluster_id":${nullableText(v.cluster_id)},"cluster_size":${v.cluster_size},"first_seen":${nullableText(v.first_seen)},"last_seen":${nullableText(v.last_seen)},"sources":[`;
  const sources = v.sources;
  for (let i = 0; i < sources.length; i++) {
    if (i > 0) out += ',';
    out += sourceJson(sources[i]!);
  }
  return `${out}],"evidence_count":${v.evidence_count}}`;
}

const CLEARED_START = asciiBytes('{"upi":');
const CLEARED_END = asciiBytes(
  ',"status":"CLEARED","confidence":null,"risk_category":null,"cluster_id":null,"cluster_size":0,"first_seen":null,"last_seen":null,"sources":[],"evidence_count":0}',
);

/**
 * verdictJson of the CLEARED verdict for `upi` as UTF-8, written into `out`
 * (cleared first): the answer to most single lookups, a constant around the
 * VPA, so it is written without building the verdict or a string
 * (byte-scratch.ts says why). The view is valid until `out` is written again.
 */
export function clearedVerdictBytes(out: ByteScratch, upi: string): Uint8Array {
  const b = out.clear().room(CLEARED_START.length + jsonStringBound(upi) + CLEARED_END.length);
  const at = putJsonString(b, putPiece(b, 0, CLEARED_START), upi);
  return out.commit(putPiece(b, at, CLEARED_END)).view();
}

export function batchItemJson(item: BatchItem): string {
  return `{"upi":${jsonString(item.upi)},"status":"${item.status}","confidence":${item.confidence},"risk_category":${nullableText(item.risk_category)},"cluster_id":${nullableText(item.cluster_id)},"cluster_size":${item.cluster_size},"evidence_count":${item.evidence_count}}`;
}

export function batchResponseJson(response: BatchResponse): string {
  let items = '';
  const results = response.results;
  for (let i = 0; i < results.length; i++) {
    if (i > 0) items += ',';
    items += batchItemJson(results[i]!);
  }
  return `{"results":[${items}],"total":${response.total},"flagged_count":${response.flagged_count},"cleared_count":${response.total - response.flagged_count}}`;
}

function sourceJson(s: Source): string {
  return `{"url":${jsonString(s.url)},"category":"${s.category}","captured_at":"${s.captured_at}","screenshot_available":${s.screenshot_available}}`;
}

/** A value that is null or a string needing no escapes (an enum value, a cluster id, an ISO timestamp). */
function nullableText(value: string | null): string {
  return value === null ? 'null' : `"${value}"`;
}

/** `JSON.stringify(text)`, skipping its work for the common text that needs no escape. */
export function jsonString(text: string): string {
  return needsEscape(text) ? JSON.stringify(text) : `"${text}"`;
}

/** The most bytes one UTF-16 unit of text, or one byte of UTF-8, can take in a JSON string: `\u001f` is six. */
export const MAX_JSON_BYTES_PER_CHAR = 6;

/** The most bytes `putJsonString` writes for `text`. */
export function jsonStringBound(text: string): number {
  return MAX_JSON_BYTES_PER_CHAR * text.length + 2;
}

/**
 * `jsonString(text)` as UTF-8, put at `at` into a buffer from
 * `ByteScratch.room` with jsonStringBound(text) bytes free; returns where
 * it stopped. Text that needs no escape is copied char by char.
 */
export function putJsonString(target: Uint8Array, at: number, text: string): number {
  if (needsEscape(text)) {
    const encoded = Buffer.from(JSON.stringify(text), 'utf8');
    return putPiece(target, at, encoded);
  }
  target[at] = QUOTE;
  const end = putAscii(target, at + 1, text);
  target[end] = QUOTE;
  return end + 1;
}

const QUOTE = 0x22;

/** Whether JSON.stringify could write `text` as anything but itself in quotes. */
export function needsEscape(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // Control chars, '"', '\\' and every non-ASCII char (lone surrogates must be escaped) go the long way.
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7e) return true;
  }
  return false;
}
