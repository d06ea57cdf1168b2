import type { HttpResponse } from 'uWebSockets.js';
import type { KeyRecord } from '../access/key-record.js';
import type { FoundSession } from '../api/admin-requests.js';
import type { QuotaDecision } from '../access/quota.js';
import type { ServingView } from '../engine/serving-view.js';

/**
 * Per-request context. The view is taken once, at the start, so a request
 * (every item of a batch included) is answered from one snapshot and one
 * state of its delta even if either changes meanwhile.
 */
export interface Exchange {
  readonly res: HttpResponse;
  /** Index in ROUTE_NAMES. */
  readonly route: number;
  /** RequestIds number of this request: its X-Request-Id, made text only for a log line. */
  readonly requestNumber: number;
  readonly view: ServingView;
  readonly started: number;
  /** Answered or aborted: nothing may be written any more. */
  closed: boolean;
  /**
   * Answered after the handler returned (answerLater): the writes must then
   * be corked. Inside the handler uWebSockets.js has corked the socket
   * already, and `cork` would only call back into JavaScript.
   */
  later: boolean;
  /** Rate-limit state to report in the X-RateLimit-* headers. */
  quota: QuotaDecision | null;
  /** The caller's key once admitted (a console session's key for a session). */
  key: KeyRecord | null;
  /** The console session the caller came with, when it came with one instead of a key. */
  session: (FoundSession & { readonly tokenHash: string }) | null;
}

/** An answer that runs once the caller is admitted; one that returns a promise answers later. */
export type Answer<T> = (x: Exchange, input: T) => void | Promise<void>;

/** An answer to a request with a body, once the caller is admitted and the whole body is in; `input` is what the route read from the request. */
export type BodyAnswer<T> = (x: Exchange, body: Buffer, input: T) => void | Promise<void>;
