import { BlockList, isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from '../common/logger.js';
import type { ServingView } from '../engine/serving-view.js';
import type { IntakeResult } from '../service/evidence-intake.js';
import { isClusterIdShape } from '../engine/verdict.js';
import { isValidVpa } from '../vpa/vpa.js';
import { MAX_BODY_BYTES, MAX_EVIDENCE_BODY_BYTES } from '../api/schemas.js';
import { answerBatchBody } from '../api/batch-answer.js';
import { answerSingle } from '../api/single-answer.js';
import { clusterAnswerJson } from '../api/cluster-answer-cache.js';
import { openApiDocument } from '../api/openapi.js';
import type { KeyRecord, KeyScope } from '../access/key-record.js';
import { hashApiKey, sameHash } from '../access/api-key.js';
import { sameCsrfToken, sessionTokenOf } from '../access/console-sessions.js';
import type { UsageCounter } from '../access/key-usage.js';
import type { AdminAnswer, AdminRequest } from '../api/admin-requests.js';
import { MAX_DISCARDED_BODY_BYTES, isContentType, isHeaderText, readBody } from './request-body.js';
import type { Answer, Exchange, RouteKit } from './route-kit.js';
import { registerAdminRoutes, registerWatchlistRoutes } from './admin-routes.js';
import { registerConsoleRoutes, type ConsoleAssets } from './console-assets.js';
import type { Quota, QuotaDecision } from '../access/quota.js';
import type { ServiceMetrics } from './metrics.js';
import { AnswerHead, snapshotHeaderLines } from './answer-headers.js';
import { ByteScratch } from '../common/byte-scratch.js';
import { ROUTE, ROUTE_NAMES } from './request-stats.js';
import { RequestIds } from './request-ids.js';
import { MALFORMED_QUERY, strictQueryValue } from './strict-query.js';
import {
  HttpError,
  STATUS_LINES,
  errorJson,
  badRequest,
  internalError,
  forbidden,
  notFound,
  serviceUnavailable,
  tooManyRequests,
  unauthorized,
} from '../api/http-error.js';

/**
 * Room for a single answer written as bytes: a CLEARED one is about 170
 * bytes around the VPA, a FLAGGED one about 150 more per source; one whose
 * upper bound is past this is written as text (flagged-verdict-bytes.ts).
 * The buffer keeps a view per answer length it has written (byte-scratch.ts),
 * at most one per byte of this: a megabyte or two per serving thread.
 */
const SINGLE_BODY_CAPACITY = 16_384;

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
}

export interface ApiApp {
  readonly app: TemplatedApp;
  /** Requests begun and not yet answered or aborted. */
  inFlight(): number;
  /** From now on every answer closes its connection, so keep-alive clients leave. */
  drain(): void;
}

/** Build the uWebSockets.js app with every v1 route and the operations endpoints. */
export function createApiApp(deps: ApiDependencies, app: TemplatedApp = uWS.App()): ApiApp {
  const openApiBody = JSON.stringify(openApiDocument(deps.version));
  // Compared as hashes in constant time, like API keys.
  const metricsTokenHash = deps.metricsToken === undefined ? undefined : hashApiKey(deps.metricsToken);
  const metrics = deps.metrics;
  const requestIds = new RequestIds();
  const head = new AnswerHead(requestIds);
  // The body of the answer being written, when it is written as bytes (single lookups).
  const bodyBytes = new ByteScratch(SINGLE_BODY_CAPACITY);
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

  const begin = (res: HttpResponse, route: number): Exchange => {
    inFlight++;
    return {
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
    };
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

  /** `body` may be bytes another answer will write over: it is handed to uWS (which copies it) before this returns. */
  const send = (x: Exchange, status: number, body: string | Uint8Array, extra?: readonly [string, string], closeConnection = false): void => {
    if (x.closed) return;
    // Made before the exchange is closed: were it to throw, the caller's fail() could still answer.
    const headLines = head.lines(snapshotLines(x.view), x.requestNumber, x.quota, extra?.[0], extra?.[1]);
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

  /** `forceClose`: close the connection whatever the error (a body is still streaming in and will not be read). */
  const fail = (x: Exchange, error: unknown, forceClose = false): void => {
    if (!(error instanceof HttpError)) {
      deps.logger.error({ requestId: requestIds.text(x.requestNumber), route: ROUTE_NAMES[x.route], err: String((error as Error)?.stack ?? error) }, 'request failed');
    }
    const e = error instanceof HttpError ? error : internalError();
    const extra: readonly [string, string] | undefined =
      e.status === 401 ? ['WWW-Authenticate', 'Bearer'] : e.retryAfter !== undefined ? ['Retry-After', String(e.retryAfter)] : undefined;
    // A refused upload may still be streaming in; closing the connection stops reading it.
    send(x, e.status, errorJson(e), extra, e.closeConnection || forceClose);
  };

  /**
   * Answer a HEAD request: the status and headers of the GET answer, whose
   * body (`getBody`) gives Content-Length, and no body. Within the handler,
   * so a request pipelined behind it is answered too.
   */
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

  /**
   * Authenticate and charge the quota. With the quota in this process the
   * caller is admitted (or refused, by a thrown HttpError) at once; with
   * Redis or a main-thread quota the answer is a promise. A failed
   * authentication is charged to the client IP instead, so keys cannot be
   * guessed at line rate.
   */
  const authorize = (x: Exchange, authorization: string, scope: KeyScope): KeyRecord | Promise<KeyRecord> => {
    const presented = bearerToken(authorization);
    const record = typeof presented === 'string' ? deps.keys.verify(presented) : null;
    if (record === null) return refuseKey(x, presented, remoteAddress(x.res));
    return admitKey(x, record, scope);
  };

  /**
   * Authenticate by the console session of a Cookie header: the main thread
   * knows the sessions. A change (any method but GET) must carry the
   * session's CSRF token. An unknown session is charged to the client IP,
   * like a wrong key.
   */
  const authorizeSession = async (x: Exchange, cookie: string, csrf: string, change: boolean, scope: KeyScope): Promise<KeyRecord> => {
    const ip = remoteAddress(x.res);
    const token = sessionTokenOf(cookie);
    if (token === null || deps.admin === undefined) {
      return refuseKey(x, unauthorized('missing Authorization header; send "Authorization: Bearer <API key>", or sign in to the console'), ip);
    }
    const tokenHash = hashApiKey(token);
    const found = (await deps.admin({ op: 'session.find', tokenHash })).session ?? null;
    if (found === null) return refuseKey(x, unauthorized('the console session has ended; sign in again'), ip);
    x.session = { ...found, tokenHash };
    // Charged first, so that a refusal carries the key's rate-limit state like any other answer.
    const record = await admitKey(x, found.key, scope);
    if (change && !sameCsrfToken(csrf, found.csrfToken)) {
      throw forbidden('a change made with a console session must carry the session\'s X-CSRF-Token header');
    }
    return record;
  };

  /** Charge a known key's quota and check its scope. */
  const admitKey = (x: Exchange, record: KeyRecord, scope: KeyScope): KeyRecord | Promise<KeyRecord> => {
    const decision = deps.quota.consume(record);
    return decision instanceof Promise ? decision.then((d) => charge(x, d, record, scope)) : charge(x, decision, record, scope);
  };

  /**
   * The credentials of a request: its Authorization header, or, without
   * one, the console session of its Cookie header. Read within the handler.
   */
  const admit = (x: Exchange, req: HttpRequest, scope: KeyScope): KeyRecord | Promise<KeyRecord> => {
    const authorization = req.getHeader('authorization');
    if (authorization === '' && deps.admin !== undefined) {
      const cookie = req.getHeader('cookie');
      if (cookie !== '') return authorizeSession(x, cookie, req.getHeader('x-csrf-token'), req.getMethod() !== 'get', scope);
    }
    return authorize(x, authorization, scope);
  };

  /** Admit a known key within its quota to a route of `scope`; the request counts against the quota either way. */
  const charge = (x: Exchange, decision: QuotaDecision, record: KeyRecord, scope: KeyScope): KeyRecord => {
    deps.usage?.count(record.id, !decision.allowed);
    x.quota = decision;
    x.key = record;
    if (!decision.allowed) {
      metrics?.rateLimited.inc({ kind: 'key' });
      throw tooManyRequests(decision.retryAfter);
    }
    if (!record.scopes.includes(scope)) throw forbidden(`this API key does not have the "${scope}" scope this endpoint needs`);
    return record;
  };

  const refuseKey = async (x: Exchange, presented: string | HttpError, ip: string): Promise<never> => {
    const decision = await deps.quota.failedAuthentication(ip);
    x.quota = decision;
    if (!decision.allowed) {
      metrics?.rateLimited.inc({ kind: 'auth_failures' });
      throw tooManyRequests(decision.retryAfter);
    }
    throw presented instanceof HttpError ? presented : unauthorized('invalid API key');
  };

  /**
   * A keyed GET route: `read` copies what it needs from the request
   * synchronously (the request object is gone after the handler returns),
   * then the answer runs once the caller is admitted: within the handler
   * when the quota answers at once, which is the common case.
   */
  const keyed = <T>(route: number, scope: KeyScope, read: (req: HttpRequest) => T, answer: Answer<T>) => {
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

  app.get(
    '/v1/verify/upi',
    keyed(ROUTE.verify, 'screen', readUpi, (x, upi) => {
      if (upi === MALFORMED_QUERY) throw badRequest('the query string has a malformed percent-encoding (a "%" not followed by two hex digits, or bytes that are not UTF-8)');
      if (upi === undefined || upi === '') throw badRequest('missing query parameter "upi"');
      if (!isValidVpa(upi)) throw badRequest('"upi" is not a valid VPA (handle@provider)');
      send(x, 200, answerSingle(x.view, upi, bodyBytes));
    }),
  );

  /**
   * A keyed POST route with a body of at most `limit` bytes of the media
   * type `mediaType`: `answer` runs once the caller is admitted and the
   * whole body is in, and may answer later (it returns a promise then).
   */
  const keyedBody = (route: number, scope: KeyScope, limit: number, mediaType: string, answer: Answer<Buffer>, emptyAllowed = false) => (res: HttpResponse, req: HttpRequest) => {
    const x = begin(res, route);
    answerLater(x);
    const contentType = req.getHeader('content-type');
    const declared = req.getHeader('content-length');
    // The body must be consumed from now on; authentication runs while it arrives.
    // A body somewhat over the cap is read and dropped so that the client gets its 400 (MAX_DISCARDED_BODY_BYTES).
    const body = readBody(res, limit, Math.max(MAX_DISCARDED_BODY_BYTES, 2 * limit), declared);
    let admitted: KeyRecord | Promise<KeyRecord>;
    try {
      admitted = admit(x, req, scope);
    } catch (error) {
      admitted = Promise.reject(error);
    }
    // Settled at once, so a refusal waits for the body without being an unhandled rejection meanwhile.
    const refusal = Promise.resolve(admitted).then(
      () => null,
      (error: unknown) => error,
    );
    // A refused key is answered once the body is read too (within its bounds):
    // after an answer uWS reads and drops the rest of a body itself, without
    // a bound for a chunked one.
    let cutOff = false;
    Promise.all([refusal, body])
      .then(([refused, payload]) => {
        cutOff = payload instanceof HttpError && payload.closeConnection;
        if (refused !== null) throw refused;
        const empty = !(payload instanceof HttpError) && payload.length === 0;
        if (!isContentType(contentType, mediaType) && !(emptyAllowed && empty)) throw badRequest(`Content-Type must be ${mediaType}`);
        if (payload instanceof HttpError) throw payload;
        return answer(x, payload);
      })
      .catch((error: unknown) => fail(x, error, cutOff));
  };

  app.post(
    '/v1/verify/upi/batch',
    keyedBody(ROUTE.batch, 'screen', MAX_BODY_BYTES, 'application/json', (x, body) => {
      const answer = answerBatchBody(x.view, body);
      if (answer instanceof HttpError) throw answer;
      send(x, 200, answer);
    }),
  );

  app.post(
    '/v1/admin/evidence',
    keyedBody(ROUTE.evidence, 'ingest', MAX_EVIDENCE_BODY_BYTES, 'application/x-ndjson', async (x, body) => {
      if (deps.ingest === undefined) throw serviceUnavailable('this server does not take evidence over HTTP');
      if (body.length === 0) throw badRequest('request body missing; send NDJSON evidence, one item per line');
      send(x, ...evidenceAnswer(await deps.ingest(body)));
    }),
  );

  const clusterRoute = keyed(ROUTE.cluster, 'screen', (req) => req.getParameter(0) ?? '', (x, id) => {
    if (id === '') throw badRequest('missing cluster id');
    if (!isClusterIdShape(id)) throw badRequest('cluster id must have the form MC-<number>');
    const answer = clusterAnswerJson(x.view.base, id);
    if (answer === null) throw notFound(`no cluster ${id}`);
    send(x, 200, answer);
  });
  app.get('/v1/verify/upi/cluster/:id', clusterRoute);
  app.get('/v1/verify/upi/cluster/', clusterRoute);

  app.get(
    '/v1/cyber/check',
    keyed(ROUTE.cyber_check, 'screen', () => null, () => {
      throw serviceUnavailable('the entity exposure check is planned and not yet available');
    }),
  );
  app.post(
    '/v1/audit/app',
    keyed(ROUTE.audit_app, 'screen', () => null, () => {
      throw serviceUnavailable('the mobile app audit is planned and not yet available');
    }),
  );

  /** Routes that need no key still report the caller's per-IP limit state. */
  const open = (route: number, answer: (x: Exchange, method: string, url: string) => void) => (res: HttpResponse, req: HttpRequest) => {
    const x = begin(res, route);
    answerLater(x);
    const method = req.getMethod().toUpperCase();
    const url = req.getUrl();
    deps.quota
      .peekIp(remoteAddress(res))
      .then((quota) => {
        x.quota = quota;
        answer(x, method, url);
      })
      .catch((error: unknown) => fail(x, error));
  };

  app.get('/v1/openapi.json', open(ROUTE.openapi, (x) => send(x, 200, openApiBody)));

  // Operations endpoints: no key, outside the quotas.
  const HEALTHY = '{"status":"ok"}';
  const readyBody = (view: ServingView): string => {
    const meta = view.base.meta;
    return JSON.stringify({
      status: 'ready',
      snapshot: meta.id,
      vpas: meta.vpaCount,
      data_version: view.version,
      delta_vpas: view.deltaMeta?.vpaCount ?? 0,
      ...(deps.thread === undefined ? {} : { thread: deps.thread }),
    });
  };
  app.get('/healthz', (res) => {
    const x = begin(res, ROUTE.healthz);
    send(x, 200, HEALTHY);
  });
  app.get('/readyz', (res) => {
    const x = begin(res, ROUTE.readyz);
    send(x, 200, readyBody(x.view));
  });
  app.get('/metrics', (res, req) => {
    const x = begin(res, ROUTE.metrics);
    answerLater(x);
    const authorization = req.getHeader('authorization');
    const ip = remoteAddress(res);
    const presented = bearerToken(authorization);
    const allowed =
      deps.metricsToken === undefined
        ? isLoopback(ip)
        : typeof presented === 'string' && sameHash(hashApiKey(presented), metricsTokenHash!);
    if (!allowed || metrics === undefined) {
      fail(x, notFound('no such endpoint: GET /metrics'));
      return;
    }
    const scrape =
      deps.scrape ??
      (() => {
        metrics.observeSnapshot(x.view.base);
        return metrics.text();
      });
    scrape().then(
      (text) => {
        if (x.closed) return;
        x.closed = true;
        inFlight--;
        x.res.cork(() => x.res.writeStatus('200 OK').writeHeader('Content-Type', metrics.contentType).end(text, draining));
      },
      (error: unknown) => fail(x, error),
    );
  });

  const peekIp = async (x: Exchange, ip: string): Promise<void> => {
    x.quota = await deps.quota.peekIp(ip);
  };
  const kit: RouteKit = { app, begin, answerLater, send, fail, keyed, keyedBody, admitKey, refuseKey, peekIp, remoteAddress };
  registerAdminRoutes(kit, deps);
  registerWatchlistRoutes(kit, deps);
  if (deps.console !== undefined) registerConsoleRoutes(app, deps.console);

  // HEAD on any path, answered without a body (uWS routes HEAD to no GET
  // route): a body would be read by a keep-alive client as the next answer.
  app.head('/*', (res, req) => {
    const url = req.getUrl();
    const route = url === '/healthz' ? ROUTE.healthz : url === '/readyz' ? ROUTE.readyz : ROUTE.unknown;
    const x = begin(res, route);
    if (route === ROUTE.healthz) sendHead(x, 200, HEALTHY);
    else if (route === ROUTE.readyz) sendHead(x, 200, readyBody(x.view));
    else sendHead(x, 404, errorJson(notFound(`no such endpoint: HEAD ${url}`)));
  });

  // Every other method the HTTP library parses (PUT, DELETE, PATCH, OPTIONS,
  // TRACE, and GET/POST on unknown paths). Methods it does not know never
  // reach the app: uWebSockets.js closes their connection unanswered.
  app.any(
    '/*',
    open(ROUTE.unknown, (x, method, url) => fail(x, notFound(`no such endpoint: ${method} ${url}`))),
  );

  return {
    app,
    inFlight: () => inFlight,
    drain: () => {
      draining = true;
    },
  };
}

/** The token of a `Bearer` Authorization header (scheme case-insensitive, RFC 7235), or the 401 to answer. */
function bearerToken(header: string): string | HttpError {
  if (header === '') return unauthorized('missing Authorization header; send "Authorization: Bearer <API key>"');
  if (!isHeaderText(header)) return unauthorized('the Authorization header must be visible ASCII: "Bearer <API key>"');
  const space = header.indexOf(' ');
  if (!isBearerScheme(header, space < 0 ? header.length : space)) return unauthorized('the Authorization scheme must be Bearer');
  const token = header.slice(space + 1).trim();
  return token === '' || space < 0 ? unauthorized('missing API key after "Bearer"') : token;
}

const BEARER = 'bearer';

/** Whether `header` up to `end` is "bearer" in any letter case, compared in place: every keyed request asks. */
function isBearerScheme(header: string, end: number): boolean {
  if (end !== BEARER.length) return false;
  // Setting bit 0x20 lower-cases a letter; no other character becomes one of these lower-case letters by it.
  for (let i = 0; i < end; i++) if ((header.charCodeAt(i) | 0x20) !== BEARER.charCodeAt(i)) return false;
  return true;
}

/** The status and JSON of the answer to POST /v1/admin/evidence. */
function evidenceAnswer(result: IntakeResult): [number, string] {
  switch (result.kind) {
    case 'stored':
      return [200, JSON.stringify({ items: result.items, added: result.added, duplicates: result.duplicates, data_version: result.dataVersion })];
    case 'empty':
      throw badRequest('the body holds no evidence item');
    case 'refused': {
      // The error body, with every bad line (up to MAX_REPORTED_ERRORS) beside the message.
      const first = result.errors[0]!;
      const message = `${result.invalidLines} invalid line(s), nothing stored; line ${first.line}: ${first.reason}`;
      return [422, JSON.stringify({ error: 'validation_error', message, invalid_lines: result.invalidLines, errors: result.errors })];
    }
  }
}

function remoteAddress(res: HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

/**
 * Loopback addresses. uWS writes IPv6 addresses in full (`0000:...:0001`),
 * and on a dual-stack listener (`--host ::`) IPv4 clients arrive as
 * IPv4-mapped IPv6 (`...:ffff:7f00:0001`), so compare parsed addresses, not text.
 */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/**
 * The `upi` query parameter: undefined when absent, MALFORMED_QUERY when the
 * query's percent-encoding is malformed. Read from the raw query, not with
 * uWS's `getQuery(key)`, whose decoding is lenient: one call into uWS as
 * before, and decoding work only when the query holds a `%`.
 */
function readUpi(req: HttpRequest): string | undefined | null {
  const query = req.getQuery();
  return query === undefined ? undefined : strictQueryValue(query, 'upi');
}

function isLoopback(ip: string): boolean {
  const family = isIP(ip);
  return family !== 0 && LOOPBACK.check(ip, family === 6 ? 'ipv6' : 'ipv4');
}

