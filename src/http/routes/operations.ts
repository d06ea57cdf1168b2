import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { hashApiKey, sameHash } from '../../access/api-key.js';
import { openApiDocument } from '../../api/openapi.js';
import { errorJson, notFound } from '../../api/http-error.js';
import type { ServingView } from '../../engine/serving-view.js';
import { bearerToken, isLoopback, remoteAddress } from '../caller.js';
import type { Exchange } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, Handler, RouteKit } from '../route-kit.js';

const HEALTHY = '{"status":"ok"}';

/**
 * The operations endpoints (docs/operations.md): /healthz, /readyz and
 * /metrics, outside the quotas and without a key; the OpenAPI document; and
 * the answers to every request no other route takes: HEAD on any path, and
 * 404 for the rest. Registered after every other group, so that the
 * catch-all routes come last.
 */
export function registerOperationsRoutes(kit: RouteKit, deps: Pick<ApiDependencies, 'version' | 'quota' | 'metrics' | 'metricsToken' | 'scrape' | 'thread'>): void {
  const { routes, begin, answerLater, send, sendHead, sendBare, fail } = kit;
  const openApiBody = JSON.stringify(openApiDocument(deps.version));
  // Compared as hashes in constant time, like API keys.
  const metricsTokenHash = deps.metricsToken === undefined ? undefined : hashApiKey(deps.metricsToken);
  const metrics = deps.metrics;

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

  /** Routes that need no key still report the caller's per-IP limit state. */
  const open = (route: number, answer: (x: Exchange, method: string, url: string) => void): Handler => (res: HttpResponse, req: HttpRequest) => {
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

  const health = (res: HttpResponse): void => {
    const x = begin(res, ROUTE.healthz);
    send(x, 200, HEALTHY);
  };
  const readiness = (res: HttpResponse): void => {
    const x = begin(res, ROUTE.readyz);
    send(x, 200, readyBody(x.view));
  };
  const scrapeMetrics = (res: HttpResponse, req: HttpRequest): void => {
    const x = begin(res, ROUTE.metrics);
    answerLater(x);
    const authorization = req.getHeader('authorization');
    const ip = remoteAddress(res);
    const hidden = () => fail(x, notFound('no such endpoint: GET /metrics'));
    if (metrics === undefined) return hidden();
    const scrape = () => {
      let text: Promise<string>;
      if (deps.scrape !== undefined) text = deps.scrape();
      else {
        metrics.observeSnapshot(x.view.base);
        text = metrics.text();
      }
      text.then(
        (body) => sendBare(x, metrics.contentType, body),
        (error: unknown) => fail(x, error),
      );
    };
    if (metricsTokenHash === undefined) return isLoopback(ip) ? scrape() : hidden();
    // A token tried is charged to the IP like a key tried, and past the IP's failures even the right one is not
    // looked at: the token cannot be guessed at line rate. The answer to a wrong one stays a 404.
    const presented = bearerToken(authorization);
    deps.quota
      .peekIp(ip)
      .then(async (budget) => {
        if (budget.remaining > 0 && typeof presented === 'string' && sameHash(hashApiKey(presented), metricsTokenHash)) return scrape();
        if (authorization !== '') await deps.quota.failedAuthentication(ip);
        return hidden();
      })
      .catch((error: unknown) => fail(x, error));
  };
  // HEAD on any path, answered without a body (uWS routes HEAD to no GET
  // route): a body would be read by a keep-alive client as the next answer.
  const headOfAny = (res: HttpResponse, req: HttpRequest): void => {
    const url = req.getUrl();
    const route = url === '/healthz' ? ROUTE.healthz : url === '/readyz' ? ROUTE.readyz : ROUTE.unknown;
    const x = begin(res, route);
    if (route === ROUTE.healthz) sendHead(x, 200, HEALTHY);
    else if (route === ROUTE.readyz) sendHead(x, 200, readyBody(x.view));
    else sendHead(x, 404, errorJson(notFound(`no such endpoint: HEAD ${url}`)));
  };

  routes.get('/v1/openapi.json', open(ROUTE.openapi, (x) => send(x, 200, openApiBody)));
  routes.get('/healthz', health);
  routes.get('/readyz', readiness);
  routes.get('/metrics', scrapeMetrics);
  routes.head('/*', headOfAny);
  // Every other method the HTTP library parses (PUT, DELETE, PATCH, OPTIONS,
  // TRACE, and GET/POST on unknown paths). Methods it does not know never
  // reach the app: uWebSockets.js closes their connection unanswered.
  routes.any(
    '/*',
    open(ROUTE.unknown, (x, method, url) => fail(x, notFound(`no such endpoint: ${method} ${url}`))),
  );
}
