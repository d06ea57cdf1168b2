/**
 * The JSON the console reads: the spec's verdicts, batch and cluster answers
 * (docs/api.md) and the admin API's keys, audit records, stats and cluster
 * graphs (docs/console.md). Fields the console does not read are left out;
 * unknown fields are tolerated.
 */
import type { Cluster } from '../../../src/engine/verdict.js';
import type { KeyScope } from '../../../src/access/key-record.js';

export interface Session {
  readonly key: { readonly id: string; readonly name: string; readonly scopes: readonly KeyScope[] };
  readonly csrf_token: string;
  readonly expires_at: string;
}

export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  readonly plan: string;
  readonly scopes: readonly KeyScope[];
  readonly created_at: string;
  readonly rotated_at: string | null;
  readonly revoked_at: string | null;
  readonly last_used_at: string | null;
  readonly requests_24h: number;
  readonly rate_limited_24h: number;
}

export interface KeyList {
  readonly keys: readonly KeyRecord[];
  readonly plans: readonly string[];
}

/** POST /v1/admin/keys and .../rotate: the key itself, shown only in this answer. */
export interface IssuedKey {
  readonly key: string;
  readonly record: KeyRecord;
}

export interface AuditRecord {
  readonly id: string;
  readonly at: string;
  readonly actor: { readonly key_id: string | null; readonly name: string };
  readonly action: string;
  readonly target: string | null;
  readonly details: unknown;
}

/** The spec's answers, as the service writes them. */
export type { BatchItem, BatchResponse as BatchAnswer, Cluster, Source, VpaVerdict as Verdict } from '../../../src/engine/verdict.js';

export interface ClusterSummary {
  readonly cluster_id: string;
  readonly size: number;
  readonly risk_category: string;
  readonly confidence: number;
}

export interface GraphMember {
  readonly upi: string;
  readonly confidence: number;
  readonly risk_category: string;
  readonly first_seen: string;
  readonly last_seen: string;
  readonly evidence_count: number;
}

export interface ClusterGraph {
  readonly cluster: Cluster;
  readonly members: readonly GraphMember[];
  readonly urls: readonly { readonly url: string; readonly category: string }[];
  readonly sightings: readonly { readonly upi: string; readonly url: string; readonly captured_at: string }[];
}

export interface StatsSample {
  readonly at: string;
  readonly requests_per_second: number;
  readonly rate_limited_per_second: number;
  readonly delta_vpas: number;
  readonly resident_bytes: number;
}

export interface Build {
  readonly finished_at: string;
  readonly duration_ms: number | null;
  readonly outcome: string;
  readonly snapshot: string | null;
  readonly message: string | null;
}

export interface Stats {
  readonly mode: string;
  readonly data_version: string;
  readonly snapshot: { readonly id: string; readonly as_of: string; readonly vpas: number; readonly clusters: number };
  readonly delta: { readonly vpas: number; readonly evidence_items: number; readonly bytes: number; readonly age_seconds: number | null };
  readonly seconds_since_compaction: number | null;
  readonly builds: readonly Build[];
  readonly freshness: {
    readonly last_ingest_at: string | null;
    readonly last_ingest_items: number | null;
    readonly last_ingest_served_ms: number | null;
  };
  readonly history: { readonly interval_seconds: number; readonly samples: readonly StatsSample[] };
}

export interface EvidenceResult {
  readonly items: number;
  readonly added: number;
  readonly duplicates: number;
  readonly data_version: string;
}

export interface EvidenceLineError {
  readonly line: number;
  readonly reason: string;
}
