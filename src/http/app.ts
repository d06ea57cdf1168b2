import uWS from 'uWebSockets.js';
import type { TemplatedApp } from 'uWebSockets.js';
import { createRouteKit, type ApiDependencies } from './route-kit.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerClusterRoutes } from './routes/clusters.js';
import { registerConsoleRoutes } from './routes/console.js';
import { registerCorrectionRoutes } from './routes/corrections.js';
import { registerDisputeRoutes } from './routes/disputes.js';
import { registerEvidenceRoutes } from './routes/evidence.js';
import { registerHistoryRoutes } from './routes/history.js';
import { registerOperationsRoutes } from './routes/operations.js';
import { registerPrivateLookupRoutes } from './routes/private-lookups.js';
import { registerMirrorRoutes } from './routes/mirror.js';
import { registerVerifyRoutes } from './routes/verify.js';
import { registerWatchlistRoutes } from './routes/watchlists.js';

export interface ApiApp {
  readonly app: TemplatedApp;
  /** Requests begun and not yet answered or aborted. */
  inFlight: () => number;
  /** From now on every answer closes its connection, so keep-alive clients leave. */
  drain: () => void;
}

/**
 * Build the uWebSockets.js app with every v1 route and the operations
 * endpoints: one group of routes per module under routes/, all built once
 * here from one kit (route-kit.ts).
 */
export function createApiApp(deps: ApiDependencies, app: TemplatedApp = uWS.App()): ApiApp {
  const { kit, inFlight, drain } = createRouteKit(deps, app);
  registerVerifyRoutes(kit, deps);
  registerEvidenceRoutes(kit, deps);
  registerClusterRoutes(kit);
  registerPrivateLookupRoutes(kit, deps);
  registerMirrorRoutes(kit, deps);
  registerHistoryRoutes(kit, deps);
  registerAdminRoutes(kit, deps);
  registerWatchlistRoutes(kit, deps);
  registerCorrectionRoutes(kit, deps);
  registerDisputeRoutes(kit, deps);
  if (deps.console !== undefined) registerConsoleRoutes(kit.routes, deps.console);
  // Last: it holds the catch-all routes (HEAD and any method on /*).
  registerOperationsRoutes(kit, deps);
  return { app, inFlight, drain };
}
