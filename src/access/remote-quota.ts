import type { MessagePort } from 'node:worker_threads';
import type { KeyRecord } from './key-store.js';
import type { Quota, QuotaDecision } from './quota.js';

/**
 * Quotas for serving threads, kept by the main thread so a key has one quota
 * across all threads (N in-memory limiters would grant N quotas). With Redis
 * every thread talks to Redis directly and this is not used.
 */
type QuotaRequest =
  | { readonly id: number; readonly op: 'consume'; readonly key: KeyRecord }
  | { readonly id: number; readonly op: 'failedAuthentication' | 'peekIp'; readonly ip: string };

type QuotaReply = { readonly id: number; readonly decision: QuotaDecision } | { readonly id: number; readonly error: string };

export class RemoteQuota implements Quota {
  readonly #port: MessagePort;
  readonly #pending = new Map<number, { resolve: (d: QuotaDecision) => void; reject: (e: Error) => void }>();
  #next = 0;

  constructor(port: MessagePort) {
    this.#port = port;
    port.on('message', (reply: QuotaReply) => {
      const waiter = this.#pending.get(reply.id);
      if (waiter === undefined) return;
      this.#pending.delete(reply.id);
      if ('error' in reply) waiter.reject(new Error(reply.error));
      else waiter.resolve(reply.decision);
    });
  }

  consume(key: KeyRecord): Promise<QuotaDecision> {
    return this.#ask({ id: this.#next++, op: 'consume', key });
  }

  failedAuthentication(ip: string): Promise<QuotaDecision> {
    return this.#ask({ id: this.#next++, op: 'failedAuthentication', ip });
  }

  peekIp(ip: string): Promise<QuotaDecision> {
    return this.#ask({ id: this.#next++, op: 'peekIp', ip });
  }

  #ask(request: QuotaRequest): Promise<QuotaDecision> {
    return new Promise((resolve, reject) => {
      this.#pending.set(request.id, { resolve, reject });
      this.#port.postMessage(request);
    });
  }
}

/** Answer a serving thread's quota requests from `quota` (main thread side). */
export function serveQuota(port: MessagePort, quota: Quota): void {
  port.on('message', (request: QuotaRequest) => {
    const answer =
      request.op === 'consume'
        ? quota.consume(request.key)
        : request.op === 'failedAuthentication'
          ? quota.failedAuthentication(request.ip)
          : quota.peekIp(request.ip);
    Promise.resolve(answer).then(
      (decision) => port.postMessage({ id: request.id, decision } satisfies QuotaReply),
      (error: Error) => port.postMessage({ id: request.id, error: error.message } satisfies QuotaReply),
    );
  });
}
