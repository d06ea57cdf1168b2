/**
 * The v1 wire shapes, from the OpenAPI document's component schemas
 * (src/api/openapi.ts).
 * Written by scripts/generate-client-sources.ts; do not edit:
 * `npm run generate:client` rewrites this file.
 */

/**
 * mule, gambling, phishing, scam or nbfc_impersonation
 */
export type RiskCategory = 'mule' | 'gambling' | 'phishing' | 'scam' | 'nbfc_impersonation';
export type SourceCategory = 'gambling' | 'phishing' | 'scam' | 'telegram';
export type BatchRequest =
  | {
      /**
       * 1 to 100 VPAs (reference form)
       *
       * @minItems 1
       * @maxItems 100
       *
       * Items: handle@provider
       */
      upis: string[];
      vpas?: never;
      /**
       * Answer exactly as the service answered at this instant (RFC 3339), within the history kept
       */
      as_of?: string;
    }
  | {
      /**
       * 1 to 100 VPAs (alias from the secondary description; same meaning as upis)
       *
       * @minItems 1
       * @maxItems 100
       *
       * Items: handle@provider
       */
      vpas: string[];
      upis?: never;
      /**
       * Answer exactly as the service answered at this instant (RFC 3339), within the history kept
       */
      as_of?: string;
    };

/**
 * Every wire type, by its OpenAPI component name.
 */
export interface WireTypes {
  VpaVerdict: VpaVerdict;
  Source: Source;
  BatchItem: BatchItem;
  BatchRequest: BatchRequest;
  BatchResponse: BatchResponse;
  Cluster: Cluster;
  Error: ErrorBody;
  RiskCategory: RiskCategory;
  SourceCategory: SourceCategory;
  WatchlistCreateRequest: WatchlistCreateRequest;
  Watchlist: Watchlist;
  NewWatchlist: NewWatchlist;
  WatchlistList: WatchlistList;
  WatchlistSecret: WatchlistSecret;
  WatchlistDeleted: WatchlistDeleted;
  WatchVpasRequest: WatchVpasRequest;
  WatchVpasAdded: WatchVpasAdded;
  WatchVpasRemoved: WatchVpasRemoved;
  WatchedVpasPage: WatchedVpasPage;
  WatchEvent: WatchEvent;
  WatchEventWithDelivery: WatchEventWithDelivery;
  WatchEventPage: WatchEventPage;
  Redelivered: Redelivered;
  DisputeCreateRequest: DisputeCreateRequest;
  Dispute: Dispute;
  DisputeList: DisputeList;
  DisputeConflict: DisputeConflict;
  ReportCreateRequest: ReportCreateRequest;
  ReportReceipt: ReportReceipt;
  DataVersion: DataVersion;
  AnswerHistory: AnswerHistory;
  AnswerChange: AnswerChange;
  ClusterMember: ClusterMember;
  ClusterSource: ClusterSource;
  WatchFilters: WatchFilters;
  WatchDelivery: WatchDelivery;
  WatchDeliveryAttempt: WatchDeliveryAttempt;
}
export interface VpaVerdict {
  /**
   * The queried VPA, echoed
   */
  upi: string;
  status: 'FLAGGED' | 'CLEARED';
  confidence: number | null;
  risk_category: RiskCategory | null;
  cluster_id: string | null;
  cluster_size: number;
  first_seen: string | null;
  last_seen: string | null;
  sources: Source[];
  evidence_count: number;
}
export interface Source {
  url: string;
  category: SourceCategory;
  /**
   * ISO 8601 timestamp, UTC
   */
  captured_at: string;
  screenshot_available: boolean;
}
export interface BatchItem {
  upi: string;
  status: 'FLAGGED' | 'CLEARED';
  confidence: number | null;
  risk_category: RiskCategory | null;
  cluster_id: string | null;
  cluster_size: number;
  evidence_count: number;
}
export interface BatchResponse {
  results: BatchItem[];
  total: number;
  flagged_count: number;
  cleared_count: number;
}
export interface Cluster {
  cluster_id: string;
  size: number;
  /**
   * ISO 8601 timestamp, UTC
   */
  created_at: string;
  /**
   * ISO 8601 timestamp, UTC
   */
  last_updated: string;
  risk_category: RiskCategory;
  confidence: number;
  members: ClusterMember[];
  /**
   * @maxItems 10
   */
  top_sources: ClusterSource[];
  total_evidence_count: number;
}
export interface ClusterMember {
  upi: string;
  confidence: number;
  /**
   * ISO 8601 timestamp, UTC
   */
  first_seen: string;
}
export interface ClusterSource {
  url: string;
  category: SourceCategory;
  member_count: number;
}
export interface ErrorBody {
  error:
    | 'bad_request'
    | 'unauthorized'
    | 'forbidden'
    | 'not_found'
    | 'conflict'
    | 'validation_error'
    | 'rate_limit_exceeded'
    | 'internal_error'
    | 'service_unavailable';
  message: string;
  retry_after?: number;
}
export interface WatchlistCreateRequest {
  name: string;
  /**
   * https; see Safe targets
   */
  webhook_url: string;
  filters?: WatchFilters;
}
/**
 * Which changes make events, judged by the verdict after the change
 */
export interface WatchFilters {
  /**
   * @minItems 1
   */
  statuses?: ('FLAGGED' | 'CLEARED')[];
  /**
   * @minItems 1
   */
  risk_categories?: RiskCategory[];
}
export interface Watchlist {
  id: string;
  name: string;
  webhook_url: string;
  filters: WatchFilters;
  /**
   * ISO 8601 timestamp, UTC
   */
  created_at: string;
  vpa_count: number;
}
export interface NewWatchlist {
  id: string;
  name: string;
  webhook_url: string;
  filters: WatchFilters;
  /**
   * ISO 8601 timestamp, UTC
   */
  created_at: string;
  vpa_count: number;
  /**
   * signs every delivery; shown only here and on rotation
   */
  secret: string;
}
export interface WatchlistList {
  watchlists: Watchlist[];
}
export interface WatchlistSecret {
  /**
   * signs every delivery from now on; shown only here
   */
  secret: string;
  /**
   * until when the previous secret also signs each delivery (a second v1), or null when it signs nothing from now on
   */
  previous_secret_expires_at: string | null;
}
export interface WatchlistDeleted {
  deleted: true;
}
export interface WatchVpasRequest {
  /**
   * @minItems 1
   * @maxItems 1000
   */
  upis: string[];
}
export interface WatchVpasAdded {
  added: number;
  total: number;
}
export interface WatchVpasRemoved {
  removed: number;
  total: number;
}
/**
 * Watched VPAs in VPA order, each with its verdict now; pass next_cursor as cursor for the next page
 */
export interface WatchedVpasPage {
  vpas: BatchItem[];
  next_cursor: string | null;
  data_version: string;
}
/**
 * The body of a webhook delivery
 */
export interface WatchEvent {
  /**
   * stable: a redelivery carries the same id
   */
  id: string;
  type: 'vpa.changed';
  watchlist_id: string;
  upi: string;
  before: BatchItem;
  after: BatchItem;
  /**
   * the intelligence that made the change (X-Data-Version)
   */
  data_version: string;
  /**
   * ISO 8601 timestamp, UTC
   */
  occurred_at: string;
}
export interface WatchEventWithDelivery {
  /**
   * stable: a redelivery carries the same id
   */
  id: string;
  type: 'vpa.changed';
  watchlist_id: string;
  upi: string;
  before: BatchItem;
  after: BatchItem;
  /**
   * the intelligence that made the change (X-Data-Version)
   */
  data_version: string;
  /**
   * ISO 8601 timestamp, UTC
   */
  occurred_at: string;
  delivery: WatchDelivery;
}
export interface WatchDelivery {
  state: 'pending' | 'delivered' | 'failed';
  /**
   * @maxItems 20
   */
  attempts: WatchDeliveryAttempt[];
  next_attempt_at: string | null;
}
export interface WatchDeliveryAttempt {
  /**
   * ISO 8601 timestamp, UTC
   */
  at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
}
export interface WatchEventPage {
  events: WatchEventWithDelivery[];
  next_cursor: string | null;
}
export interface Redelivered {
  event: WatchEventWithDelivery;
}
export interface DisputeCreateRequest {
  /**
   * handle@provider
   */
  upi: string;
  reason: 'not_fraud' | 'owner_request' | 'other';
  /**
   * what the analyst should know
   */
  details: string;
  reference?: string | null;
}
/**
 * A dispute of a FLAGGED verdict, as the key that opened it sees it
 */
export interface Dispute {
  id: string;
  /**
   * the VPA disputed, lower-cased
   */
  upi: string;
  status: 'OPEN' | 'UPHELD' | 'REJECTED';
  reason: 'not_fraud' | 'owner_request' | 'other';
  details: string;
  reference: string | null;
  /**
   * ISO 8601 timestamp, UTC
   */
  created_at: string;
  resolved_at: string | null;
  resolution_note: string | null;
}
/**
 * Newest first; pass next_cursor as cursor for the next page
 */
export interface DisputeList {
  disputes: Dispute[];
  next_cursor: string | null;
}
/**
 * The key has an open dispute of the VPA already: dispute_id names it
 */
export interface DisputeConflict {
  error: 'conflict';
  message: string;
  dispute_id: string;
}
export interface ReportCreateRequest {
  /**
   * handle@provider
   */
  upi: string;
  outcome: 'confirmed_fraud' | 'false_positive';
  risk_category?: RiskCategory | null;
  occurred_at?: string | null;
  reference?: string | null;
}
export interface ReportReceipt {
  id: string;
  status: 'RECEIVED';
}
/**
 * When a data version was served, and what it held
 */
export interface DataVersion {
  /**
   * The data version, as X-Data-Version carried it
   */
  version: string;
  /**
   * ISO 8601 timestamp, UTC
   */
  from: string;
  until: string | null;
  /**
   * The snapshot served
   */
  snapshot: string;
  /**
   * The live delta's position over the snapshot; 0 for the snapshot alone
   */
  position: number;
}
/**
 * How a VPA's answer changed
 */
export interface AnswerHistory {
  /**
   * The queried VPA, echoed
   */
  upi: string;
  /**
   * Oldest first, within the history kept (serve --history-days)
   */
  changes: AnswerChange[];
}
/**
 * A change of a VPA's status, risk category, confidence band or cluster
 */
export interface AnswerChange {
  /**
   * When the state that made the change began to be served
   */
  at: string;
  /**
   * That state, as X-Data-Version named it (GET /v1/data-versions/{version})
   */
  data_version: string;
  status: 'FLAGGED' | 'CLEARED';
  risk_category: RiskCategory | null;
  confidence: number | null;
  cluster_id: string | null;
  /**
   * Why the answer changed
   */
  cause: 'evidence' | 'retraction' | 'clearance' | 'clearance_ended' | 'expiry' | 'compaction';
}
