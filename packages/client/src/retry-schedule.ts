/**
 * The spec's retry advice (Errors, "Recommended retry behaviour"), as the
 * delay before each next attempt of one request:
 *
 * | answer | retried | delays |
 * |---|---|---|
 * | 400, 401, 403, 404, 409, 422 (any other 4xx) | never | |
 * | 429 | while the wait ends before the call's deadline | the larger of `Retry-After` s and 1 s doubling to 32 s; plus 0-500 ms jitter |
 * | 500, 503 (any 5xx), no answer | up to 3 times | 1 s, 2 s, 4 s; a 503's `Retry-After` s when longer |
 *
 * A request that is not idempotent (creating a watchlist, rotating its
 * secret, a dispute) is retried only on 429 and on the service's
 * own 503 (`"error": "service_unavailable"`), the answers that say it was
 * not carried out: after a 500, a lost answer or a proxy's 503 it may have
 * been. A report carries an Idempotency-Key, which makes it idempotent.
 */

export const RATE_LIMIT_FIRST_DELAY_MS = 1_000;
export const RATE_LIMIT_MAX_DELAY_MS = 32_000;
export const RATE_LIMIT_JITTER_MS = 500;
/** Delays before the retries after a server failure or a lost answer. */
export const FAILURE_DELAYS_MS: readonly number[] = [1_000, 2_000, 4_000];
/** The least of the call's deadline an attempt is started with: less cannot carry a round trip, and would end in a TimeoutError. */
export const MIN_ATTEMPT_MS = 100;

/** What one attempt came to, as far as retrying goes. */
export type AttemptFailure =
  | {
      readonly kind: 'answer';
      readonly status: number;
      /** What the answer asked to wait (429 and 503 only); null when it said nothing. */
      readonly retryAfterSeconds: number | null;
      /** The body's `error` code when the body is the service's JSON error, else null (a proxy's page). */
      readonly errorCode: string | null;
    }
  /** No answer: the connection failed or was reset, or the attempt timed out. */
  | { readonly kind: 'no-answer' };

/** The retry state of one request: how many retries of each kind it has had. */
export class RetrySchedule {
  readonly #random: () => number;
  readonly #idempotent: boolean;
  #rateLimited = 0;
  #failed = 0;

  constructor(random: () => number, idempotent: boolean) {
    this.#random = random;
    this.#idempotent = idempotent;
  }

  /** Milliseconds to wait before retrying after `failure`, or null: give up. Never 0, whatever `Retry-After` says. */
  next(failure: AttemptFailure): number | null {
    if (failure.kind === 'answer' && failure.status === 429) {
      const backoff = Math.min(RATE_LIMIT_FIRST_DELAY_MS * 2 ** this.#rateLimited, RATE_LIMIT_MAX_DELAY_MS);
      this.#rateLimited++;
      return Math.max(backoff, askedMs(failure)) + Math.round(this.#random() * RATE_LIMIT_JITTER_MS);
    }
    if (failure.kind === 'answer' && failure.status < 500) return null;
    if (!this.#idempotent && !notCarriedOut(failure)) return null;
    const delay = FAILURE_DELAYS_MS[this.#failed];
    if (delay === undefined) return null;
    this.#failed++;
    return failure.kind === 'answer' && failure.status === 503 ? Math.max(delay, askedMs(failure)) : delay;
  }
}

/** Whether a failure says the request was not carried out: only the service's own 503 does (a proxy's may come after the service took it). */
function notCarriedOut(failure: AttemptFailure): boolean {
  return failure.kind === 'answer' && failure.status === 503 && failure.errorCode === 'service_unavailable';
}

function askedMs(failure: Extract<AttemptFailure, { kind: 'answer' }>): number {
  return (failure.retryAfterSeconds ?? 0) * 1000;
}

/**
 * Seconds a 429 or 503 asks to wait: the larger of `Retry-After` (seconds, or an
 * HTTP date) and the body's `retry_after`; null when neither says.
 */
export function retryAfterSeconds(header: string | null, body: unknown, nowMs: number): number | null {
  const waits: number[] = [];
  const value = header?.trim() ?? '';
  if (/^\d+$/.test(value)) waits.push(Number(value));
  else if (value !== '') {
    const date = Date.parse(value);
    if (!Number.isNaN(date)) waits.push(Math.max(0, Math.ceil((date - nowMs) / 1000)));
  }
  const field = body !== null && typeof body === 'object' ? (body as { retry_after?: unknown }).retry_after : undefined;
  if (typeof field === 'number' && Number.isFinite(field) && field >= 0) waits.push(field);
  return waits.length === 0 ? null : Math.max(...waits);
}
