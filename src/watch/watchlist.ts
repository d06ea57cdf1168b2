import { randomBytes } from 'node:crypto';
import type { BatchItem } from '../engine/verdict.js';
import { confidenceBand } from '../api/advice.js';
import { RISK_CATEGORIES, type RiskCategory } from '../vpa/categories.js';

/**
 * Watchlists (docs/watchlists.md): what a caller watches, the state each
 * watched VPA was last screened in, and the events made when that state
 * changes.
 */
export interface WatchFilters {
  readonly statuses?: readonly ('FLAGGED' | 'CLEARED')[];
  readonly risk_categories?: readonly RiskCategory[];
}

export interface Watchlist {
  readonly id: string;
  /** The key that created it: no other key sees it. */
  readonly owner: string;
  readonly name: string;
  readonly webhook_url: string;
  readonly filters: WatchFilters;
  /** Signs every delivery (HMAC-SHA256); shown only at creation and rotation. */
  readonly secret: string;
  readonly created_at: string;
  /** The secret before the last rotation, signing beside `secret` until `until` (epoch ms), when the rotation kept it. */
  readonly previous?: PreviousSecret;
}

export interface PreviousSecret {
  readonly secret: string;
  readonly until: number;
}

/** The secrets that sign a delivery at `now`: the watchlist's, and the previous one while it is kept. */
export function signingSecrets(w: Watchlist, now: number): string[] {
  return w.previous !== undefined && now < w.previous.until ? [w.secret, w.previous.secret] : [w.secret];
}

/**
 * A watched VPA's verdict as last screened, enough to write it back as a
 * batch item: [flagged 0/1, confidence ×10,000 or -1, risk category index
 * or -1, cluster number or -1, cluster size, evidence count].
 */
export type WatchedState = readonly [number, number, number, number, number, number];

export interface WatchEvent {
  readonly id: string;
  readonly type: 'vpa.changed';
  readonly watchlist_id: string;
  readonly upi: string;
  readonly before: BatchItem;
  readonly after: BatchItem;
  readonly data_version: string;
  readonly occurred_at: string;
}

export interface DeliveryAttempt {
  readonly at: string;
  /** The receiver's HTTP status, or null when none came (refused, timed out, unsafe target). */
  readonly status: number | null;
  readonly error: string | null;
  readonly duration_ms: number;
}

export interface Delivery {
  readonly state: 'pending' | 'delivered' | 'failed';
  readonly attempts: readonly DeliveryAttempt[];
  /** Epoch ms of the next attempt while pending. */
  readonly nextAttemptAt: number | null;
  /**
   * Epoch ms when this run of attempts began, when it is a redelivery: the
   * backoff and the give-up window count from here. Absent: from the
   * event's `occurred_at`.
   */
  readonly since?: number;
}

/** An event in the outbox, with how its delivery stands. */
export interface StoredEvent {
  readonly event: WatchEvent;
  readonly delivery: Delivery;
}

/** Attempts an event keeps (the latest). */
export const KEPT_ATTEMPTS = 20;
export const MAX_WATCHLIST_NAME = 200;
export const MAX_VPAS_PER_CALL = 1000;

export function newWatchlistId(): string {
  return `wl_${randomBytes(8).toString('hex')}`;
}

export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * Event ids sort by time, then at random: `evt_` + 12 hex digits of
 * milliseconds + 16 random hex digits.
 */
export function newEventId(now: number): string {
  return `evt_${now.toString(16).padStart(12, '0')}${randomBytes(8).toString('hex')}`;
}

const CONFIDENCE_UNITS = 10_000;

export function stateOf(item: BatchItem): WatchedState {
  if (item.status === 'CLEARED') return [0, -1, -1, -1, 0, 0];
  return [
    1,
    Math.round((item.confidence ?? 0) * CONFIDENCE_UNITS),
    item.risk_category === null ? -1 : RISK_CATEGORIES.indexOf(item.risk_category),
    item.cluster_id === null ? -1 : Number(item.cluster_id.slice(3)),
    item.cluster_size,
    item.evidence_count,
  ];
}

export function itemOf(upi: string, state: WatchedState): BatchItem {
  if (state[0] === 0) return { upi, status: 'CLEARED', confidence: null, risk_category: null, cluster_id: null, cluster_size: 0, evidence_count: 0 };
  return {
    upi,
    status: 'FLAGGED',
    confidence: state[1] / CONFIDENCE_UNITS,
    risk_category: state[2] < 0 ? null : RISK_CATEGORIES[state[2]]!,
    cluster_id: state[3] < 0 ? null : `MC-${state[3]}`,
    cluster_size: state[4],
    evidence_count: state[5],
  };
}

/** Whether a change matters to a watcher: status, risk category, cluster or confidence band. */
export function changedEnough(before: WatchedState, after: WatchedState): boolean {
  if (before[0] !== after[0] || before[2] !== after[2] || before[3] !== after[3]) return true;
  if (after[0] === 0) return false;
  return confidenceBand('FLAGGED', before[1] / CONFIDENCE_UNITS) !== confidenceBand('FLAGGED', after[1] / CONFIDENCE_UNITS);
}

export function sameState(a: WatchedState, b: WatchedState): boolean {
  for (let i = 0; i < 6; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether a watchlist's filters let an event through, judged by the verdict after the change. */
export function passesFilters(filters: WatchFilters, after: BatchItem): boolean {
  if (filters.statuses !== undefined && !filters.statuses.includes(after.status)) return false;
  if (filters.risk_categories !== undefined && (after.risk_category === null || !filters.risk_categories.includes(after.risk_category))) return false;
  return true;
}

/** Watchlist as the API shows it: never its secret or owner. */
export function publicWatchlist(w: Watchlist, vpaCount: number): Record<string, unknown> {
  return { id: w.id, name: w.name, webhook_url: w.webhook_url, filters: w.filters, created_at: w.created_at, vpa_count: vpaCount };
}

/** An event as the API shows it, with its delivery. */
export function publicEvent(stored: StoredEvent): Record<string, unknown> {
  const d = stored.delivery;
  return {
    ...stored.event,
    delivery: { state: d.state, attempts: d.attempts, next_attempt_at: d.nextAttemptAt === null ? null : new Date(d.nextAttemptAt).toISOString() },
  };
}
