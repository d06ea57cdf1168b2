/** Corrections (docs/api.md, Corrections): retractions of evidence and clearances of VPAs. */
import { pageQuery } from './admin.js';
import { call } from './client.js';
import type { ClearanceChange, ClearancePage, RetractionOutcome } from './types.js';

/** Withdraw evidence items; needs a key with the ingest scope (else 403). */
export async function retractEvidence(evidenceIds: readonly string[], reason: string): Promise<RetractionOutcome> {
  return (await call<RetractionOutcome>('POST', '/v1/admin/retractions', { json: { evidence_ids: evidenceIds, reason } })).body;
}

/** Clearances in the order made, in force and ended: `limit` after `cursor` (null for the first page). */
export async function listClearances(limit: number, cursor: string | null, signal?: AbortSignal): Promise<ClearancePage> {
  return (await call<ClearancePage>('GET', `/v1/admin/clearances?${pageQuery(limit, cursor)}`, { signal })).body;
}

/** End a clearance in force: the evidence it set aside counts again. */
export async function endClearance(id: string): Promise<ClearanceChange> {
  return (await call<ClearanceChange>('DELETE', `/v1/admin/clearances/${encodeURIComponent(id)}`)).body;
}
