import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { KeyLimits, KeyRecord } from './key-record.js';
import type { PlansConfig } from './plans.js';
import { FixedWindows, type Windows, type WindowState } from './fixed-windows.js';
import { SharedFixedWindows, type SharedWindowTable } from './shared-windows.js';

/**
 * Quotas per API key across all endpoints (a batch is one request), and a
 * separate limit on failed authentications per client IP. Limiter arithmetic
 * is rate-limiter-flexible's (per-key windows in this process use
 * FixedWindows, the same arithmetic answered synchronously); this module
 * decides which limiter applies and turns results into the spec's headers.
 *
 * Each plan has two fixed windows: `burst` per second and `sustained` per
 * `windowSeconds`. A request is checked against the burst window first, and
 * only a request the burst window admits is counted against the sustained
 * window, so rejected bursts do not eat the sustained quota.
 */
export interface QuotaDecision {
  readonly allowed: boolean;
  /** X-RateLimit-Limit: requests allowed in the sustained window. */
  readonly limit: number;
  /** X-RateLimit-Remaining. */
  readonly remaining: number;
  /** X-RateLimit-Reset: Unix seconds when the sustained window resets. */
  readonly reset: number;
  /** Whole seconds to wait before a retry is accepted (≥ 1); set when not allowed. */
  readonly retryAfter: number;
}

/**
 * What the edge asks of quotas; served in-process, or from the main thread
 * for worker threads. `consume` answers at once when the quota lives in this
 * process, so the edge can answer a request without waiting a turn.
 */
export interface Quota {
  consume(key: KeyRecord): QuotaDecision | Promise<QuotaDecision>;
  failedAuthentication(ip: string): Promise<QuotaDecision>;
  peekIp(ip: string): Promise<QuotaDecision>;
}

export interface QuotaOptions {
  readonly plans: PlansConfig;
  /** Shared store for several replicas; without it everything stays in this process. */
  readonly redis?: Redis;
  /** Prefix for every Redis key, so deployments (and tests) sharing a Redis stay apart. */
  readonly redisPrefix?: string;
  /**
   * Without Redis: keep the per-key windows in this table, shared with the
   * other serving threads of the process, instead of in this thread alone.
   */
  readonly sharedWindows?: SharedWindowTable;
  readonly now?: () => number;
}

/** A plan's two windows: in this process, or in Redis. */
type Pair =
  | { readonly limits: KeyLimits; readonly local: true; readonly burst: Windows; readonly sustained: Windows }
  | { readonly limits: KeyLimits; readonly local: false; readonly burst: RateLimiterAbstract; readonly sustained: RateLimiterAbstract };

export class QuotaService implements Quota {
  readonly #options: QuotaOptions;
  readonly #pairs = new Map<string, Pair>();
  /** Each key record's pair; records are replaced, never changed, when keys change. */
  readonly #byRecord = new WeakMap<KeyRecord, Pair>();
  readonly #authFailures: RateLimiterAbstract;
  readonly #now: () => number;

  constructor(options: QuotaOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    // Limiters per plan are made once; keys with their own limits get one pair per distinct limit set.
    for (const [name, limits] of options.plans.plans) this.#pairs.set(`plan:${name}`, this.#makePair(`plan:${name}`, limits));
    const auth = options.plans.authFailuresPerIp;
    this.#authFailures = this.#limiter('authfail', auth.points, auth.windowSeconds);
  }

  /** Count one request of `key` and decide: at once without Redis. */
  consume(key: KeyRecord): QuotaDecision | Promise<QuotaDecision> {
    const pair = this.#pairFor(key);
    return pair.local ? this.#consumeLocal(pair, key.id) : this.#consumeShared(pair, key.id);
  }

  #consumeLocal(pair: Extract<Pair, { local: true }>, id: string): QuotaDecision {
    const now = this.#now();
    const burst = pair.burst.consume(id, now);
    if (burst.rejected) {
      // As #consumeShared: the sustained window is not charged, and Retry-After covers both windows.
      const sustained = pair.sustained.get(id, now);
      const waitMs = Math.max(burst.state.msBeforeNext, spentForMs(sustained, pair.limits.sustained));
      return this.#decision(pair.limits.sustained, sustained, pair.limits.windowSeconds, waitMs);
    }
    const sustained = pair.sustained.consume(id, now);
    if (!sustained.rejected) return this.#decision(pair.limits.sustained, sustained.state, pair.limits.windowSeconds, -1);
    const waitMs = Math.max(sustained.state.msBeforeNext, spentForMs(burst.state, pair.limits.burst));
    return this.#decision(pair.limits.sustained, sustained.state, pair.limits.windowSeconds, waitMs);
  }

  async #consumeShared(pair: Extract<Pair, { local: false }>, id: string): Promise<QuotaDecision> {
    const burst = await settle(pair.burst.consume(id));
    if (burst.rejected) {
      // The sustained window is not charged; report its current state. When
      // it is spent as well, a retry is admitted only once both windows
      // have reset, so Retry-After must cover the longer wait.
      const sustained = await pair.sustained.get(id);
      const waitMs = Math.max(burst.res.msBeforeNext, spentForMs(sustained, pair.limits.sustained));
      return this.#decision(pair.limits.sustained, sustained, pair.limits.windowSeconds, waitMs);
    }
    const sustained = await settle(pair.sustained.consume(id));
    if (!sustained.rejected) return this.#decision(pair.limits.sustained, sustained.res, pair.limits.windowSeconds, -1);
    // Likewise the burst window, if this request spent it, may outlast the sustained one.
    const waitMs = Math.max(sustained.res.msBeforeNext, spentForMs(burst.res, pair.limits.burst));
    return this.#decision(pair.limits.sustained, sustained.res, pair.limits.windowSeconds, waitMs);
  }

  /** Count one failed authentication from `ip` and decide (not allowed means 429 instead of 401). */
  async failedAuthentication(ip: string): Promise<QuotaDecision> {
    const auth = this.#options.plans.authFailuresPerIp;
    const result = await settle(this.#authFailures.consume(ip));
    return this.#decision(auth.points, result.res, auth.windowSeconds, result.rejected ? result.res.msBeforeNext : -1);
  }

  /** The per-IP failure window's state without counting: for answers that need no key (404s). */
  async peekIp(ip: string): Promise<QuotaDecision> {
    const auth = this.#options.plans.authFailuresPerIp;
    const res = await this.#authFailures.get(ip).catch(() => null);
    return this.#decision(auth.points, res, auth.windowSeconds, -1);
  }

  #pairFor(key: KeyRecord): Pair {
    // Found by the record itself on every request after its first: naming the pair
    // joins strings, and a Map hashes the new string, on a path taken by every request.
    let pair = this.#byRecord.get(key);
    if (pair === undefined) {
      pair = this.#findPair(key);
      this.#byRecord.set(key, pair);
    }
    return pair;
  }

  #findPair(key: KeyRecord): Pair {
    if (key.limits !== null) {
      const name = `custom:${key.limits.burst}:${key.limits.sustained}:${key.limits.windowSeconds}`;
      let pair = this.#pairs.get(name);
      if (pair === undefined) {
        pair = this.#makePair(name, key.limits);
        this.#pairs.set(name, pair);
      }
      return pair;
    }
    return this.#pairs.get(`plan:${key.plan}`) ?? this.#pairs.get('plan:default')!;
  }

  #makePair(name: string, limits: KeyLimits): Pair {
    if (this.#options.redis === undefined) {
      const table = this.#options.sharedWindows;
      const windows = (kind: string, points: number, seconds: number): Windows =>
        table === undefined ? new FixedWindows(points, seconds) : new SharedFixedWindows(table, `${name}:${kind}`, points, seconds);
      return { limits, local: true, burst: windows('burst', limits.burst, 1), sustained: windows('sustained', limits.sustained, limits.windowSeconds) };
    }
    return {
      limits,
      local: false,
      burst: this.#limiter(`${name}:burst`, limits.burst, 1),
      sustained: this.#limiter(`${name}:sustained`, limits.sustained, limits.windowSeconds),
    };
  }

  #limiter(name: string, points: number, duration: number): RateLimiterAbstract {
    const keyPrefix = `${this.#options.redisPrefix ?? 'upi-risk'}:rl:${name}`;
    if (this.#options.redis === undefined) return new RateLimiterMemory({ points, duration, keyPrefix });
    return new RateLimiterRedis({
      storeClient: this.#options.redis,
      points,
      duration,
      keyPrefix,
      // With Redis unreachable, answer from local limits instead of failing requests.
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory({ points, duration, keyPrefix: `${keyPrefix}:local` }),
    });
  }

  #decision(limit: number, state: WindowState | null, windowSeconds: number, rejectedForMs: number): QuotaDecision {
    const now = this.#now();
    // `get` can return a window that has just expired but is not yet swept: that window is fresh.
    const res = state !== null && state.msBeforeNext > 0 ? state : null;
    const remaining = res === null ? limit : Math.max(0, res.remainingPoints);
    const resetMs = res === null ? now + windowSeconds * 1000 : now + res.msBeforeNext;
    return {
      allowed: rejectedForMs < 0,
      limit,
      remaining,
      reset: Math.ceil(resetMs / 1000),
      // Round up to whole seconds, at least 1, so a retry after that long falls in the next window.
      retryAfter: rejectedForMs < 0 ? 0 : Math.max(1, Math.ceil(rejectedForMs / 1000)),
    };
  }
}

/** How long a window with no points left stays closed; 0 when it still admits a request (or has expired). */
function spentForMs(res: WindowState | null, points: number): number {
  return res !== null && res.consumedPoints >= points ? Math.max(0, res.msBeforeNext) : 0;
}

/** rate-limiter-flexible rejects with a RateLimiterRes when over the limit and with an Error on store failure. */
async function settle(promise: Promise<RateLimiterRes>): Promise<{ rejected: boolean; res: RateLimiterRes }> {
  try {
    return { rejected: false, res: await promise };
  } catch (error) {
    if (error instanceof RateLimiterRes) return { rejected: true, res: error };
    throw error;
  }
}
