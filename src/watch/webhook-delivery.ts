import { createHmac } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Logger } from '../common/logger.js';
import type { WatchStore } from './watch-store.js';
import { KEPT_ATTEMPTS, signingSecrets, type Delivery, type DeliveryAttempt, type StoredEvent } from './watchlist.js';
import { checkWebhookUrl, resolveTarget, UnsafeTargetError } from './webhook-target.js';
import { beforeDeadline } from '../common/deadline.js';

/**
 * Sends the outbox's events to their webhooks (docs/watchlists.md,
 * Delivery): at least once, in order per watchlist and VPA, each signed,
 * retried with exponential backoff and full jitter until a day has passed.
 */
export interface DeliveryPolicy {
  /** Delay before the first retry, ms; each retry doubles it, with full jitter. */
  readonly firstRetryMs: number;
  readonly maxRetryMs: number;
  /** How long after the event retries go on, ms. */
  readonly giveUpAfterMs: number;
  readonly timeoutMs: number;
  /** Most of an answer read, bytes. */
  readonly maxAnswerBytes: number;
  /** Deliveries at once. */
  readonly concurrency: number;
  /**
   * Deliveries at once to one watchlist: a backlog to a receiver that does
   * not answer holds no more slots than this, and other watchlists' events
   * go out beside it.
   */
  readonly perWatchlist: number;
}

export const DEFAULT_DELIVERY: DeliveryPolicy = {
  firstRetryMs: 10_000,
  maxRetryMs: 15 * 60_000,
  giveUpAfterMs: 24 * 60 * 60_000,
  timeoutMs: 10_000,
  maxAnswerBytes: 64 * 1024,
  concurrency: 8,
  perWatchlist: 2,
};

export const SIGNATURE_HEADER = 'Upi-Risk-Signature';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the scheme Stripe
 * uses. Each further secret adds a `v1` of its own (a rotation's previous
 * secret, while it is kept), and a receiver accepts any that matches.
 */
export function signature(body: string, secret: string | readonly string[], nowMs: number): string {
  const t = Math.floor(nowMs / 1000);
  const signatures = (typeof secret === 'string' ? [secret] : secret).map((s) => `,v1=${createHmac('sha256', s).update(`${t}.`).update(body).digest('hex')}`);
  return `t=${t}${signatures.join('')}`;
}

/** The wait before retry number `attempts` (1 after the first failure): full jitter over a doubling ceiling. */
export function retryDelay(attempts: number, policy: DeliveryPolicy, random: () => number): number {
  const ceiling = Math.min(policy.maxRetryMs, policy.firstRetryMs * 2 ** Math.max(0, attempts - 1));
  // Never sooner than a tenth of the ceiling, so a receiver that is down is not hammered.
  return Math.round(ceiling * (0.1 + 0.9 * random()));
}

export class WebhookDelivery {
  readonly #store: WatchStore;
  readonly #allowed: ReadonlySet<string>;
  readonly #policy: DeliveryPolicy;
  readonly #logger: Logger;
  readonly #random: () => number;
  readonly #ownerActive: (keyId: string) => boolean;
  readonly #inFlight = new Set<string>();
  /** Events whose last outcome the store did not take, with when they may be sent again. */
  readonly #unrecorded = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #running: Promise<void>[] = [];

  constructor(store: WatchStore, options: { allowed: ReadonlySet<string>; logger: Logger; policy?: DeliveryPolicy; random?: () => number; ownerActive?: (keyId: string) => boolean }) {
    this.#store = store;
    this.#ownerActive = options.ownerActive ?? (() => true);
    this.#allowed = options.allowed;
    this.#policy = options.policy ?? DEFAULT_DELIVERY;
    this.#logger = options.logger;
    this.#random = options.random ?? Math.random;
  }

  /** Look for due events now (after new events, or at start). */
  wake(): void {
    if (this.#closed) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const now = Date.now();
    // A hold that has passed holds nothing: let it go, whether or not its event is still in the store.
    for (const [id, until] of this.#unrecorded) if (until <= now) this.#unrecorded.delete(id);
    // A watchlist's events in flight are among its heads due: the share counts them.
    for (const stored of this.#store.due(now, this.#policy.concurrency * 4, this.#policy.perWatchlist)) {
      if (this.#inFlight.size >= this.#policy.concurrency) break;
      if (this.#inFlight.has(stored.event.id) || (this.#unrecorded.get(stored.event.id) ?? 0) > now) continue;
      this.#inFlight.add(stored.event.id);
      const run = this.#attempt(stored)
        .catch((error: Error) => {
          // Not sent again until the journal can take its outcome: no loop of sends while it cannot.
          this.#unrecorded.set(stored.event.id, Date.now() + this.#policy.firstRetryMs);
          this.#logger.error({ event: stored.event.id, err: error.message }, 'webhook delivery not recorded');
        })
        .finally(() => {
          this.#inFlight.delete(stored.event.id);
          this.#running = this.#running.filter((r) => r !== run);
          this.wake();
        });
      this.#running.push(run);
    }
    if (this.#inFlight.size > 0) return;
    const next = this.#store.nextDue();
    // At least once a second: an event due in the past but held back (behind another of its VPA, or its outcome not recorded) is looked at again.
    const wait = next === null || next <= now ? 1000 : Math.min(1000, Math.max(10, next - now));
    this.#timer = setTimeout(() => this.wake(), wait).unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    await Promise.all(this.#running);
  }

  async #attempt(stored: StoredEvent): Promise<void> {
    const event = stored.event;
    const list = this.#store.get(event.watchlist_id);
    if (list === null) return;
    const started = Date.now();
    if (!this.#ownerActive(list.owner)) {
      // Given up, not sent: a revoked key's watchlist delivers nothing more.
      const attempt: DeliveryAttempt = { at: new Date(started).toISOString(), status: null, error: "not sent: the watchlist's key is revoked", duration_ms: 0 };
      await this.#store.attempted(event.id, { ...stored.delivery, state: 'failed', attempts: [...stored.delivery.attempts, attempt].slice(-KEPT_ATTEMPTS), nextAttemptAt: null });
      return;
    }
    const body = JSON.stringify(event);
    let status: number | null = null;
    let error: string | null = null;
    try {
      status = await this.#post(list.webhook_url, body, signature(body, signingSecrets(list, started), started));
      if (status < 200 || status > 299) error = `answered ${status}`;
    } catch (e) {
      error = e instanceof UnsafeTargetError ? `unsafe target: ${e.message}` : (e as Error).message;
    }
    const now = Date.now();
    const attempt: DeliveryAttempt = { at: new Date(started).toISOString(), status, error, duration_ms: Math.max(0, now - started) };
    // As the event stands now: a redelivery asked for while this attempt was out is kept.
    const current = this.#store.findEvent(event.watchlist_id, event.id)?.delivery ?? stored.delivery;
    const attempts = [...current.attempts, attempt].slice(-KEPT_ATTEMPTS);
    // The run began at the event, or at its redelivery: earlier attempts neither lengthen the backoff nor shorten the window.
    const since = current.since;
    const runStart = since ?? Date.parse(event.occurred_at);
    const failures = attempts.filter((a) => a.error !== null && (since === undefined || Date.parse(a.at) >= since)).length;
    const run = since === undefined ? {} : { since };
    let delivery: Delivery;
    if (error === null) delivery = { state: 'delivered', attempts, nextAttemptAt: null, ...run };
    else if (redeliveredSince(stored.delivery, current) && current.state === 'pending') {
      // Redelivered after this attempt began: due when the redelivery said.
      delivery = { ...current, attempts };
    } else {
      const retryAt = now + retryDelay(failures, this.#policy, this.#random);
      delivery = retryAt - runStart > this.#policy.giveUpAfterMs ? { state: 'failed', attempts, nextAttemptAt: null, ...run } : { state: 'pending', attempts, nextAttemptAt: retryAt, ...run };
      this.#logger.warn({ event: event.id, watchlist: event.watchlist_id, err: error, next: delivery.state }, 'webhook not delivered');
    }
    await this.#store.attempted(event.id, delivery);
    this.#unrecorded.delete(event.id);
  }

  /**
   * POST the body to the webhook, connecting only to the address checked;
   * resolves with the status. The whole attempt (the name's lookup, the
   * connection, the answer's head and body) fits in the policy's timeout:
   * a receiver that trickles bytes holds a delivery slot no longer than a
   * silent one.
   */
  async #post(webhookUrl: string, body: string, signed: string): Promise<number> {
    const timeoutMs = this.#policy.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    const url = checkWebhookUrl(webhookUrl, this.#allowed);
    const target = await beforeDeadline(resolveTarget(url, this.#allowed), timeoutMs, `the webhook host was not resolved within ${timeoutMs} ms`);
    const pinned: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all === true) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
      else callback(null, target.address, target.family);
    };
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<number>((resolve, reject) => {
      let timer: NodeJS.Timeout | null = null;
      const settle = (status: number | Error) => {
        if (timer !== null) clearTimeout(timer);
        if (status instanceof Error) reject(status);
        else resolve(status);
      };
      const req = request(
        url,
        {
          method: 'POST',
          lookup: pinned,
          timeout: this.#policy.timeoutMs,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'upi-risk-webhooks',
            [SIGNATURE_HEADER]: signed,
          },
        },
        (res: IncomingMessage) => {
          // No redirect is followed: a 3xx is an answer like any other that is not 2xx.
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > this.#policy.maxAnswerBytes) res.destroy();
          });
          res.on('end', () => settle(res.statusCode ?? 0));
          res.on('close', () => settle(res.statusCode ?? 0));
          res.on('error', () => settle(res.statusCode ?? 0));
        },
      );
      // The answer's status counts once its head came, whatever its body does.
      timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), Math.max(0, deadline - Date.now()));
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', settle);
      req.end(body);
    });
  }
}

/**
 * Whether a delivery was redelivered while an attempt that began from
 * `before` was out. Compared by value: a rewrite of the journal makes every
 * delivery a new object with the same content.
 */
function redeliveredSince(before: Delivery, now: Delivery): boolean {
  return now.since !== before.since || now.nextAttemptAt !== before.nextAttemptAt || now.state !== before.state;
}
