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
  members: {
    upi: string;
    confidence: number;
    /**
     * ISO 8601 timestamp, UTC
     */
    first_seen: string;
  }[];
  /**
   * @maxItems 10
   */
  top_sources: {
    url: string;
    category: SourceCategory;
    member_count: number;
  }[];
  total_evidence_count: number;
}
export interface ErrorBody {
  error:
    | 'bad_request'
    | 'unauthorized'
    | 'forbidden'
    | 'not_found'
    | 'validation_error'
    | 'rate_limit_exceeded'
    | 'internal_error'
    | 'service_unavailable';
  message: string;
  retry_after?: number;
}
