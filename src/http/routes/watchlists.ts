import type { HttpRequest } from 'uWebSockets.js';
import { MAX_ADMIN_BODY_BYTES, MAX_WATCH_BODY_BYTES } from '../../api/admin-requests.js';
import type { Answer } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, Handler, RouteKit } from '../route-kit.js';
import { caller, jsonChange, mainThreadCalls, registerPagedWatchReads, type JsonChange } from './main-thread.js';
import { noInput, pathId } from './request-input.js';

/**
 * The watchlist routes (docs/watchlists.md): a key with the screen scope
 * manages its own watchlists, which the main thread keeps, screens and
 * delivers events of. Every key's watchlists, read-only, are under
 * /v1/admin/watchlists (admin.ts).
 */
export function registerWatchlistRoutes(kit: RouteKit, deps: Pick<ApiDependencies, 'admin'>): void {
  const { routes, keyed } = kit;
  const { ask, relay } = mainThreadCalls(kit, deps);
  const change = <T = undefined>(limit: number, answer: JsonChange<T>, read?: (req: HttpRequest) => T): Handler => jsonChange(kit, ROUTE.watchlists, 'screen', limit, answer, read);

  const create: JsonChange<undefined> = async (x, body) => relay(x, await ask({ op: 'watch.create', key: caller(x), body }));
  const list: Answer<null> = async (x) => relay(x, await ask({ op: 'watch.list', key: caller(x) }));
  const get: Answer<string> = async (x, id) => relay(x, await ask({ op: 'watch.get', key: caller(x), id }));
  const remove: JsonChange<string> = async (x, _body, id) => relay(x, await ask({ op: 'watch.delete', key: caller(x), id }));
  const newSecret: JsonChange<string> = async (x, body, id) => relay(x, await ask({ op: 'watch.secret', key: caller(x), id, body }));
  const addVpas: JsonChange<string> = async (x, body, id) => relay(x, await ask({ op: 'watch.add', key: caller(x), id, body }));
  const removeVpas: JsonChange<string> = async (x, body, id) => relay(x, await ask({ op: 'watch.remove', key: caller(x), id, body }));
  const redeliver: JsonChange<WatchEvent> = async (x, _body, event) => relay(x, await ask({ op: 'watch.redeliver', key: caller(x), id: event.id, eventId: event.eventId }));

  routes.post('/v1/watchlists', change(MAX_ADMIN_BODY_BYTES, create));
  routes.get('/v1/watchlists', keyed(ROUTE.watchlists, 'screen', noInput, list));
  routes.get('/v1/watchlists/:id', keyed(ROUTE.watchlists, 'screen', pathId, get));
  routes.del('/v1/watchlists/:id', change(MAX_ADMIN_BODY_BYTES, remove, pathId));
  routes.post('/v1/watchlists/:id/secret', change(MAX_ADMIN_BODY_BYTES, newSecret, pathId));
  routes.put('/v1/watchlists/:id/vpas', change(MAX_WATCH_BODY_BYTES, addVpas, pathId));
  routes.del('/v1/watchlists/:id/vpas', change(MAX_WATCH_BODY_BYTES, removeVpas, pathId));
  registerPagedWatchReads(kit, ask, '/v1/watchlists', ROUTE.watchlists, 'screen');
  routes.post('/v1/watchlists/:id/events/:event/redeliver', change(MAX_ADMIN_BODY_BYTES, redeliver, watchEvent));
}

interface WatchEvent {
  readonly id: string;
  readonly eventId: string;
}

/** The watchlist and event of /v1/watchlists/:id/events/:event/... */
function watchEvent(req: HttpRequest): WatchEvent {
  return { id: pathId(req), eventId: req.getParameter(1) ?? '' };
}
