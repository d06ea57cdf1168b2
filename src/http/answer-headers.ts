/**
 * The headers every API answer carries, written with one native call, as
 * bytes.
 *
 * uWebSockets.js writes each `writeHeader(name, value)` as `name: value\r\n`
 * straight into the response buffer, and every call crosses from JS into C++
 * and copies its two strings on the way. Seven such calls cost a bare
 * server a visible share of its peak for single lookups; the same lines
 * written by one call, its value holding the other lines pre-joined, cost
 * it too little to tell from the noise (see bench/MEASUREMENTS.md, 'The
 * request path: allocation and native calls'). The bytes on the wire are the
 * same. The value is written into a reused byte buffer (byte-scratch.ts
 * says why), numbers digit by digit: no string is made per answer.
 *
 * That is only safe because no value here comes from a request: request ids
 * and quota numbers are made by the service, and the data version and time
 * come from a snapshot whose meta the codec validates as visible ASCII
 * (snapshot-codec.ts). Nothing a client sends can put a line break in.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { ByteScratch, asciiBytes } from '../common/byte-scratch.js';
import type { RequestIds } from './request-ids.js';

/** Rate-limit state for the X-RateLimit-* headers. */
export interface RateLimitHeaders {
  readonly limit: number;
  readonly remaining: number;
  readonly reset: number;
}

/** Room for an answer's header lines: about 250 bytes in practice. */
const HEAD_CAPACITY = 4096;

const CONTENT_TYPE = asciiBytes('Content-Type');
const REQUEST_ID = asciiBytes('\r\nX-Request-Id: ');
const LIMIT = asciiBytes('\r\nX-RateLimit-Limit: ');
const REMAINING = asciiBytes('\r\nX-RateLimit-Remaining: ');
const RESET = asciiBytes('\r\nX-RateLimit-Reset: ');
const LINE_BREAK = asciiBytes('\r\n');
const COLON = asciiBytes(': ');

/**
 * The lines that are the same for every JSON answer from one snapshot:
 * Content-Type's value, X-Data-Version, X-Data-As-Of. Made once per snapshot.
 */
export function snapshotHeaderLines(dataVersion: string, dataAsOf: string): Uint8Array {
  return asciiBytes(`application/json\r\nX-Data-Version: ${dataVersion}\r\nX-Data-As-Of: ${dataAsOf}`);
}

/**
 * Writes answer heads for one thread: the status line, then every header
 * in one writeHeader call. The bytes it hands over are reused by its next
 * answer, so keep one per thread and use it synchronously.
 */
export class AnswerHead {
  readonly #out = new ByteScratch(HEAD_CAPACITY);
  readonly #ids: RequestIds;
  /** Status lines as bytes, made when first used. */
  readonly #statusLines = new Map<string, Uint8Array>();
  /** The snapshot lines the buffer starts with, and how long that start is (up to the request id's number). */
  #startFor: Uint8Array | null = null;
  #startLength = 0;

  constructor(ids: RequestIds) {
    this.#ids = ids;
  }

  /**
   * Write the status line (`statusLine`, e.g. "200 OK") and every header of
   * one answer: `headLines`, from `lines`, go out as the value of
   * Content-Type, whose own value they start with.
   */
  write(res: HttpResponse, statusLine: string, headLines: Uint8Array): void {
    let line = this.#statusLines.get(statusLine);
    if (line === undefined) {
      line = asciiBytes(statusLine);
      this.#statusLines.set(statusLine, line);
    }
    res.writeStatus(line).writeHeader(CONTENT_TYPE, headLines);
  }

  /**
   * The header lines of one answer, joined: Content-Type's value, then the
   * snapshot's lines, the id of request `requestNumber`, the rate-limit
   * state when there is one, and one extra header (WWW-Authenticate,
   * Retry-After) when given. Valid until the next call.
   */
  lines(snapshotLines: Uint8Array, requestNumber: number, rateLimit: RateLimitHeaders | null, extraName?: string, extraValue?: string): Uint8Array {
    const out = this.#out;
    // Everything up to the request id's number is the same from one answer to the next while the snapshot is.
    if (snapshotLines === this.#startFor) {
      out.truncate(this.#startLength);
    } else {
      out.clear().bytes(snapshotLines).bytes(REQUEST_ID);
      this.#ids.writePrefix(out);
      this.#startFor = snapshotLines;
      this.#startLength = out.length;
    }
    out.base36(requestNumber);
    if (rateLimit !== null) {
      out.bytes(LIMIT).decimal(rateLimit.limit).bytes(REMAINING).decimal(rateLimit.remaining).bytes(RESET).decimal(rateLimit.reset);
    }
    if (extraName !== undefined) out.bytes(LINE_BREAK).text(extraName).bytes(COLON).text(extraValue ?? '');
    return out.view();
  }
}
