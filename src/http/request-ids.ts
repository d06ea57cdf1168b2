import { randomBytes } from 'node:crypto';
import type { ByteScratch } from '../common/byte-scratch.js';

/**
 * X-Request-Id values: unique without a random draw per request. Each
 * serving thread draws a random 64-bit prefix when it starts and counts
 * from there (`3f9c0a7e5d21b846-1a`), so ids from two threads, or from two
 * runs of the service, collide only if their prefixes do (odds of 1 in
 * 2^64 per pair). A UUID per request was a noticeable part of a single
 * lookup's CPU time (bench/MEASUREMENTS.md, 'The request path: allocation
 * and native calls'). Ids are for support and log correlation, not secrets: being
 * sequential within a thread is harmless.
 *
 * A request carries its number; the id's text is written straight into the
 * answer's header bytes, and made as a string only for a log line.
 */
export class RequestIds {
  readonly #prefix = `${randomBytes(8).toString('hex')}-`;
  readonly #prefixBytes = Buffer.from(this.#prefix, 'latin1');
  #count = 0;

  /** The number of the next request. */
  next(): number {
    return this.#count++;
  }

  /** The id of request `n` as text. */
  text(n: number): string {
    return this.#prefix + n.toString(36);
  }

  /** Append what every id of this thread starts with; `out.base36(n)` then completes the id of request `n`, the characters of `text(n)`. */
  writePrefix(out: ByteScratch): void {
    out.bytes(this.#prefixBytes);
  }
}
