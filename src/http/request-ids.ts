import { randomBytes } from 'node:crypto';

/**
 * X-Request-Id values: unique without a random draw per request. Each
 * serving thread draws a random 64-bit prefix when it starts and counts
 * from there (`3f9c0a7e5d21b846-1a`), so ids from two threads, or from two
 * runs of the service, collide only if their prefixes do (odds of 1 in
 * 2^64 per pair). A UUID per request was a twentieth of a single lookup's
 * CPU time. Ids are for support and log correlation, not secrets: being
 * sequential within a thread is harmless.
 */
export class RequestIds {
  readonly #prefix = `${randomBytes(8).toString('hex')}-`;
  #count = 0;

  next(): string {
    return this.#prefix + (this.#count++).toString(36);
  }
}
