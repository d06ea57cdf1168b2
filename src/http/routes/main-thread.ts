import type { HttpRequest } from 'uWebSockets.js';
import type { KeyRecord, KeyScope } from '../../access/key-record.js';
import { jsonObjectBody, type AdminAnswer, type AdminRequest } from '../../api/admin-requests.js';
import { HttpError, serviceUnavailable } from '../../api/http-error.js';
import type { Exchange } from '../exchange.js';
import type { ApiDependencies, Handler, RouteKit } from '../route-kit.js';
import { page } from './request-input.js';

/** Hand a request to the main thread, which holds the keys, the sessions and the records. */
export type Ask = (request: AdminRequest) => Promise<AdminAnswer>;

export interface MainThreadCalls {
  readonly ask: Ask;
  /** Write the main thread's answer, with the Set-Cookie it asks for, or as of the past state it was answered from. */
  readonly relay: (x: Exchange, answer: AdminAnswer) => void;
}

/** How a route hands its request to the main thread and writes the answer it gets back. */
export function mainThreadCalls(kit: RouteKit, deps: Pick<ApiDependencies, 'admin'>): MainThreadCalls {
  return {
    ask: (request: AdminRequest): Promise<AdminAnswer> =>
      deps.admin === undefined ? Promise.reject(serviceUnavailable('this server has no admin API')) : deps.admin(request),
    relay: (x: Exchange, answer: AdminAnswer): void => {
      const served = answer.servedAs;
      if (served !== undefined) kit.sendServedAs(x, answer.status, answer.body, served.version, served.asOf, ['X-As-Of', served.requested]);
      else kit.send(x, answer.status, answer.body, answer.cookie === undefined ? undefined : ['Set-Cookie', answer.cookie]);
    },
  };
}

/** A change with a JSON object body; `input` is what the route read from the path. */
export type JsonChange<T> = (x: Exchange, body: Record<string, unknown>, input: T) => Promise<void>;

/** A keyed route whose body, of at most `limit` bytes, is a JSON object (or empty). */
export function jsonChange<T = undefined>(kit: RouteKit, route: number, scope: KeyScope, limit: number, answer: JsonChange<T>, read?: (req: HttpRequest) => T): Handler {
  return kit.keyedBody(route, scope, limit, 'application/json', (x, body, input) => answer(x, jsonObjectBody(body), input), true, read);
}

/**
 * GET <prefix>/:id/vpas and /events: a watchlist's VPAs and events, a page
 * at a time; under /v1/admin/ any key's (the admin scope), else the caller's.
 */
export function registerPagedWatchReads(kit: RouteKit, ask: Ask, prefix: string, route: number, scope: 'admin' | 'screen'): void {
  for (const [path, op] of [
    [`${prefix}/:id/vpas`, 'watch.vpas'],
    [`${prefix}/:id/events`, 'watch.events'],
  ] as const) {
    kit.routes.get(
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
export function caller(x: Exchange): KeyRecord {
  return x.key!;
}
