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
import { ByteScratch, asciiBytes, isDigitable } from '../common/byte-scratch.js';
import type { RequestIds } from './request-ids.js';

/** Rate-limit state for the X-RateLimit-* headers. */
/** Headers an answer adds to the usual ones: name, value, name, value... */
export type ExtraHeaders = readonly string[];

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
 * The lines that are the same for every answer from one snapshot:
 * Content-Type's value, X-Data-Version, X-Data-As-Of. Made once per snapshot
 * for JSON answers.
 */
export function snapshotHeaderLines(dataVersion: string, dataAsOf: string, contentType = 'application/json'): Uint8Array {
  return asciiBytes(`${contentType}\r\nX-Data-Version: ${dataVersion}\r\nX-Data-As-Of: ${dataAsOf}`);
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
  /**
   * What the buffer holds after the start, when it is a request number and
   * rate-limit lines alone (#stepped): the numbers, and where the id's
   * digits end and the remaining count's digits are. Null otherwise.
   */
  #tail: { number: number; limit: number; remaining: number; reset: number; numberEnd: number; remainingStart: number; remainingEnd: number } | null = null;

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
   * state when there is one, and the extra headers (WWW-Authenticate,
   * Retry-After, ETag) when given. Valid until the next call.
   */
  lines(snapshotLines: Uint8Array, requestNumber: number, rateLimit: RateLimitHeaders | null, extra?: ExtraHeaders): Uint8Array {
    const out = this.#out;
    if (snapshotLines === this.#startFor && extra === undefined && rateLimit !== null && this.#stepped(requestNumber, rateLimit)) return out.view();
    this.#tail = null;
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
      const numberEnd = out.length;
      out.bytes(LIMIT).decimal(rateLimit.limit).bytes(REMAINING);
      const remainingStart = out.length;
      out.decimal(rateLimit.remaining);
      const remainingEnd = out.length;
      out.bytes(RESET).decimal(rateLimit.reset);
      if (extra === undefined && isDigitable(requestNumber) && isDigitable(rateLimit.remaining)) {
        this.#tail = { number: requestNumber, limit: rateLimit.limit, remaining: rateLimit.remaining, reset: rateLimit.reset, numberEnd, remainingStart, remainingEnd };
      }
    }
    if (extra !== undefined) for (let i = 0; i + 1 < extra.length; i += 2) out.bytes(LINE_BREAK).text(extra[i]!).bytes(COLON).text(extra[i + 1]!);
    return out.view();
  }

  /**
   * Under load one key's answers follow each other: the request number one
   * up, the remaining count the same or one down, the limit and reset
   * unchanged. Their lines are then last answer's with a few digits
   * stepped in place, instead of every number written again (the cost:
   * bench/MEASUREMENTS.md, "Where a single lookup's CPU goes beyond the
   * ceiling"). False, having changed nothing, when that is not the case or
   * a number would gain or lose a digit.
   */
  #stepped(requestNumber: number, rateLimit: RateLimitHeaders): boolean {
    const tail = this.#tail;
    if (tail === null || requestNumber !== tail.number + 1 || rateLimit.limit !== tail.limit || rateLimit.reset !== tail.reset) return false;
    const down = tail.remaining - rateLimit.remaining;
    if (down !== 0 && down !== 1) return false;
    const bytes = this.#out.room(0);
    // The id's last base-36 digits: a run of 'z' at the end becomes '0's and the digit before it steps up.
    let at = tail.numberEnd - 1;
    while (at >= this.#startLength && bytes[at] === LAST_BASE36) at--;
    if (at < this.#startLength) return false;
    // The remaining count: a run of '0' at the end becomes '9's and the digit before it steps down, unless that leaves a leading zero.
    let borrow = tail.remainingEnd - 1;
    if (down === 1) {
      while (borrow >= tail.remainingStart && bytes[borrow] === ZERO_DIGIT) borrow--;
      if (borrow < tail.remainingStart || (borrow === tail.remainingStart && bytes[borrow] === ONE_DIGIT && tail.remainingEnd - tail.remainingStart > 1)) return false;
      bytes[borrow] = bytes[borrow]! - 1;
      for (let i = borrow + 1; i < tail.remainingEnd; i++) bytes[i] = NINE_DIGIT;
    }
    bytes[at] = bytes[at] === NINE_DIGIT ? FIRST_BASE36_LETTER : bytes[at]! + 1;
    // Loops, not fill(): a call of fill() is a call into C++ per answer (bench/MEASUREMENTS.md, "Instructions per request").
    for (let i = at + 1; i < tail.numberEnd; i++) bytes[i] = ZERO_DIGIT;
    tail.number = requestNumber;
    tail.remaining = rateLimit.remaining;
    return true;
  }
}

const ZERO_DIGIT = 0x30;
const ONE_DIGIT = 0x31;
const NINE_DIGIT = 0x39;
const FIRST_BASE36_LETTER = 0x61;
const LAST_BASE36 = 0x7a;
