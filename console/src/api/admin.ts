/** The admin API's routes (docs/console.md), one function each. */
import type { KeyScope } from '../../../src/access/key-record.js';
import { call, type Answer } from './client.js';
import type { AuditRecord, ClusterGraph, ClusterSummary, EvidenceResult, IssuedKey, KeyList, KeyRecord, Stats } from './types.js';

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
