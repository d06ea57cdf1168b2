import { performance } from 'node:perf_hooks';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from '../common/logger.js';
import type { ServingView } from '../engine/serving-view.js';
import type { DeltaHashes, HashRanges } from '../engine/hash-ranges.js';
import type { MirrorPublication } from '../mirror/mirror-publication.js';
import type { IntakeResult } from '../service/evidence-intake.js';
import type { KeyRecord, KeyScope } from '../access/key-record.js';
import type { UsageCounter } from '../access/key-usage.js';
import type { Quota } from '../access/quota.js';
import type { AdminAnswer, AdminRequest } from '../api/admin-requests.js';
import { HttpError, STATUS_LINES, errorJson, badRequest, internalError } from '../api/http-error.js';
import { createAdmission } from './admission.js';
import { AnswerHead, snapshotHeaderLines, type ExtraHeaders } from './answer-headers.js';
import type { ConsoleAssets } from './console-assets.js';
import type { Answer, BodyAnswer, Exchange } from './exchange.js';
import type { ServiceMetrics } from './metrics.js';
import { closedForAmbiguousLength, MAX_DISCARDED_BODY_BYTES, isContentType, isDeclaredWithin, readBody, readDeclaredBody } from './request-body.js';
import { RequestIds } from './request-ids.js';
import { ROUTE_NAMES } from './request-stats.js';

/** What the edge needs; the engine never imports the edge. */
export interface ApiDependencies {
  /** What answers: a snapshot and the live delta over it, replaced whole (ServingView). */
  readonly served: { readonly current: ServingView };
  readonly keys: { verify(presentedKey: string): KeyRecord | null };
  readonly quota: Quota;
  readonly logger: Logger;
  readonly version: string;
  readonly metrics?: ServiceMetrics;
  /**
   * Bearer token for GET /metrics. Without one, /metrics answers loopback
   * clients only.
   */
  readonly metricsToken?: string;
  /** Produce the /metrics text; defaults to this thread's registry (serving threads ask the main thread for all of them). */
  readonly scrape?: () => Promise<string>;
  /** Store evidence sent to POST /v1/admin/evidence and wait until it is served; absent, that route answers 503. */
  readonly ingest?: (body: Uint8Array) => Promise<IntakeResult>;
  /** Which serving thread this is, reported by /readyz (absent with one thread). */
  readonly thread?: number;
  /** Ask the main thread for an admin operation or a console session; absent, the admin routes answer 503. */
  readonly admin?: (request: AdminRequest) => Promise<AdminAnswer>;
  /** Counts each key's requests and 429s (the console's key usage). */
  readonly usage?: UsageCounter;
  /** The console's built files, served at /console/; absent, /console/ is not found. */
  readonly console?: ConsoleAssets;
  /** The served VPAs by hash, for range lookups; absent, or null for a view, they answer 503. */
  readonly ranges?: RangeSource;
  /** The local mirror's newest version; absent, its routes answer 503. */
  readonly mirror?: MirrorSource;
}

/** The local mirror as the serving threads hold it. */
export interface MirrorSource {
  /** The newest version published, null before the first. */
  readonly current: MirrorPublication | null;
  /** Why this server serves no mirror (no signing key, a fleet follower), or null when it does. */
  readonly unavailable: string | null;
}

/** The hash ranges (engine/hash-ranges.ts) of what a view serves. */
export interface RangeSource {
  /** The snapshot's ranges and the delta's hashes of `view`, or null while they are being made. */
  rangesFor(view: ServingView): { readonly ranges: HashRanges; readonly delta: DeltaHashes | null } | null;
}

/** A uWebSockets.js route handler. */
export type Handler = (res: HttpResponse, req: HttpRequest) => void;

/**
 * Where the route groups register their handlers: uWS's methods of the same
 * names, each handler wrapped by the kit's guard (createRouteKit).
 */
export interface Routes {
  get: (pattern: string, handler: Handler) => void;
  post: (pattern: string, handler: Handler) => void;
  put: (pattern: string, handler: Handler) => void;
  patch: (pattern: string, handler: Handler) => void;
  del: (pattern: string, handler: Handler) => void;
  head: (pattern: string, handler: Handler) => void;
  any: (pattern: string, handler: Handler) => void;
}

/**
 * What every route group is built from (routes/*.ts): the exchange's life
 * (begun, answered, failed) and the route shapes (keyed, with a body). Built
 * once per app; the handlers the groups make from it are fixed at start-up.
 */
export interface RouteKit {
  readonly routes: Routes;
  begin: (res: HttpResponse, route: number) => Exchange;
  /** The answer comes after the handler returns: call within the handler. */
  answerLater: (x: Exchange) => void;
  /** `body` may be bytes another answer will write over: it is handed to uWS (which copies it) before this returns. */
  send: (x: Exchange, status: number, body: string | Uint8Array, extra?: ExtraHeaders, closeConnection?: boolean) => void;
  /** As `send`, for a body of another type than JSON (the mirror's files). */
  sendTyped: (x: Exchange, status: number, contentType: string, body: Uint8Array, extra?: ExtraHeaders) => void;
  /** As `send`, for an answer from another state than the one served now (an as-of lookup): its X-Data-Version and X-Data-As-Of. */
  sendServedAs: (x: Exchange, status: number, body: string, dataVersion: string, dataAsOf: string, extra?: ExtraHeaders) => void;
  /**
   * Answer a HEAD request: the status and headers of the GET answer, whose
   * body (`getBody`) gives Content-Length, and no body. Within the handler,
   * so a request pipelined behind it is answered too.
   */
  sendHead: (x: Exchange, status: number, getBody: string) => void;
  /** Answer 200 later with nothing but a Content-Type: no request id, snapshot or rate-limit headers, and not counted (the /metrics scrape). */
  sendBare: (x: Exchange, contentType: string, body: string) => void;
  /** `forceClose`: close the connection whatever the error (a body is still streaming in and will not be read). */
  fail: (x: Exchange, error: unknown, forceClose?: boolean) => void;
  /**
   * A keyed route without a body (GET, or a change whose body is ignored):
   * `read` copies what it needs from the request synchronously (the request
   * object is gone after the handler returns), then the answer runs once the
   * caller is admitted: within the handler when the quota answers at once,
   * which is the common case.
   */
  keyed: <T>(route: number, scope: KeyScope, read: (req: HttpRequest) => T, answer: Answer<T>) => Handler;
  /**
   * A keyed route with a body of `mediaType` of at most `limit` bytes:
   * `answer` runs once the caller is admitted and the whole body is in, and
   * may answer later (it returns a promise then). `emptyAllowed` takes an
   * empty body of any type; `read` copies what else the answer needs from
   * the request (path parameters), within the handler.
   */
  keyedBody: <T = undefined>(route: number, scope: KeyScope, limit: number, mediaType: string, answer: BodyAnswer<T>, emptyAllowed?: boolean, read?: (req: HttpRequest) => T) => Handler;
  /** Charge a known key's quota and check its scope (throws the 429 or 403). */
  admitKey: (x: Exchange, record: KeyRecord, scope: KeyScope) => KeyRecord | Promise<KeyRecord>;
  /** Refuse a presented key: charged to the client IP, so keys cannot be guessed at line rate. */
  refuseKey: (x: Exchange, refusal: HttpError, ip: string) => Promise<never>;
  /** Report the client IP's limit state, for an answer given before any key is known. */
  peekIp: (x: Exchange, ip: string) => Promise<void>;
}

export interface BuiltRouteKit {
  readonly kit: RouteKit;
  /** Requests begun and not yet answered or aborted. */
  inFlight: () => number;
  /** From now on every answer closes its connection, so keep-alive clients leave. */
  drain: () => void;
}

/** Build the kit the route groups share, over `app`. */
export function createRouteKit(deps: ApiDependencies, app: TemplatedApp): BuiltRouteKit {
  const metrics = deps.metrics;
  const requestIds = new RequestIds();
  const head = new AnswerHead(requestIds);
  const { admit, admitKey, refuseKey } = createAdmission(deps);
  let inFlight = 0;
  let draining = false;
  // Most answers come from the view the one before came from. Known by its
  // version, not the object: holding a replaced snapshot here would keep its
  // memory until the next answer, which an idle thread may never give.
  let linesVersion: string | null = null;
  let lines: Uint8Array = new Uint8Array(0);
  const snapshotLines = (view: ServingView): Uint8Array => {
    if (view.version !== linesVersion) {
      lines = snapshotHeaderLines(view.version, view.asOfIso);
      linesVersion = view.version;
    }
    return lines;
  };

  /** The exchange the running handler began, if it began one (guard). */
  let begun: Exchange | null = null;

  const begin = (res: HttpResponse, route: number): Exchange => {
    inFlight++;
    return (begun = {
      res,
      route,
      requestNumber: requestIds.next(),
      view: deps.served.current,
      started: performance.now(),
      closed: false,
      later: false,
      quota: null,
      key: null,
      session: null,
    });
  };

  /**
   * The answer will come after the handler returns: uWS must be told what to
   * do if the client goes away meanwhile (the response object is dead then).
   * Answers given within the handler skip this.
   */
  const answerLater = (x: Exchange): void => {
    x.later = true;
    x.res.onAborted(() => {
      if (!x.closed) inFlight--;
      x.closed = true;
    });
  };

  const send = (x: Exchange, status: number, body: string | Uint8Array, extra?: ExtraHeaders, closeConnection = false, typedLines?: Uint8Array): void => {
    if (x.closed) return;
    // Made before the exchange is closed: were it to throw, the caller's fail() could still answer.
    const headLines = head.lines(typedLines ?? snapshotLines(x.view), x.requestNumber, x.quota, extra);
    x.closed = true;
    inFlight--;
    const statusLine = STATUS_LINES[status] ?? `${status}`;
    const close = closeConnection || draining;
    if (x.later) {
      x.res.cork(() => {
        head.write(x.res, statusLine, headLines);
        x.res.end(body, close);
      });
    } else {
      head.write(x.res, statusLine, headLines);
      x.res.end(body, close);
    }
    metrics?.requests.record(x.route, status, (performance.now() - x.started) / 1000);
  };

  /** Log a failure; a log that cannot be written must not stop the answer. */
  const logFailure = (fields: Record<string, unknown>, error: unknown): void => {
    try {
      deps.logger.error({ ...fields, err: String((error as Error)?.stack ?? error) }, 'request failed');
    } catch {}
  };

  const fail = (x: Exchange, error: unknown, forceClose = false): void => {
    if (!(error instanceof HttpError)) logFailure({ requestId: requestIds.text(x.requestNumber), route: ROUTE_NAMES[x.route] }, error);
    const e = error instanceof HttpError ? error : internalError();
    const extra: readonly [string, string] | undefined =
      e.status === 401 ? ['WWW-Authenticate', 'Bearer'] : e.retryAfter !== undefined ? ['Retry-After', String(e.retryAfter)] : undefined;
    // A refused upload may still be streaming in; closing the connection stops reading it.
    send(x, e.status, errorJson(e), extra, e.closeConnection || forceClose);
  };

  const sendTyped = (x: Exchange, status: number, contentType: string, body: Uint8Array, extra?: ExtraHeaders): void =>
    send(x, status, body, extra, false, snapshotHeaderLines(x.view.version, x.view.asOfIso, contentType));

  const sendServedAs = (x: Exchange, status: number, body: string, dataVersion: string, dataAsOf: string, extra?: ExtraHeaders): void =>
    send(x, status, body, extra, false, snapshotHeaderLines(dataVersion, dataAsOf));

  const sendHead = (x: Exchange, status: number, getBody: string): void => {
    const headLines = head.lines(snapshotLines(x.view), x.requestNumber, x.quota);
    x.closed = true;
    inFlight--;
    head.write(x.res, STATUS_LINES[status] ?? `${status}`, headLines);
    // Written here: endWithoutBody(length) aborts the process in this build,
    // and without a length Node's client does not keep the connection.
    x.res.writeHeader('Content-Length', String(Buffer.byteLength(getBody)));
    // endWithoutBody(length, close) likewise; a draining server asks the client to close instead.
    if (draining) x.res.writeHeader('Connection', 'close');
    x.res.endWithoutBody();
    metrics?.requests.record(x.route, status, (performance.now() - x.started) / 1000);
  };

  const sendBare = (x: Exchange, contentType: string, body: string): void => {
    if (x.closed) return;
    x.closed = true;
    inFlight--;
    x.res.cork(() => x.res.writeStatus('200 OK').writeHeader('Content-Type', contentType).end(body, draining));
  };

  const keyed = <T>(route: number, scope: KeyScope, read: (req: HttpRequest) => T, answer: Answer<T>): Handler => {
    return (res: HttpResponse, req: HttpRequest) => {
      const x = begin(res, route);
      try {
        const input = read(req);
        const admitted = admit(x, req, scope);
        if (admitted instanceof Promise) {
          answerLater(x);
          // One catch covers both a refused admission and an answer that throws.
          admitted.then(() => answer(x, input)).catch((error: unknown) => fail(x, error));
        } else {
          const answered = answer(x, input);
          if (answered instanceof Promise) {
            answerLater(x);
            answered.catch((error: unknown) => fail(x, error));
          }
        }
      } catch (error) {
        fail(x, error);
      }
    };
  };

  const keyedBody = <T = undefined>(route: number, scope: KeyScope, limit: number, mediaType: string, answer: BodyAnswer<T>, emptyAllowed = false, read?: (req: HttpRequest) => T): Handler => (res: HttpResponse, req: HttpRequest) => {
    if (closedForAmbiguousLength(res, req)) return;
    const x = begin(res, route);
    answerLater(x);
    const contentType = req.getHeader('content-type');
    const declared = req.getHeader('content-length');
    const input = read?.(req) as T;
    let admitted: KeyRecord | Promise<KeyRecord>;
    try {
      admitted = admit(x, req, scope);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what admit threw (an HttpError, or a fault's Error), unchanged
      admitted = Promise.reject(error);
    }
    // An admitted caller's body of a declared length within the cap is read and answered without promises: most requests.
    if (!(admitted instanceof Promise) && isContentType(contentType, mediaType) && isDeclaredWithin(declared, limit)) {
      readDeclaredBody(res, (payload) => {
        try {
          const answered = answer(x, payload, input);
          if (answered instanceof Promise) answered.catch((error: unknown) => fail(x, error));
        } catch (error) {
          fail(x, error);
        }
      });
      return;
    }
    // Settled at once, so a refusal waits for the body without being an unhandled rejection meanwhile.
    const refusal = Promise.resolve(admitted).then(
      () => null,
      (error: unknown) => error,
    );
    // The body must be consumed from now on; authentication runs while it arrives, and a refused caller's is not kept.
    // A body somewhat over the cap is read and dropped so that the client gets its 400 (MAX_DISCARDED_BODY_BYTES).
    const body = readBody(res, limit, Math.max(MAX_DISCARDED_BODY_BYTES, 2 * limit), declared, refusal.then((r) => r !== null));
    // A refused key is answered once the body is read too (within its bounds):
    // after an answer uWS reads and drops the rest of a body itself, without
    // a bound for a chunked one.
    let cutOff = false;
    Promise.all([refusal, body])
      .then(([refused, payload]) => {
        cutOff = payload instanceof HttpError && payload.closeConnection;
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the refusal admit threw (an HttpError, or a fault's Error), unchanged
        if (refused !== null) throw refused;
        const empty = !(payload instanceof HttpError) && payload.length === 0;
        if (!isContentType(contentType, mediaType) && !(emptyAllowed && empty)) throw badRequest(`Content-Type must be ${mediaType}`);
        if (payload instanceof HttpError) throw payload;
        return answer(x, payload, input);
      })
      .catch((error: unknown) => fail(x, error, cutOff));
  };

  /**
   * What the handler leaves when it throws, or returns having neither
   * answered nor left the answer for later: its exchange's 500, or, for a
   * handler that began none (the console's files), its connection closed.
   */
  const rescue = (res: HttpResponse, x: Exchange | null, error: unknown): void => {
    try {
      if (x !== null && x.res === res) {
        // The connection is closed after it: the handler may have left it in any state.
        if (!x.closed) fail(x, error, true);
        // Answered already: the failure is only logged.
        else logFailure({ requestId: requestIds.text(x.requestNumber), route: ROUTE_NAMES[x.route] }, error);
        return;
      }
      logFailure({}, error);
      res.close();
    } catch {
      try {
        res.close();
      } catch {}
    }
  };

  /**
   * Every handler runs under this: uWS ends the whole process when a handler
   * returns without answering or attaching an abort handler, which an
   * exception escaping the handler amounts to. With the guard either is a
   * 500 of that request, logged, and the server serves on.
   */
  const guard =
    (handler: Handler): Handler =>
    (res, req) => {
      begun = null;
      let thrown: { readonly error: unknown } | null = null;
      try {
        handler(res, req);
      } catch (error) {
        thrown = { error };
      }
      // Set by begin() within the handler, which the compiler cannot see.
      const x = begun as Exchange | null;
      // Not kept past the handler: its view would hold a replaced snapshot's memory on an idle thread.
      begun = null;
      if (thrown !== null) rescue(res, x, thrown.error);
      else if (x !== null && !x.closed && !x.later) rescue(res, x, new Error(`the ${ROUTE_NAMES[x.route]} handler returned without answering`));
    };
  const routes: Routes = {
    get: (pattern, handler) => void app.get(pattern, guard(handler)),
    post: (pattern, handler) => void app.post(pattern, guard(handler)),
    put: (pattern, handler) => void app.put(pattern, guard(handler)),
    patch: (pattern, handler) => void app.patch(pattern, guard(handler)),
    del: (pattern, handler) => void app.del(pattern, guard(handler)),
    head: (pattern, handler) => void app.head(pattern, guard(handler)),
    any: (pattern, handler) => void app.any(pattern, guard(handler)),
  };

  const peekIp = async (x: Exchange, ip: string): Promise<void> => {
    x.quota = await deps.quota.peekIp(ip);
  };

  return {
    kit: { routes, begin, answerLater, send, sendTyped, sendServedAs, sendHead, sendBare, fail, keyed, keyedBody, admitKey, refuseKey, peekIp },
    inFlight: () => inFlight,
    drain: () => {
      draining = true;
    },
  };
}
