import { clusterAnswerJson } from '../../api/cluster-answer-cache.js';
import { badRequest, notFound } from '../../api/http-error.js';
import { isClusterIdShape } from '../../engine/verdict.js';
import type { Answer } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { RouteKit } from '../route-kit.js';
import { pathId } from './request-input.js';

/**
 * GET /v1/verify/upi/cluster/:id: one cluster's answer (docs/api.md),
 * from the view the request took. The admin's cluster list and graph are
 * under /v1/admin/clusters (admin.ts).
 */
export function registerClusterRoutes(kit: RouteKit): void {
  const { routes, keyed, send } = kit;
  const cluster: Answer<string> = (x, id) => {
    if (id === '') throw badRequest('missing cluster id');
    if (!isClusterIdShape(id)) throw badRequest('cluster id must have the form MC-<number>');
    const answer = clusterAnswerJson(x.view.base, id);
    if (answer === null) throw notFound(`no cluster ${id}`);
    send(x, 200, answer);
  };
  const clusterRoute = keyed(ROUTE.cluster, 'screen', pathId, cluster);
  routes.get('/v1/verify/upi/cluster/:id', clusterRoute);
  // Without an id: answered 400 by the same handler, not 404.
  routes.get('/v1/verify/upi/cluster/', clusterRoute);
}
