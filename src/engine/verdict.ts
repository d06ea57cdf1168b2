import type { RiskCategory, SourceCategory } from '../vpa/categories.js';
import { decimalText } from '../common/decimal.js';

/**
 * Answer shapes of the v1 API, field for field as the spec names them
 * (snake_case on purpose: these objects are serialised as they are).
 */
export type VerdictStatus = 'FLAGGED' | 'CLEARED';

export interface Source {
  readonly url: string;
  readonly category: SourceCategory;
  readonly captured_at: string;
  readonly screenshot_available: boolean;
}

export interface VpaVerdict {
  readonly upi: string;
  readonly status: VerdictStatus;
  readonly confidence: number | null;
  readonly risk_category: RiskCategory | null;
  readonly cluster_id: string | null;
  readonly cluster_size: number;
  readonly first_seen: string | null;
  readonly last_seen: string | null;
  readonly sources: readonly Source[];
  readonly evidence_count: number;
}

export interface BatchItem {
  readonly upi: string;
  readonly status: VerdictStatus;
  readonly confidence: number | null;
  readonly risk_category: RiskCategory | null;
  readonly cluster_id: string | null;
  readonly cluster_size: number;
  readonly evidence_count: number;
}

export interface BatchResponse {
  readonly results: readonly BatchItem[];
  readonly total: number;
  readonly flagged_count: number;
  readonly cleared_count: number;
}

export interface ClusterMember {
  readonly upi: string;
  readonly confidence: number;
  readonly first_seen: string;
}

export interface ClusterSource {
  readonly url: string;
  readonly category: SourceCategory;
  readonly member_count: number;
}

export interface Cluster {
  readonly cluster_id: string;
  readonly size: number;
  readonly created_at: string;
  readonly last_updated: string;
  readonly risk_category: RiskCategory;
  readonly confidence: number;
  readonly members: readonly ClusterMember[];
  readonly top_sources: readonly ClusterSource[];
  readonly total_evidence_count: number;
}

/** Shared by every CLEARED verdict: a cleared answer allocates nothing but its own envelope. */
export const NO_SOURCES: readonly Source[] = Object.freeze([]);

export const CLUSTER_ID_PREFIX = 'MC-';
/** At most this many entries in a cluster's `top_sources`. */
export const TOP_SOURCES_LIMIT = 10;

/** Written with decimalText: clusters are many, and each answer naming one would otherwise add its number to V8's number-string cache. */
export function formatClusterId(number: number): string {
  return CLUSTER_ID_PREFIX + decimalText(number);
}

/**
 * The cluster number in a canonical `MC-<number>` id, or -1 when the text is
 * not of that form (leading zeros are not canonical: `MC-007` names nothing).
 */
export function parseClusterId(text: string): number {
  if (!/^MC-[1-9][0-9]{0,9}$/.test(text)) return -1;
  const n = Number(text.slice(CLUSTER_ID_PREFIX.length));
  return n <= 0xffffffff ? n : -1;
}

/** True when `text` has the shape of a cluster id (400 otherwise), even if no such cluster exists. */
export function isClusterIdShape(text: string): boolean {
  return /^MC-[0-9]{1,20}$/.test(text);
}

/** Code-unit order: identical on every machine, unlike localeCompare. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The batch item of a VPA no evidence names. */
export function clearedBatchItem(upi: string): BatchItem {
  return { upi, status: 'CLEARED', confidence: null, risk_category: null, cluster_id: null, cluster_size: 0, evidence_count: 0 };
}
