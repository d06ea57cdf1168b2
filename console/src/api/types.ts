/**
 * The JSON the console reads, derived from the schemas the server's answers
 * are checked against (src/api/*-schemas.ts, the OpenAPI document's), so the
 * two cannot drift apart: the spec's verdicts, batch and cluster answers
 * (docs/api.md), the admin API's keys, audit records, stats and cluster
 * graphs (docs/console.md), watchlists with their events
 * (docs/watchlists.md), and corrections, disputes and reports
 * (docs/api.md). Types only: nothing of the server is bundled.
 */
import type { Static } from '@sinclair/typebox';
import type {
  AdminKeySchema,
  AuditRecordSchema,
  ClearanceChangeSchema,
  ClearanceListSchema,
  ClusterGraphSchema,
  ClusterListSchema,
  CompactionStartedSchema,
  KeyListSchema,
  NewKeySchema,
  RetractionOutcomeSchema,
  SessionSchema,
  StatsSchema,
} from '../../../src/api/admin-schemas.js';
import type {
  AdminDisputeListSchema,
  AdminDisputeSchema,
  DisputeResolvedSchema,
  DisputeReviewSchema,
  EvidenceItemSchema,
  ReportDecidedSchema,
  ReportListSchema,
  ReportSchema,
} from '../../../src/api/dispute-schemas.js';
import type { EvidenceReceiptSchema, EvidenceRefusalSchema } from '../../../src/api/schemas.js';
import type { AnswerHistorySchema, DataVersionSchema } from '../../../src/api/history-paths.js';
import type { AdminWatchlistListSchema, AdminWatchlistSchema, WatchEventPageSchema, WatchEventWithDeliverySchema, WatchedVpasPageSchema } from '../../../src/api/watch-schemas.js';

/** The spec's answers, as the service writes them. */
export type { DisputeStatus, ReportStatus } from '../../../src/api/dispute-schemas.js';
export type { BatchItem, BatchResponse as BatchAnswer, Cluster, Source, VpaVerdict as Verdict } from '../../../src/engine/verdict.js';

export type Session = Static<typeof SessionSchema>;
export type KeyRecord = Static<typeof AdminKeySchema>;
export type KeyList = Static<typeof KeyListSchema>;
/** POST /v1/admin/keys and .../rotate: the key itself, shown only in this answer. */
export type IssuedKey = Static<typeof NewKeySchema>;
export type AuditRecord = Static<typeof AuditRecordSchema>;

export type ClusterSummary = Static<typeof ClusterListSchema>['clusters'][number];
export type ClusterGraph = Static<typeof ClusterGraphSchema>;
export type GraphMember = ClusterGraph['members'][number];

export type Stats = Static<typeof StatsSchema>;
/** POST /v1/admin/compaction. */
export type CompactionStarted = Static<typeof CompactionStartedSchema>;
export type StatsSample = Stats['history']['samples'][number];
export type Build = Stats['builds'][number];

export type EvidenceResult = Static<typeof EvidenceReceiptSchema>;
export type EvidenceLineError = Static<typeof EvidenceRefusalSchema>['errors'][number];

/** A watchlist in the admin view, naming its key (`owner`). */
export type AdminWatchlist = Static<typeof AdminWatchlistSchema>;
/** GET /v1/admin/watchlists: every key's watchlists, a page at a time. */
export type AdminWatchlistPage = Static<typeof AdminWatchlistListSchema>;

/** A page of a cursor-paged list; `next_cursor` is null on the last page. */
export interface CursorPage {
  readonly next_cursor: string | null;
}

export type WatchedVpasPage = Static<typeof WatchedVpasPageSchema>;
/** An event (docs/watchlists.md) with its delivery: the VPA's verdict before and after, and the last 20 attempts, oldest first. */
export type WatchEvent = Static<typeof WatchEventWithDeliverySchema>;
export type DeliveryAttempt = WatchEvent['delivery']['attempts'][number];
export type DeliveryState = WatchEvent['delivery']['state'];
export type WatchEventsPage = Static<typeof WatchEventPageSchema>;

/** POST /v1/admin/retractions. */
export type RetractionOutcome = Static<typeof RetractionOutcomeSchema>;
/** GET /v1/admin/clearances: in the order made, in force and ended. */
export type ClearancePage = Static<typeof ClearanceListSchema>;
export type Clearance = ClearancePage['clearances'][number];
/** DELETE /v1/admin/clearances/{id}: the clearance as it is now, with the data version that serves it. */
export type ClearanceChange = Static<typeof ClearanceChangeSchema>;

/** A dispute as analysts see it: whose it is and what its resolution did. */
export type AdminDispute = Static<typeof AdminDisputeSchema>;
export type AdminDisputePage = Static<typeof AdminDisputeListSchema>;
/** GET /v1/admin/disputes/{id}: the dispute, its VPA's verdict now and the evidence behind it. */
export type DisputeReview = Static<typeof DisputeReviewSchema>;
export type EvidenceItem = Static<typeof EvidenceItemSchema>;
export type DisputeResolved = Static<typeof DisputeResolvedSchema>;
export type Report = Static<typeof ReportSchema>;
export type ReportPage = Static<typeof ReportListSchema>;
export type ReportDecided = Static<typeof ReportDecidedSchema>;

/** When a data version was served (GET /v1/data-versions/{version}). */
export type DataVersion = Static<typeof DataVersionSchema>;
/** How a VPA's answer changed (GET /v1/verify/upi/history). */
export type AnswerHistory = Static<typeof AnswerHistorySchema>;
