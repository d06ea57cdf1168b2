import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { KeyRecord } from '../access/key-record.js';
import { MAX_ADMIN_BODY_BYTES, MAX_WATCH_BODY_BYTES, jsonObjectBody, sessionJson, type AdminAnswer, type AdminRequest } from '../api/admin-requests.js';
import { MAX_CLUSTER_LIST, clusterGraph, largestClusters } from '../api/cluster-graph.js';
import { HttpError, badRequest, serviceUnavailable, unauthorized, notFound, validationError } from '../api/http-error.js';
import { MAX_AUDIT_LIMIT } from '../access/audit-log.js';
import { isClusterIdShape } from '../engine/verdict.js';
import { MAX_DISCARDED_BODY_BYTES, isContentType, readBody } from './request-body.js';
import { ROUTE } from './request-stats.js';
import type { Exchange, RouteKit } from './route-kit.js';
import { MALFORMED_QUERY, strictQueryValue } from './strict-query.js';

/** What the admin routes need of the edge's dependencies (ApiDependencies). */
export interface AdminRouteDependencies {
  readonly admin?: (request: AdminRequest) => Promise<AdminAnswer>;
  readonly keys: { verify(presentedKey: string): KeyRecord | null };
}

/**
 * The admin API under /v1/admin/ (docs/console.md), which the console
 * calls: sign-in and sessions, keys, the audit log, the figures, clusters.
 * Reads of the served data (clusters) are answered here, from the view the
 * request took; the rest by the main thread, which holds the keys, the
 * sessions and the records.
 */
export function registerAdminRoutes(kit: RouteKit, deps: AdminRouteDependencies): void {
  const { app, keyed, keyedBody, send } = kit;
  const { ask, relay, withId } = mainThreadCalls(kit, deps);
  const jsonBody = (answer: (x: Exchange, body: Record<string, unknown>) => Promise<void>) =>
    keyedBody(ROUTE.admin, 'admin', MAX_ADMIN_BODY_BYTES, 'application/json', (x, body) => answer(x, jsonObjectBody(body)), true);
  app.post('/v1/admin/session', (res, req) => {
    const x = kit.begin(res, ROUTE.admin);
    kit.answerLater(x);
    const contentType = req.getHeader('content-type');
    const ip = kit.remoteAddress(res);
    let cutOff = false;
    readBody(res, MAX_ADMIN_BODY_BYTES, MAX_DISCARDED_BODY_BYTES, req.getHeader('content-length'))
      .then(async (payload) => {
        if (payload instanceof HttpError) {
          cutOff = payload.closeConnection;
          throw payload;
        }
        if (!isContentType(contentType, 'application/json')) throw badRequest('Content-Type must be application/json');
        const presented = jsonObjectBody(payload).api_key;
        if (typeof presented !== 'string' || presented === '') throw validationError('"api_key" must be an API key with the admin scope');
        const record = deps.keys.verify(presented);
        if (record === null) return kit.refuseKey(x, unauthorized('invalid API key'), ip);
        await kit.admitKey(x, record, 'admin');
        relay(x, await ask({ op: 'session.open', key: record }));
      })
      .catch(async (error: unknown) => {
        // Refused before a key was charged (a bad body): the answer still carries the IP's limit state.
        if (x.quota === null) await kit.peekIp(x, ip).catch(() => {});
        kit.fail(x, error, cutOff);
      });
  });
  app.get(
    '/v1/admin/session',
    keyed(ROUTE.admin, 'admin', noInput, (x) => {
      if (x.session === null) throw unauthorized('no console session: sign in with POST /v1/admin/session');
      send(x, 200, sessionJson(x.session));
    }),
  );
  app.del(
    '/v1/admin/session',
    jsonBody(async (x) => {
      if (x.session === null) throw unauthorized('no console session to sign out of');
      relay(x, await ask({ op: 'session.close', key: caller(x), tokenHash: x.session.tokenHash }));
    }),
  );

  app.get('/v1/admin/keys', keyed(ROUTE.admin, 'admin', noInput, async (x) => relay(x, await ask({ op: 'keys.list', key: caller(x) }))));
  app.post('/v1/admin/keys', jsonBody(async (x, body) => relay(x, await ask({ op: 'keys.create', key: caller(x), body }))));
  app.post('/v1/admin/keys/:id/rotate', withId((id) => jsonBody(async (x) => relay(x, await ask({ op: 'keys.rotate', key: caller(x), id })))));
  app.post('/v1/admin/keys/:id/revoke', withId((id) => jsonBody(async (x) => relay(x, await ask({ op: 'keys.revoke', key: caller(x), id })))));
  app.patch('/v1/admin/keys/:id', withId((id) => jsonBody(async (x, body) => relay(x, await ask({ op: 'keys.update', key: caller(x), id, body })))));

  app.get(
    '/v1/admin/audit',
    keyed(ROUTE.admin, 'admin', (req) => limitOf(req, 100, MAX_AUDIT_LIMIT), async (x, limit) => {
      if (limit instanceof HttpError) throw limit;
      relay(x, await ask({ op: 'audit.list', key: caller(x), limit }));
    }),
  );
  // Every key's watchlists, read-only, for the console (docs/watchlists.md).
  app.get(
    '/v1/admin/watchlists',
    keyed(ROUTE.admin, 'admin', page, async (x, p) => {
      if (p.limit instanceof HttpError) throw p.limit;
      if (p.cursor instanceof HttpError) throw p.cursor;
      relay(x, await ask({ op: 'watch.list.all', key: caller(x), cursor: p.cursor, limit: p.limit }));
    }),
  );
  app.get('/v1/admin/watchlists/:id', keyed(ROUTE.admin, 'admin', (req) => req.getParameter(0) ?? '', async (x, id) => relay(x, await ask({ op: 'watch.get', key: caller(x), id, anyOwner: true }))));
  pagedWatchReads(kit, ask, '/v1/admin/watchlists', ROUTE.admin, 'admin');
  app.get('/v1/admin/stats', keyed(ROUTE.admin, 'admin', noInput, async (x) => relay(x, await ask({ op: 'stats', key: caller(x) }))));
  app.post('/v1/admin/compaction', jsonBody(async (x) => relay(x, await ask({ op: 'compaction.start', key: caller(x) }))));

  app.get(
    '/v1/admin/clusters',
    keyed(ROUTE.admin, 'admin', (req) => limitOf(req, 50, MAX_CLUSTER_LIST), (x, limit) => {
      if (limit instanceof HttpError) throw limit;
      send(x, 200, JSON.stringify({ clusters: largestClusters(x.view.base, limit) }));
    }),
  );
  app.get(
    '/v1/admin/clusters/:id/graph',
    keyed(ROUTE.admin, 'admin', (req) => req.getParameter(0) ?? '', (x, id) => {
      if (!isClusterIdShape(id)) throw badRequest('cluster id must have the form MC-<number>');
      const graph = clusterGraph(x.view, id);
      if (graph === null) throw notFound(`no cluster ${id}`);
      send(x, 200, JSON.stringify(graph));
    }),
  );
}

/**
 * The watchlist routes (docs/watchlists.md): a key with the screen scope
 * manages its own watchlists, which the main thread keeps, screens and
 * delivers events of.
 */
export function registerWatchlistRoutes(kit: RouteKit, deps: AdminRouteDependencies): void {
  const { app, keyed, keyedBody } = kit;
  const { ask, relay, withId } = mainThreadCalls(kit, deps);
  const body = (limit: number, answer: (x: Exchange, body: Record<string, unknown>) => Promise<void>) =>
    keyedBody(ROUTE.watchlists, 'screen', limit, 'application/json', (x, payload) => answer(x, jsonObjectBody(payload)), true);
  app.post('/v1/watchlists', body(MAX_ADMIN_BODY_BYTES, async (x, b) => relay(x, await ask({ op: 'watch.create', key: caller(x), body: b }))));
  app.get('/v1/watchlists', keyed(ROUTE.watchlists, 'screen', noInput, async (x) => relay(x, await ask({ op: 'watch.list', key: caller(x) }))));
  app.get('/v1/watchlists/:id', keyed(ROUTE.watchlists, 'screen', (req) => req.getParameter(0) ?? '', async (x, id) => relay(x, await ask({ op: 'watch.get', key: caller(x), id }))));
  app.del('/v1/watchlists/:id', withId((id) => body(MAX_ADMIN_BODY_BYTES, async (x) => relay(x, await ask({ op: 'watch.delete', key: caller(x), id })))));
  app.post('/v1/watchlists/:id/secret', withId((id) => body(MAX_ADMIN_BODY_BYTES, async (x) => relay(x, await ask({ op: 'watch.secret', key: caller(x), id })))));
  app.put('/v1/watchlists/:id/vpas', withId((id) => body(MAX_WATCH_BODY_BYTES, async (x, b) => relay(x, await ask({ op: 'watch.add', key: caller(x), id, body: b })))));
  app.del('/v1/watchlists/:id/vpas', withId((id) => body(MAX_WATCH_BODY_BYTES, async (x, b) => relay(x, await ask({ op: 'watch.remove', key: caller(x), id, body: b })))));
  pagedWatchReads(kit, ask, '/v1/watchlists', ROUTE.watchlists, 'screen');
  app.post('/v1/watchlists/:id/events/:event/redeliver', (res, req) => {
    const id = req.getParameter(0) ?? '';
    const eventId = req.getParameter(1) ?? '';
    body(MAX_ADMIN_BODY_BYTES, async (x) => relay(x, await ask({ op: 'watch.redeliver', key: caller(x), id, eventId })))(res, req);
  });
}

/** The `cursor` query parameter (a VPA or an event id from a previous page), null when absent. */
function cursorOf(req: HttpRequest): string | null | HttpError {
  const query = req.getQuery();
  const text = query === undefined ? undefined : strictQueryValue(query, 'cursor');
  if (text === MALFORMED_QUERY) return badRequest('the query string has a malformed percent-encoding');
  if (text === undefined || text === '') return null;
  return text.length <= 512 ? text : badRequest('"cursor" is longer than any cursor this service hands out');
}

/** How a route hands its request to the main thread and writes the answer it gets back. */
function mainThreadCalls(kit: RouteKit, deps: AdminRouteDependencies) {
  return {
    ask: (request: AdminRequest): Promise<AdminAnswer> =>
      deps.admin === undefined ? Promise.reject(serviceUnavailable('this server has no admin API')) : deps.admin(request),
    relay: (x: Exchange, answer: AdminAnswer): void => kit.send(x, answer.status, answer.body, answer.cookie === undefined ? undefined : ['Set-Cookie', answer.cookie]),
    /** A route whose handler depends on the path's one parameter, read within the uWS handler. */
    withId: (handler: (id: string) => (res: HttpResponse, req: HttpRequest) => void) => (res: HttpResponse, req: HttpRequest) => handler(req.getParameter(0) ?? '')(res, req),
  };
}

/**
 * GET <prefix>/:id/vpas and /events: a watchlist's VPAs and events, a page
 * at a time; under /v1/admin/ any key's (the admin scope), else the caller's.
 */
function pagedWatchReads(kit: RouteKit, ask: (request: AdminRequest) => Promise<AdminAnswer>, prefix: string, route: number, scope: 'admin' | 'screen'): void {
  for (const [path, op] of [
    [`${prefix}/:id/vpas`, 'watch.vpas'],
    [`${prefix}/:id/events`, 'watch.events'],
  ] as const) {
    kit.app.get(
      path,
      kit.keyed(route, scope, page, async (x, p) => {
        if (p.limit instanceof HttpError) throw p.limit;
        if (p.cursor instanceof HttpError) throw p.cursor;
        const answer = await ask({ op, key: caller(x), id: p.id, limit: p.limit, cursor: p.cursor, anyOwner: scope === 'admin' });
        kit.send(x, answer.status, answer.body);
      }),
    );
  }
}

/** The admitted caller's key (set by the admission that ran before any answer). */
function caller(x: Exchange): KeyRecord {
  return x.key!;
}

/** A paged read's path id, limit and cursor, read within the handler. */
function page(req: HttpRequest): { id: string; limit: number | HttpError; cursor: string | null | HttpError } {
  return { id: req.getParameter(0) ?? '', limit: limitOf(req, 100, 1000), cursor: cursorOf(req) };
}

function noInput(): null {
  return null;
}

/** The `limit` query parameter: a whole number from 1 to `max`, `fallback` when absent; the 400 to answer otherwise. */
function limitOf(req: HttpRequest, fallback: number, max: number): number | HttpError {
  const query = req.getQuery();
  const text = query === undefined ? undefined : strictQueryValue(query, 'limit');
  if (text === MALFORMED_QUERY) return badRequest('the query string has a malformed percent-encoding');
  if (text === undefined || text === null) return fallback;
  const limit = /^[0-9]{1,7}$/.test(text) ? Number(text) : NaN;
  return limit >= 1 && limit <= max ? limit : badRequest(`"limit" must be a whole number from 1 to ${max}`);
}
