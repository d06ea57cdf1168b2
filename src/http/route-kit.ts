import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { KeyRecord, KeyScope } from '../access/key-record.js';
import type { FoundSession } from '../api/admin-requests.js';
import type { QuotaDecision } from '../access/quota.js';
import type { ServingView } from '../engine/serving-view.js';
import type { HttpError } from '../api/http-error.js';

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

/** What app.ts lends the route modules that live beside it (admin-routes.ts): closures, so they may be taken apart. */
export interface RouteKit {
  readonly app: TemplatedApp;
  readonly begin: (res: HttpResponse, route: number) => Exchange;
  /** The answer comes after the handler returns: call within the handler. */
  readonly answerLater: (x: Exchange) => void;
  readonly send: (x: Exchange, status: number, body: string | Uint8Array, extra?: readonly [string, string], closeConnection?: boolean) => void;
  readonly fail: (x: Exchange, error: unknown, forceClose?: boolean) => void;
  /** A keyed route without a body (GET, or a change whose body is ignored). */
  readonly keyed: <T>(route: number, scope: KeyScope, read: (req: HttpRequest) => T, answer: Answer<T>) => (res: HttpResponse, req: HttpRequest) => void;
  /** A keyed route with a body of `mediaType` of at most `limit` bytes; `emptyAllowed` takes an empty body of any type. */
  readonly keyedBody: (route: number, scope: KeyScope, limit: number, mediaType: string, answer: Answer<Buffer>, emptyAllowed?: boolean) => (res: HttpResponse, req: HttpRequest) => void;
  /** Charge a known key's quota and check its scope (throws the 429 or 403). */
  readonly admitKey: (x: Exchange, record: KeyRecord, scope: KeyScope) => KeyRecord | Promise<KeyRecord>;
  /** Refuse a presented key: charged to the client IP, so keys cannot be guessed at line rate. */
  readonly refuseKey: (x: Exchange, refusal: HttpError, ip: string) => Promise<never>;
  /** Report the client IP's limit state, for an answer given before any key is known. */
  readonly peekIp: (x: Exchange, ip: string) => Promise<void>;
  readonly remoteAddress: (res: HttpResponse) => string;
}
