/**
 * Test doubles: a scripted fetch that records what it was sent, and a clock
 * whose sleep records each delay and returns at once, so retry schedules can
 * be checked to the millisecond without waiting.
 */
import { UpiRiskClient } from '../src/client.js';
import type { FetchInit, FetchLike, FetchResponse } from '../src/transport.js';

export interface SentRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

export type Reply =
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }
  /** The connection is reset before any answer. */
  | { readonly reset: true }
  /** No answer until the request is aborted. */
  | { readonly hang: true };

export const BASE_URL = 'https://risk.test';
/** A fixed start for fake clocks: 2027-01-15T08:00:00Z. */
export const START_MS = Date.parse('2027-01-15T08:00:00Z');

/** A fetch answering from `script` (by request index, the last reply repeating), recording every request. */
export function scriptedFetch(script: readonly Reply[] | ((request: SentRequest, index: number) => Reply | Promise<Reply>)) {
  const requests: SentRequest[] = [];
  const fetch: FetchLike = async (url: string, init: FetchInit): Promise<FetchResponse> => {
    const request: SentRequest = {
      method: init.method,
      url: new URL(url),
      headers: init.headers,
      body: init.body === undefined ? undefined : (JSON.parse(init.body) as unknown),
    };
    const index = requests.push(request) - 1;
    const reply = typeof script === 'function' ? await script(request, index) : script[Math.min(index, script.length - 1)]!;
    if ('reset' in reply) {
      const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      throw new TypeError('fetch failed', { cause: reset });
    }
    if ('hang' in reply) {
      return new Promise((_, reject) => {
        const fail = () => reject(new DOMException('This operation was aborted', 'AbortError'));
        if (init.signal.aborted) fail();
        init.signal.addEventListener('abort', fail, { once: true });
      });
    }
    return new Response(reply.body === undefined ? null : JSON.stringify(reply.body), {
      status: reply.status,
      headers: { 'content-type': 'application/json', ...reply.headers },
    });
  };
  return { fetch, requests };
}

/** A clock that only moves when slept on; `delays` lists every sleep, ms. */
export function fakeClock(start = START_MS) {
  let now = start;
  const delays: number[] = [];
  return {
    delays,
    now: () => now,
    sleep: async (ms: number) => {
      delays.push(ms);
      now += ms;
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** A client over scriptedFetch(`answer`) and a fake clock, with no jitter: the client, what it sent, and the clock. */
export function scriptedClient(answer: (request: SentRequest, index: number) => Reply | Promise<Reply>) {
  const clock = fakeClock();
  const { fetch, requests } = scriptedFetch(answer);
  return { client: new UpiRiskClient({ baseUrl: BASE_URL, apiKey: 'k', fetch, now: clock.now, sleep: clock.sleep, random: () => 0 }), requests, clock };
}

export const answerHeaders = (n: number): Record<string, string> => ({
  'x-request-id': `req-${n}`,
  'x-data-version': 'snap-1+4',
  'x-data-as-of': '2027-01-15T07:59:00.000Z',
});

export function flagged(upi: string, confidence = 0.91): Record<string, unknown> {
  return {
    upi,
    status: 'FLAGGED',
    confidence,
    risk_category: 'mule',
    cluster_id: 'MC-12',
    cluster_size: 3,
    first_seen: '2026-06-01T04:30:00.000Z',
    last_seen: '2026-06-02T04:30:00.000Z',
    sources: [{ url: 'https://t.me/gang', category: 'telegram', captured_at: '2026-06-02T04:30:00.000Z', screenshot_available: false }],
    evidence_count: 2,
  };
}

export function cleared(upi: string): Record<string, unknown> {
  return {
    upi,
    status: 'CLEARED',
    confidence: null,
    risk_category: null,
    cluster_id: null,
    cluster_size: 0,
    first_seen: null,
    last_seen: null,
    sources: [],
    evidence_count: 0,
  };
}

/** The batch item of a full verdict: what a batch answer carries. */
export function itemOf(verdict: Record<string, unknown>): Record<string, unknown> {
  const { first_seen: _f, last_seen: _l, sources: _s, ...item } = verdict;
  return item;
}
