import type { HttpRequest } from 'uWebSockets.js';
import { MAX_ADMIN_BODY_BYTES } from '../../api/admin-requests.js';
import { HttpError, badRequest } from '../../api/http-error.js';
import type { Answer } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, Handler, RouteKit } from '../route-kit.js';
import { MALFORMED_QUERY, strictQueryValue } from '../strict-query.js';
import { caller, jsonChange, mainThreadCalls, type JsonChange } from './main-thread.js';
import { page, pathId } from './request-input.js';

/**
 * Disputes and reports (docs/api.md, Disputes and reports): a key with the
 * screen scope disputes a verdict, reads its own disputes and reports what
 * happened after a payment; analysts (the admin scope) review and resolve
 * disputes and accept or dismiss reports. The main thread keeps them and
 * checks every body, id and cursor.
 */
export function registerDisputeRoutes(kit: RouteKit, deps: Pick<ApiDependencies, 'admin'>): void {
  const { routes, keyed } = kit;
  const { ask, relay } = mainThreadCalls(kit, deps);
  const change = <T = undefined>(route: number, scope: 'admin' | 'screen', answer: JsonChange<T>, read?: (req: HttpRequest) => T): Handler =>
    jsonChange(kit, route, scope, MAX_ADMIN_BODY_BYTES, answer, read);

  const openDispute: JsonChange<undefined> = async (x, body) => relay(x, await ask({ op: 'dispute.open', key: caller(x), body }));
  const getDispute: Answer<string> = async (x, id) => relay(x, await ask({ op: 'dispute.get', key: caller(x), id }));
  const listDisputes: Answer<ListInput> = async (x, p) => relay(x, await ask({ op: 'dispute.list', key: caller(x), ...paged(p) }));
  const createReport: JsonChange<string> = async (x, body, idempotencyKey) => relay(x, await ask({ op: 'report.create', key: caller(x), body, idempotencyKey }));

  const listAllDisputes: Answer<ListInput> = async (x, p) => relay(x, await ask({ op: 'dispute.list.all', key: caller(x), ...paged(p), status: statusOf(p) }));
  const reviewDispute: Answer<string> = async (x, id) => relay(x, await ask({ op: 'dispute.review', key: caller(x), id }));
  const resolveDispute: JsonChange<string> = async (x, body, id) => relay(x, await ask({ op: 'dispute.resolve', key: caller(x), id, body }));
  const listReports: Answer<ListInput> = async (x, p) => relay(x, await ask({ op: 'report.list', key: caller(x), ...paged(p), status: statusOf(p) }));
  const acceptReport: JsonChange<string> = async (x, body, id) => relay(x, await ask({ op: 'report.accept', key: caller(x), id, body }));
  const dismissReport: JsonChange<string> = async (x, body, id) => relay(x, await ask({ op: 'report.dismiss', key: caller(x), id, body }));

  routes.post('/v1/disputes', change(ROUTE.disputes, 'screen', openDispute));
  routes.get('/v1/disputes', keyed(ROUTE.disputes, 'screen', listInput, listDisputes));
  routes.get('/v1/disputes/:id', keyed(ROUTE.disputes, 'screen', pathId, getDispute));
  routes.post('/v1/reports', change(ROUTE.reports, 'screen', createReport, (req) => req.getHeader('idempotency-key')));

  routes.get('/v1/admin/disputes', keyed(ROUTE.admin, 'admin', listInput, listAllDisputes));
  routes.get('/v1/admin/disputes/:id', keyed(ROUTE.admin, 'admin', pathId, reviewDispute));
  routes.post('/v1/admin/disputes/:id/resolve', change(ROUTE.admin, 'admin', resolveDispute, pathId));
  routes.get('/v1/admin/reports', keyed(ROUTE.admin, 'admin', listInput, listReports));
  routes.post('/v1/admin/reports/:id/accept', change(ROUTE.admin, 'admin', acceptReport, pathId));
  routes.post('/v1/admin/reports/:id/dismiss', change(ROUTE.admin, 'admin', dismissReport, pathId));
}

type ListInput = ReturnType<typeof listInput>;

/** A listing's limit and cursor, and its `status` filter (the admin listings'). */
function listInput(req: HttpRequest): ReturnType<typeof page> & { status: string | null | HttpError } {
  const query = req.getQuery();
  const status = query === undefined ? undefined : strictQueryValue(query, 'status');
  return { ...page(req), status: status === MALFORMED_QUERY ? badRequest('the query string has a malformed percent-encoding') : (status ?? null) };
}

function paged(p: ListInput): { cursor: string | null; limit: number } {
  if (p.limit instanceof HttpError) throw p.limit;
  if (p.cursor instanceof HttpError) throw p.cursor;
  return { cursor: p.cursor, limit: p.limit };
}

function statusOf(p: ListInput): string | null {
  if (p.status instanceof HttpError) throw p.status;
  return p.status;
}
