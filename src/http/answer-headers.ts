/**
 * The headers every API answer carries, written with one native call.
 *
 * uWebSockets.js writes each `writeHeader(name, value)` as `name: value\r\n`
 * straight into the response buffer, and every call crosses from JS into C++
 * and copies its two strings on the way. Seven such calls cost a bare
 * server 5–10 % of its peak for single lookups (wrk, same run); the same
 * lines written by one call, its value holding the other lines pre-joined,
 * cost it too little to tell from the noise. The bytes on the wire are the
 * same.
 *
 * That is only safe because no value here comes from a request: request ids
 * and quota numbers are made by the service, and the data version and time
 * come from a snapshot whose meta the codec validates as visible ASCII
 * (snapshot-codec.ts). Nothing a client sends can put a line break in.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { decimalText } from '../common/decimal.js';

/** Rate-limit state for the X-RateLimit-* headers. */
export interface RateLimitHeaders {
  readonly limit: number;
  readonly remaining: number;
  readonly reset: number;
}

/**
 * The lines that are the same for every JSON answer from one snapshot:
 * Content-Type, X-Data-Version, X-Data-As-Of. Made once per snapshot.
 */
export function snapshotHeaderLines(dataVersion: string, dataAsOf: string): string {
  return `application/json\r\nX-Data-Version: ${dataVersion}\r\nX-Data-As-Of: ${dataAsOf}`;
}

/**
 * Write the status line and every header of one answer: the snapshot's
 * lines, the request id, the rate-limit state when there is one, and one
 * extra header (WWW-Authenticate, Retry-After) when given.
 */
export function writeAnswerHead(
  res: HttpResponse,
  statusLine: string,
  snapshotLines: string,
  requestId: string,
  rateLimit: RateLimitHeaders | null,
  extraName?: string,
  extraValue?: string,
): void {
  res.writeStatus(statusLine).writeHeader('Content-Type', answerHeadLines(snapshotLines, requestId, rateLimit, extraName, extraValue));
}

/** The value writeAnswerHead gives Content-Type: its own and every later header line, joined. */
export function answerHeadLines(
  snapshotLines: string,
  requestId: string,
  rateLimit: RateLimitHeaders | null,
  extraName?: string,
  extraValue?: string,
): string {
  let lines = `${snapshotLines}\r\nX-Request-Id: ${requestId}`;
  if (rateLimit !== null) {
    // The remaining count is new on every answer: see decimal.ts for why it is not written with `${}`.
    // The limit and the reset time repeat from answer to answer, and the engine's cache suits them.
    lines += `\r\nX-RateLimit-Limit: ${rateLimit.limit}\r\nX-RateLimit-Remaining: ${decimalText(rateLimit.remaining)}\r\nX-RateLimit-Reset: ${rateLimit.reset}`;
  }
  if (extraName !== undefined) lines += `\r\n${extraName}: ${extraValue}`;
  return lines;
}
