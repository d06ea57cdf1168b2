/**
 * Corrections: what can take a VPA, or one of its sources, back. Evidence
 * only adds; a retraction of evidence items and a clearance of a VPA (with
 * expiry, SnapshotServiceOptions.evidenceMaxAgeMs) are the only ways an
 * answer goes backwards. This module holds the rule and the types shared by
 * the engine that applies corrections and the desk that records them.
 */

export { NO_CORRECTIONS, countsUnderClearance, type ActiveClearance, type CorrectionState } from '../evidence/corrections.js';
import type { CorrectionState } from '../evidence/corrections.js';

/** One stored evidence item of a VPA, as analysts see it (GET /v1/admin/disputes/{id}). */
export interface EvidenceItemView {
  readonly evidence_id: string;
  readonly url: string;
  readonly source_category: string;
  readonly risk_category: string;
  /** RFC 3339. */
  readonly captured_at: string;
  readonly screenshot: boolean;
  /** False when a clearance or expiry keeps it from counting now (retracted items are not listed). */
  readonly counts: boolean;
}

/**
 * What serves corrections: the engine under a data directory
 * (SnapshotService) or the fleet's follower. The desk that records
 * corrections (durably, before it acknowledges them) calls it.
 */
export interface CorrectionEngine {
  /** Which of `ids` name stored evidence, each with the VPA it names (canonical). */
  locate(ids: readonly string[]): Promise<ReadonlyMap<string, string>>;
  /** The urls of the VPA's sources as served now: what a clearance made now suppresses (canonical VPA). */
  sourceUrls(upi: string): readonly string[];
  /** The VPA's stored evidence items, retracted ones left out, oldest capture first. */
  evidenceOf(upi: string): Promise<readonly EvidenceItemView[]>;
  /**
   * Serve `state` from now on: the VPAs `upis` are answered from the
   * evidence that counts under it on every serving thread when this
   * resolves, with the data version that serves it.
   */
  apply(state: CorrectionState, upis: readonly string[]): Promise<string>;
  /** What is served now: its data version. */
  readonly view: { readonly version: string };
}

/** A clearance, in force or ended, as the API shows it (POST/GET /v1/admin/clearances). */
export interface ClearanceRecord {
  readonly id: string;
  /** Canonical VPA. */
  readonly upi: string;
  readonly reason: string;
  readonly reference: string | null;
  /** RFC 3339. */
  readonly created_at: string;
  /** Key id of the admin key, or `cli`. */
  readonly created_by: string;
  /** RFC 3339; null while in force. */
  readonly ended_at: string | null;
  readonly ended_by: string | null;
}

/** What POST /v1/admin/retractions answers. */
export interface RetractionOutcome {
  readonly retracted: number;
  readonly unknown: readonly string[];
  readonly already_retracted: number;
  readonly data_version: string;
}

/**
 * Records corrections durably before it acknowledges them, audits them, and
 * has the engine serve them. Disputes and accepted reports go through it.
 * `by` is the key id of the caller, or `cli`.
 */
export interface CorrectionDesk {
  retract(ids: readonly string[], reason: string, by: string): Promise<RetractionOutcome>;
  /** Rejects with ClearanceConflictError (common/errors.ts) when the VPA has a clearance in force. */
  clear(input: { readonly upi: string; readonly reason: string; readonly reference: string | null }, by: string): Promise<ClearanceRecord & { readonly data_version: string }>;
  /** Ends a clearance in force; null when no clearance has the id. Ending an ended one returns it unchanged. */
  endClearance(id: string, by: string): Promise<(ClearanceRecord & { readonly data_version: string }) | null>;
  clearance(id: string): Promise<ClearanceRecord | null>;
  /**
   * The clearance in force for a VPA (any letter case), if any, once this
   * server serves it, with the data version then served: an answer naming a
   * clearance another server made names a version that holds it.
   */
  activeClearance(upi: string): Promise<(ClearanceRecord & { readonly data_version: string }) | null>;
  evidenceOf(upi: string): Promise<readonly EvidenceItemView[]>;
  /** Which of `ids` name stored evidence of the VPA (any letter case), retracted or not: a retraction retried finds its items still the VPA's. */
  evidenceIdsOf(upi: string, ids: readonly string[]): Promise<ReadonlySet<string>>;
}
