import type { Logger } from '../common/logger.js';
import type { ServedData } from '../service/served-data.js';
import { Rescreener } from '../watch/rescreen.js';
import type { WatchService } from '../watch/watch-service.js';
import type { WatchStore } from '../watch/watch-store.js';
import { DEFAULT_DELIVERY, WebhookDelivery } from '../watch/webhook-delivery.js';

/** What serve's watchlists are given, whichever the mode. */
export interface WatchSettings {
  readonly served: ServedData;
  readonly logger: Logger;
  /** Hosts webhooks may reach although they are private or loopback (--webhook-allow). */
  readonly allowed: ReadonlySet<string>;
  /** Wait before a failed webhook is sent again, ms (--webhook-first-retry-seconds). */
  readonly firstRetryMs: number;
  /** Whether a watchlist's key is active: a revoked key's watchlists are not screened, nor their events sent. */
  readonly ownerActive: (keyId: string) => boolean;
}

/** Watchlists as served: the admin API's side, and the end. */
export interface Watching {
  readonly service: WatchService;
  close(): Promise<void>;
}

/** Screening a watch store on every change of what is served, and delivering its events. */
export interface Screening {
  readonly delivery: WebhookDelivery;
  readonly rescreener: Rescreener;
  stop(): Promise<void>;
}

export function startScreening(store: WatchStore, settings: WatchSettings): Screening {
  const { served, logger, allowed, ownerActive } = settings;
  const delivery = new WebhookDelivery(store, { allowed, logger, ownerActive, policy: { ...DEFAULT_DELIVERY, firstRetryMs: settings.firstRetryMs } });
  const rescreener = new Rescreener(store, served, { logger, ownerActive, onEvents: () => delivery.wake() });
  rescreener.start();
  delivery.wake();
  return {
    delivery,
    rescreener,
    stop: async () => {
      await rescreener.close();
      await delivery.close();
    },
  };
}
