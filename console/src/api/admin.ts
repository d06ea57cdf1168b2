/** The admin API's routes (docs/console.md), one function each. */
import type { KeyScope } from '../../../src/access/key-record.js';
import { ApiError, call, type Answer } from './client.js';
import type {
  AdminWatchlist,
  AdminWatchlistPage,
  AuditRecord,
  ClusterGraph,
  ClusterSummary,
  CompactionStarted,
  EvidenceResult,
  IssuedKey,
  KeyList,
  KeyRecord,
  Stats,
  WatchEventsPage,
  WatchedVpasPage,
} from './types.js';

const keyPath = (id: string) => `/v1/admin/keys/${encodeURIComponent(id)}`;

export async function listKeys(signal?: AbortSignal): Promise<KeyList> {
  return (await call<KeyList>('GET', '/v1/admin/keys', { signal })).body;
}

export async function createKey(name: string, plan: string, scopes: readonly KeyScope[]): Promise<IssuedKey> {
  return (await call<IssuedKey>('POST', '/v1/admin/keys', { json: { name, plan, scopes } })).body;
}

export async function rotateKey(id: string): Promise<IssuedKey> {
  return (await call<IssuedKey>('POST', `${keyPath(id)}/rotate`)).body;
}

export async function revokeKey(id: string): Promise<KeyRecord> {
  return (await call<{ record: KeyRecord }>('POST', `${keyPath(id)}/revoke`)).body.record;
}

/** Fold the live delta into a new snapshot now, in the background. */
export async function startCompaction(): Promise<CompactionStarted> {
  return (await call<CompactionStarted>('POST', '/v1/admin/compaction')).body;
}

export async function changePlan(id: string, plan: string): Promise<KeyRecord> {
  return (await call<{ record: KeyRecord }>('PATCH', keyPath(id), { json: { plan } })).body.record;
}

export async function listAudit(limit: number, signal?: AbortSignal): Promise<readonly AuditRecord[]> {
  return (await call<{ records: AuditRecord[] }>('GET', `/v1/admin/audit?limit=${limit}`, { signal })).body.records;
}

export async function fetchStats(signal?: AbortSignal): Promise<Stats> {
  return (await call<Stats>('GET', '/v1/admin/stats', { signal })).body;
}

export async function listClusters(limit: number, signal?: AbortSignal): Promise<readonly ClusterSummary[]> {
  return (await call<{ clusters: ClusterSummary[] }>('GET', `/v1/admin/clusters?limit=${limit}`, { signal })).body.clusters;
}

export async function fetchClusterGraph(clusterId: string, signal?: AbortSignal): Promise<ClusterGraph> {
  return (await call<ClusterGraph>('GET', `/v1/admin/clusters/${encodeURIComponent(clusterId)}/graph`, { signal })).body;
}

/** NDJSON evidence, stored and served before the answer; a 422 (ApiError) lists the bad lines in `errors`. */
export function uploadEvidence(file: Blob): Promise<Answer<EvidenceResult>> {
  return call<EvidenceResult>('POST', '/v1/admin/evidence', { body: file, contentType: 'application/x-ndjson' });
}

/** Every key's watchlists in id order: `limit` after `cursor` (null for the first page). */
export async function listWatchlists(limit: number, cursor: string | null, signal?: AbortSignal): Promise<AdminWatchlistPage> {
  return (await call<AdminWatchlistPage>('GET', `/v1/admin/watchlists?${pageQuery(limit, cursor)}`, { signal })).body;
}

/** Any key's watchlist; null when no watchlist has this id. */
export async function fetchWatchlist(id: string, signal?: AbortSignal): Promise<AdminWatchlist | null> {
  try {
    return (await call<AdminWatchlist>('GET', `/v1/admin/watchlists/${encodeURIComponent(id)}`, { signal })).body;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** A cursor-paged listing's query: `limit` items after `cursor` (null for the first page), and any filter that is not null. */
export function pageQuery(limit: number, cursor: string | null, filters: Readonly<Record<string, string | null>> = {}): string {
  const query = new URLSearchParams({ limit: String(limit) });
  if (cursor !== null) query.set('cursor', cursor);
  for (const [name, value] of Object.entries(filters)) if (value !== null) query.set(name, value);
  return query.toString();
}

/** One page of a watchlist's `vpas` or `events`: `limit` items after `cursor` (null for the first page). */
function watchPagePath(id: string, what: 'vpas' | 'events', limit: number, cursor: string | null): string {
  return `/v1/admin/watchlists/${encodeURIComponent(id)}/${what}?${pageQuery(limit, cursor)}`;
}

/** Watched VPAs in VPA order, each with its verdict now. */
export async function fetchWatchedVpas(id: string, limit: number, cursor: string | null, signal?: AbortSignal): Promise<WatchedVpasPage> {
  return (await call<WatchedVpasPage>('GET', watchPagePath(id, 'vpas', limit, cursor), { signal })).body;
}

/** Events newest first, each with its delivery. */
export async function fetchWatchEvents(id: string, limit: number, cursor: string | null, signal?: AbortSignal): Promise<WatchEventsPage> {
  return (await call<WatchEventsPage>('GET', watchPagePath(id, 'events', limit, cursor), { signal })).body;
}
