import type { MessagePort } from 'node:worker_threads';
import type { KeyRecord } from './key-record.js';
import type { Quota, QuotaDecision } from './quota.js';

/**
 * Quotas for one of several serving threads without Redis. Key quotas are
 * decided in this thread by `keys` (windows in memory shared by the serving
 * threads, shared-windows.ts); failed authentications per IP, which are
 * rarer, are counted by the main thread and asked of it by message. With
 * Redis every thread talks to Redis directly and this is not used.
 */
type QuotaRequest = { readonly id: number; readonly op: 'failedAuthentication' | 'peekIp'; readonly ip: string };

type QuotaReply = { readonly id: number; readonly decision: QuotaDecision } | { readonly id: number; readonly error: string };

export class RemoteQuota implements Quota {
  readonly #port: MessagePort;
  readonly #keys: Pick<Quota, 'consume'>;
  readonly #pending = new Map<number, { resolve: (d: QuotaDecision) => void; reject: (e: Error) => void }>();
  #next = 0;

  constructor(port: MessagePort, keys: Pick<Quota, 'consume'>) {
    this.#port = port;
    this.#keys = keys;
    port.on('message', (reply: QuotaReply) => {
      const waiter = this.#pending.get(reply.id);
      if (waiter === undefined) return;
      this.#pending.delete(reply.id);
      if ('error' in reply) waiter.reject(new Error(reply.error));
      else waiter.resolve(reply.decision);
    });
  }

  consume(key: KeyRecord): QuotaDecision | Promise<QuotaDecision> {
    return this.#keys.consume(key);
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

/** Answer a serving thread's per-IP requests from `quota` (main thread side). */
export function serveQuota(port: MessagePort, quota: Quota): void {
  port.on('message', (request: QuotaRequest) => {
    const answer = request.op === 'failedAuthentication' ? quota.failedAuthentication(request.ip) : quota.peekIp(request.ip);
    answer.then(
      (decision) => port.postMessage({ id: request.id, decision } satisfies QuotaReply),
      (error: Error) => port.postMessage({ id: request.id, error: error.message } satisfies QuotaReply),
    );
  });
}
