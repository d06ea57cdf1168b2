import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { MAX_ADMIN_BODY_BYTES, jsonObjectBody, sessionJson } from '../../api/admin-requests.js';
import { MAX_CLUSTER_LIST, clusterGraph, largestClusters } from '../../api/cluster-graph.js';
import { HttpError, badRequest, notFound, unauthorized, validationError } from '../../api/http-error.js';
import { MAX_AUDIT_LIMIT } from '../../access/audit-log.js';
import { isClusterIdShape } from '../../engine/verdict.js';
import { remoteAddress } from '../caller.js';
import type { Answer } from '../exchange.js';
import { MAX_DISCARDED_BODY_BYTES, closedForAmbiguousLength, isContentType, readBody } from '../request-body.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, Handler, RouteKit } from '../route-kit.js';
import { caller, jsonChange, mainThreadCalls, registerPagedWatchReads, type JsonChange } from './main-thread.js';
import { limitOf, noInput, page, pathId } from './request-input.js';

/**
 * The admin API under /v1/admin/ (docs/console.md), which the console
 * calls: sign-in and sessions, keys, the audit log, every key's watchlists,
 * the figures, compaction, clusters. Reads of the served data (clusters) are
 * answered here, from the view the request took; the rest by the main
 * thread, which holds the keys, the sessions and the records. Evidence
 * (POST /v1/admin/evidence) has a group of its own (evidence.ts).
 */
export function registerAdminRoutes(kit: RouteKit, deps: Pick<ApiDependencies, 'admin' | 'keys'>): void {
  const { routes, keyed, send } = kit;
  const { ask, relay } = mainThreadCalls(kit, deps);
  const change = <T = undefined>(answer: JsonChange<T>, read?: (req: HttpRequest) => T): Handler => jsonChange(kit, ROUTE.admin, 'admin', MAX_ADMIN_BODY_BYTES, answer, read);

  /**
   * Sign in to the console with an API key of the admin scope, sent in the
   * body: the key is checked here, where keys are known, and charged like
   * any other; the main thread opens the session.
   */
  const signIn: Handler = (res: HttpResponse, req: HttpRequest) => {
    if (closedForAmbiguousLength(res, req)) return;
    const x = kit.begin(res, ROUTE.admin);
    kit.answerLater(x);
    const contentType = req.getHeader('content-type');
    const ip = remoteAddress(res);
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
  };
  const currentSession: Answer<null> = (x) => {
    if (x.session === null) throw unauthorized('no console session: sign in with POST /v1/admin/session');
    send(x, 200, sessionJson(x.session));
  };
  const signOut: JsonChange<undefined> = async (x) => {
    if (x.session === null) throw unauthorized('no console session to sign out of');
    relay(x, await ask({ op: 'session.close', key: caller(x), tokenHash: x.session.tokenHash }));
  };

  const listKeys: Answer<null> = async (x) => relay(x, await ask({ op: 'keys.list', key: caller(x) }));
  const createKey: JsonChange<undefined> = async (x, body) => relay(x, await ask({ op: 'keys.create', key: caller(x), body }));
  const rotateKey: JsonChange<string> = async (x, _body, id) => relay(x, await ask({ op: 'keys.rotate', key: caller(x), id }));
  const revokeKey: JsonChange<string> = async (x, _body, id) => relay(x, await ask({ op: 'keys.revoke', key: caller(x), id }));
  const updateKey: JsonChange<string> = async (x, body, id) => relay(x, await ask({ op: 'keys.update', key: caller(x), id, body }));

  const listAudit: Answer<number | HttpError> = async (x, limit) => {
    if (limit instanceof HttpError) throw limit;
    relay(x, await ask({ op: 'audit.list', key: caller(x), limit }));
  };
  // Every key's watchlists, read-only, for the console (docs/watchlists.md).
  const listAllWatchlists: Answer<ReturnType<typeof page>> = async (x, p) => {
    if (p.limit instanceof HttpError) throw p.limit;
    if (p.cursor instanceof HttpError) throw p.cursor;
    relay(x, await ask({ op: 'watch.list.all', key: caller(x), cursor: p.cursor, limit: p.limit }));
  };
  const getAnyWatchlist: Answer<string> = async (x, id) => relay(x, await ask({ op: 'watch.get', key: caller(x), id, anyOwner: true }));
  const figures: Answer<null> = async (x) => relay(x, await ask({ op: 'stats', key: caller(x) }));
  const startCompaction: JsonChange<undefined> = async (x) => relay(x, await ask({ op: 'compaction.start', key: caller(x) }));

  const largest: Answer<number | HttpError> = (x, limit) => {
    if (limit instanceof HttpError) throw limit;
    send(x, 200, JSON.stringify({ clusters: largestClusters(x.view.base, limit) }));
  };
  const graph: Answer<string> = (x, id) => {
    if (!isClusterIdShape(id)) throw badRequest('cluster id must have the form MC-<number>');
    const found = clusterGraph(x.view, id);
    if (found === null) throw notFound(`no cluster ${id}`);
    send(x, 200, JSON.stringify(found));
  };

  routes.post('/v1/admin/session', signIn);
  routes.get('/v1/admin/session', keyed(ROUTE.admin, 'admin', noInput, currentSession));
  routes.del('/v1/admin/session', change(signOut));

  routes.get('/v1/admin/keys', keyed(ROUTE.admin, 'admin', noInput, listKeys));
  routes.post('/v1/admin/keys', change(createKey));
  routes.post('/v1/admin/keys/:id/rotate', change(rotateKey, pathId));
  routes.post('/v1/admin/keys/:id/revoke', change(revokeKey, pathId));
  routes.patch('/v1/admin/keys/:id', change(updateKey, pathId));

  routes.get('/v1/admin/audit', keyed(ROUTE.admin, 'admin', auditLimit, listAudit));
  routes.get('/v1/admin/watchlists', keyed(ROUTE.admin, 'admin', page, listAllWatchlists));
  routes.get('/v1/admin/watchlists/:id', keyed(ROUTE.admin, 'admin', pathId, getAnyWatchlist));
  registerPagedWatchReads(kit, ask, '/v1/admin/watchlists', ROUTE.admin, 'admin');
  routes.get('/v1/admin/stats', keyed(ROUTE.admin, 'admin', noInput, figures));
  routes.post('/v1/admin/compaction', change(startCompaction));

  routes.get('/v1/admin/clusters', keyed(ROUTE.admin, 'admin', clusterListLimit, largest));
  routes.get('/v1/admin/clusters/:id/graph', keyed(ROUTE.admin, 'admin', pathId, graph));
}

function auditLimit(req: HttpRequest): number | HttpError {
  return limitOf(req, 100, MAX_AUDIT_LIMIT);
}

function clusterListLimit(req: HttpRequest): number | HttpError {
  return limitOf(req, 50, MAX_CLUSTER_LIST);
}
