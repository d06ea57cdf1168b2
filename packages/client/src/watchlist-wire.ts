/**
 * The watchlist wire shapes, WRITTEN BY HAND from docs/watchlists.md: the
 * OpenAPI document does not carry them yet. Once it does, their component
 * names go into scripts/generate-client-types.ts and this file goes.
 */
import type { BatchItem, RiskCategory } from './wire.js';

export type VerdictStatus = BatchItem['status'];

/** Which changes make events; each list is matched against the verdict after the change. */
export interface WatchlistFilters {
  statuses?: VerdictStatus[];
  risk_categories?: RiskCategory[];
}

/** Body of `POST /v1/watchlists`. */
export interface WatchlistCreateRequest {
  name: string;
  /** `https`, on a public address (docs/watchlists.md, Safe targets). */
  webhook_url: string;
  filters?: WatchlistFilters;
}

export interface Watchlist {
  id: string;
  name: string;
  webhook_url: string;
  filters: WatchlistFilters | null;
  created_at: string;
  vpa_count: number;
}

/** Answer to `POST /v1/watchlists` (201): the only answer that shows the secret. */
export interface CreatedWatchlist {
  id: string;
  name: string;
  webhook_url: string;
  filters: WatchlistFilters | null;
  secret: string;
  created_at: string;
}

export interface WatchlistList {
  watchlists: Watchlist[];
}

export interface WatchlistDeleted {
  deleted: true;
}

/** Answer to `POST /v1/watchlists/{id}/secret`: the old secret signs nothing from now on. */
export interface WatchlistSecret {
  secret: string;
}

/** Body of `PUT` and `DELETE /v1/watchlists/{id}/vpas`: 1 to 1,000 VPAs. */
export interface WatchlistVpasRequest {
  upis: string[];
}

export interface WatchlistVpasAdded {
  added: number;
  total: number;
}

export interface WatchlistVpasRemoved {
  removed: number;
  total: number;
}

/** A page of `GET /v1/watchlists/{id}/vpas`: each VPA's current verdict, in VPA order. */
export interface WatchlistVpaPage {
  vpas: BatchItem[];
  next_cursor: string | null;
}

/** What a webhook receives: a watched VPA's verdict changed in a way that matters. */
export interface WatchlistEvent {
  id: string;
  type: 'vpa.changed';
  watchlist_id: string;
  upi: string;
  before: BatchItem;
  after: BatchItem;
  data_version: string;
  occurred_at: string;
}

export interface DeliveryAttempt {
  at: string;
  /** The receiver's HTTP status; null when no answer came. */
  status: number | null;
  error: string | null;
  duration_ms: number;
}

export interface EventDelivery {
  state: 'pending' | 'delivered' | 'failed';
  /** The last 20 attempts. */
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
}

export interface WatchlistEventWithDelivery extends WatchlistEvent {
  delivery: EventDelivery;
}

/** A page of `GET /v1/watchlists/{id}/events`, newest first. */
export interface WatchlistEventPage {
  events: WatchlistEventWithDelivery[];
  next_cursor: string | null;
}

/** Answer to `POST /v1/watchlists/{id}/events/{event_id}/redeliver` (202). */
export interface EventRedelivery {
  event: WatchlistEvent;
}
