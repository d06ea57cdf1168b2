import { badRequest } from '../../api/http-error.js';
import type { Answer } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, RouteKit } from '../route-kit.js';
import { caller, mainThreadCalls } from './main-thread.js';
import { pathId } from './request-input.js';
import { readUpi, requireUpi } from './verify.js';

/**
 * GET /v1/data-versions/{version}: when a data version (an answer's
 * X-Data-Version) was served and what it held (docs/api.md, Data versions);
 * GET /v1/verify/upi/history: how a VPA's answer changed (docs/api.md,
 * Answer history). The main thread keeps both records.
 */
export function registerHistoryRoutes(kit: RouteKit, deps: Pick<ApiDependencies, 'admin'>): void {
  const { ask, relay } = mainThreadCalls(kit, deps);
  const dataVersion: Answer<string> = async (x, raw) => {
    let version: string;
    try {
      version = decodeURIComponent(raw);
    } catch {
      throw badRequest('the data version has a malformed percent-encoding');
    }
    relay(x, await ask({ op: 'data-version.get', key: caller(x), version }));
  };
  const route = kit.keyed(ROUTE.history, 'screen', pathId, dataVersion);
  kit.routes.get('/v1/data-versions/:version', route);
  kit.routes.get('/v1/data-versions/', route);
  const answerHistory: Answer<string | undefined | null> = async (x, upi) => {
    relay(x, await ask({ op: 'answer-history.get', key: caller(x), upi: requireUpi(upi) }));
  };
  kit.routes.get('/v1/verify/upi/history', kit.keyed(ROUTE.history, 'screen', readUpi, answerHistory));
}
