/**
 * The analysts' review of disputes and reports (docs/api.md, Review):
 * every key's disputes and reports, newest first, and the decisions on
 * them, one function each.
 */
import { pageQuery } from './admin.js';
import { call, type Answer } from './client.js';
import type { AdminDisputePage, DisputeResolved, DisputeReview, DisputeStatus, ReportDecided, ReportPage, ReportStatus } from './types.js';

const disputePath = (id: string) => `/v1/admin/disputes/${encodeURIComponent(id)}`;
const reportPath = (id: string) => `/v1/admin/reports/${encodeURIComponent(id)}`;

/** Disputes with `status` (every one when null): `limit` after `cursor` (null for the first page). */
export async function listDisputes(status: DisputeStatus | null, limit: number, cursor: string | null, signal?: AbortSignal): Promise<AdminDisputePage> {
  return (await call<AdminDisputePage>('GET', `/v1/admin/disputes?${pageQuery(limit, cursor, { status })}`, { signal })).body;
}

/** A dispute with its VPA's verdict now and the evidence behind it; the answer's request id goes with the verdict. */
export function fetchDisputeReview(id: string, signal?: AbortSignal): Promise<Answer<DisputeReview>> {
  return call<DisputeReview>('GET', disputePath(id), { signal });
}

export interface Resolution {
  readonly outcome: 'upheld' | 'rejected';
  readonly note: string;
  /** Upheld only: retract these evidence items of the VPA instead of clearing it. */
  readonly retract?: readonly string[];
}

/** Resolve an open dispute, once: a second time is 409. */
export async function resolveDispute(id: string, resolution: Resolution): Promise<DisputeResolved> {
  return (await call<DisputeResolved>('POST', `${disputePath(id)}/resolve`, { json: resolution })).body;
}

/** Reports with `status` (every one when null): `limit` after `cursor` (null for the first page). */
export async function listReports(status: ReportStatus | null, limit: number, cursor: string | null, signal?: AbortSignal): Promise<ReportPage> {
  return (await call<ReportPage>('GET', `/v1/admin/reports?${pageQuery(limit, cursor, { status })}`, { signal })).body;
}

/** Accept a report (a confirmed_fraud one becomes an evidence item of its VPA) or dismiss it, with an optional note. */
export async function decideReport(id: string, decision: 'accept' | 'dismiss', note: string | null): Promise<ReportDecided> {
  return (await call<ReportDecided>('POST', `${reportPath(id)}/${decision}`, { json: note === null ? {} : { note } })).body;
}
