import type { ByteScratch } from '../common/byte-scratch.js';
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

const CLEARED_START = Buffer.from('{"upi":', 'latin1');
const CLEARED_END = Buffer.from(
  ',"status":"CLEARED","confidence":null,"risk_category":null,"cluster_id":null,"cluster_size":0,"first_seen":null,"last_seen":null,"sources":[],"evidence_count":0}',
  'latin1',
);
const QUOTE = Buffer.from('"', 'latin1');

/**
 * verdictJson of the CLEARED verdict for `upi` as UTF-8, written into `out`
 * (cleared first): the answer to most single lookups, a constant around the
 * VPA, so it is written without building the verdict or a string
 * (byte-scratch.ts says why). The view is valid until `out` is written again.
 */
export function clearedVerdictBytes(out: ByteScratch, upi: string): Uint8Array {
  out.clear().bytes(CLEARED_START);
  if (needsEscape(upi)) out.text(JSON.stringify(upi));
  else out.bytes(QUOTE).text(upi).bytes(QUOTE);
  return out.bytes(CLEARED_END).view();
}

export function batchItemJson(item: BatchItem): string {
  return `{"upi":${jsonString(item.upi)},"status":"${item.status}","confidence":${item.confidence},"risk_category":${nullableText(item.risk_category)},"cluster_id":${nullableText(item.cluster_id)},"cluster_size":${item.cluster_size},"evidence_count":${item.evidence_count}}`;
}

/** batchItemJson of the CLEARED item for `upi`: the same text, without building the item. */
export function clearedBatchItemJson(upi: string): string {
  return `{"upi":${jsonString(upi)},"status":"CLEARED","confidence":null,"risk_category":null,"cluster_id":null,"cluster_size":0,"evidence_count":0}`;
}

export function batchResponseJson(response: BatchResponse): string {
  let items = '';
  const results = response.results;
  for (let i = 0; i < results.length; i++) {
    if (i > 0) items += ',';
    items += batchItemJson(results[i]!);
  }
  return batchEnvelopeJson(items, response.total, response.flagged_count);
}

/** The batch response around its items' JSON, already joined with commas (answerBatchBody writes them as it looks up). */
export function batchEnvelopeJson(itemsJson: string, total: number, flagged: number): string {
  return `{"results":[${itemsJson}],"total":${total},"flagged_count":${flagged},"cleared_count":${total - flagged}}`;
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

/** Whether JSON.stringify could write `text` as anything but itself in quotes. */
export function needsEscape(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // Control chars, '"', '\\' and every non-ASCII char (lone surrogates must be escaped) go the long way.
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7e) return true;
  }
  return false;
}
