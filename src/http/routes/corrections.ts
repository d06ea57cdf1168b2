import type { HttpRequest } from 'uWebSockets.js';
import { MAX_ADMIN_BODY_BYTES } from '../../api/admin-requests.js';
import { HttpError, badRequest } from '../../api/http-error.js';
import { isValidVpa, normalizeVpa } from '../../vpa/vpa.js';
import type { Answer } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, RouteKit } from '../route-kit.js';
import { MALFORMED_QUERY, strictQueryValue } from '../strict-query.js';
import { caller, jsonChange, mainThreadCalls, type JsonChange } from './main-thread.js';
import { page, pathId } from './request-input.js';

/**
 * Corrections (docs/api.md, Corrections): retractions of evidence, by a
 * key with the ingest scope, and clearances of VPAs, by an admin key or
 * console session. The main thread records them, durably, and answers once
 * every serving thread serves them.
 */
export function registerCorrectionRoutes(kit: RouteKit, deps: Pick<ApiDependencies, 'admin'>): void {
  const { routes, keyed } = kit;
  const { ask, relay } = mainThreadCalls(kit, deps);

  const retract: JsonChange<undefined> = async (x, body) => relay(x, await ask({ op: 'retractions.create', key: caller(x), body }));
  const clear: JsonChange<undefined> = async (x, body) => relay(x, await ask({ op: 'clearances.create', key: caller(x), body }));
  const list: Answer<ClearancePage> = async (x, p) => {
    if (p.limit instanceof HttpError) throw p.limit;
    if (p.cursor instanceof HttpError) throw p.cursor;
    if (p.upi instanceof HttpError) throw p.upi;
    relay(x, await ask({ op: 'clearances.list', key: caller(x), upi: p.upi, cursor: p.cursor, limit: p.limit }));
  };
  const get: Answer<string> = async (x, id) => relay(x, await ask({ op: 'clearances.get', key: caller(x), id }));
  const end: JsonChange<string> = async (x, body, id) => relay(x, await ask({ op: 'clearances.end', key: caller(x), id, body }));

  routes.post('/v1/admin/retractions', jsonChange(kit, ROUTE.admin, 'ingest', MAX_ADMIN_BODY_BYTES, retract));
  routes.post('/v1/admin/clearances', jsonChange(kit, ROUTE.admin, 'admin', MAX_ADMIN_BODY_BYTES, clear));
  routes.get('/v1/admin/clearances', keyed(ROUTE.admin, 'admin', clearancePage, list));
  routes.get('/v1/admin/clearances/:id', keyed(ROUTE.admin, 'admin', pathId, get));
  routes.del('/v1/admin/clearances/:id', jsonChange(kit, ROUTE.admin, 'admin', MAX_ADMIN_BODY_BYTES, end, pathId));
}

type ClearancePage = ReturnType<typeof page> & { readonly upi: string | null | HttpError };

/** GET /v1/admin/clearances: the page, and the VPA whose clearances are asked for (canonical), if any. */
function clearancePage(req: HttpRequest): ClearancePage {
  const query = req.getQuery();
  const text = query === undefined ? undefined : strictQueryValue(query, 'upi');
  let upi: string | null | HttpError;
  if (text === MALFORMED_QUERY) upi = badRequest('the query string has a malformed percent-encoding');
  else if (text === undefined || text === '') upi = null;
  else upi = isValidVpa(text) ? normalizeVpa(text) : badRequest('"upi" is not a valid VPA (handle@provider)');
  return { ...page(req), upi };
}
