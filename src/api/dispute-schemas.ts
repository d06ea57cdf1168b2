import { Type, type TSchema } from '@sinclair/typebox';
import { Nullable, RiskCategorySchema, SourceCategorySchema, Timestamp, Vpa, VpaVerdictSchema, strict } from './schemas.js';

/**
 * JSON Schemas of disputes and reports (docs/api.md, Disputes and reports):
 * what callers send and read, and the analysts' view under /v1/admin/. The
 * OpenAPI document and the contract tests use them; the rules they state
 * are enforced by src/corrections/.
 */
export const DISPUTE_REASONS = ['not_fraud', 'owner_request', 'other'] as const;
export type DisputeReason = (typeof DISPUTE_REASONS)[number];
export const DISPUTE_STATUSES = ['OPEN', 'UPHELD', 'REJECTED'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];
export const REPORT_OUTCOMES = ['confirmed_fraud', 'false_positive'] as const;
export type ReportOutcome = (typeof REPORT_OUTCOMES)[number];
export const REPORT_STATUSES = ['RECEIVED', 'ACCEPTED', 'DISMISSED'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

/** Longest `details` of a dispute, and `note` of a decision, in characters. */
export const MAX_DETAILS_LENGTH = 2000;
/** Longest `reference` (the caller's own id of the case or payment), in characters. */
export const MAX_REFERENCE_LENGTH = 200;
/** Evidence ids an upheld dispute may retract at once. */
export const MAX_RETRACT_IDS = 1000;
export const DISPUTE_ID_PATTERN = '^dsp_[0-9a-f]{28}$';
export const REPORT_ID_PATTERN = '^rep_[0-9a-f]{28}$';

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));
const Reference = Type.String({ minLength: 1, maxLength: MAX_REFERENCE_LENGTH, description: "the caller's own id of the case or payment" });
const Note = Type.String({ minLength: 1, maxLength: MAX_DETAILS_LENGTH });
const DisputeId = Type.String({ pattern: DISPUTE_ID_PATTERN });
const ReportId = Type.String({ pattern: REPORT_ID_PATTERN });
const KeyId = Type.String({ description: 'the id of a key' });

export const DisputeCreateRequestSchema = strict(
  {
    upi: Vpa,
    reason: literals(DISPUTE_REASONS),
    details: Type.String({ maxLength: MAX_DETAILS_LENGTH, description: 'what the analyst should know' }),
    reference: Type.Optional(Nullable(Reference)),
  },
  'DisputeCreateRequest',
);

const disputeFields = {
  id: DisputeId,
  upi: Type.String({ description: 'the VPA disputed, lower-cased' }),
  status: literals(DISPUTE_STATUSES),
  reason: literals(DISPUTE_REASONS),
  details: Type.String(),
  reference: Nullable(Type.String()),
  created_at: Timestamp,
  resolved_at: Nullable(Timestamp),
  resolution_note: Nullable(Type.String()),
};
export const DisputeSchema = strict(disputeFields, 'Dispute', "A dispute of a FLAGGED verdict, as the key that opened it sees it");
export const DisputeListSchema = strict(
  { disputes: Type.Array(DisputeSchema), next_cursor: Nullable(Type.String()) },
  'DisputeList',
  'Newest first; pass next_cursor as cursor for the next page',
);
export const DisputeConflictSchema = strict(
  { error: Type.Literal('conflict'), message: Type.String(), dispute_id: DisputeId },
  'DisputeConflict',
  'The key has an open dispute of the VPA already: dispute_id names it',
);

export const AdminDisputeSchema = strict(
  {
    ...disputeFields,
    owner: KeyId,
    resolved_by: Nullable(KeyId),
    clearance_id: Nullable(Type.String({ description: 'the clearance an upheld dispute made (or found in force)' })),
    retracted: Nullable(Type.Array(Type.String(), { description: 'the evidence ids an upheld dispute retracted instead of clearing the VPA' })),
  },
  'AdminDispute',
  'A dispute as analysts see it: whose it is, and what its resolution did',
);
export const AdminDisputeListSchema = strict(
  { disputes: Type.Array(AdminDisputeSchema), next_cursor: Nullable(Type.String()) },
  'AdminDisputeList',
  "Every key's disputes, newest first; pass next_cursor as cursor for the next page",
);
export const EvidenceItemSchema = strict(
  {
    evidence_id: Type.String(),
    url: Type.String(),
    source_category: SourceCategorySchema,
    risk_category: RiskCategorySchema,
    captured_at: Timestamp,
    screenshot: Type.Boolean(),
    counts: Type.Boolean({ description: 'false when a clearance or expiry keeps it from counting now' }),
  },
  'EvidenceItem',
  'A stored evidence item of the VPA (retracted ones are not listed)',
);
export const DisputeReviewSchema = strict(
  {
    dispute: AdminDisputeSchema,
    verdict: VpaVerdictSchema,
    evidence: Type.Array(EvidenceItemSchema, { description: "the VPA's stored evidence items, retracted ones left out, with whether each counts now" }),
    data_version: Type.String({ description: 'the intelligence the verdict is from (X-Data-Version)' }),
  },
  'DisputeReview',
  "A dispute with its VPA's verdict now and the evidence behind it",
);
export const DisputeResolveRequestSchema = strict(
  {
    outcome: Type.Union([Type.Literal('upheld'), Type.Literal('rejected')]),
    note: Note,
    retract: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        maxItems: MAX_RETRACT_IDS,
        description: "upheld only: retract these evidence items of the VPA instead of clearing it",
      }),
    ),
  },
  'DisputeResolveRequest',
);
export const DisputeResolvedSchema = strict(
  { dispute: AdminDisputeSchema, data_version: Nullable(Type.String({ description: 'the data version that serves the correction; null when rejected' })) },
  'DisputeResolved',
);

export const ReportCreateRequestSchema = strict(
  {
    upi: Vpa,
    outcome: literals(REPORT_OUTCOMES),
    risk_category: Type.Optional(Nullable(RiskCategorySchema)),
    occurred_at: Type.Optional(Nullable(Timestamp)),
    reference: Type.Optional(Nullable(Reference)),
  },
  'ReportCreateRequest',
);
export const ReportReceiptSchema = strict({ id: ReportId, status: Type.Literal('RECEIVED') }, 'ReportReceipt');
export const ReportSchema = strict(
  {
    id: ReportId,
    owner: KeyId,
    upi: Type.String({ description: 'lower-cased' }),
    outcome: literals(REPORT_OUTCOMES),
    risk_category: Nullable(RiskCategorySchema),
    occurred_at: Nullable(Timestamp),
    reference: Nullable(Type.String()),
    created_at: Timestamp,
    status: literals(REPORT_STATUSES),
    dispute_id: Nullable(Type.String({ description: 'the dispute a false_positive report of a FLAGGED VPA opened or joined' })),
    decided_at: Nullable(Timestamp),
    decided_by: Nullable(KeyId),
    decision_note: Nullable(Type.String()),
    evidence_id: Nullable(Type.String({ description: 'the evidence item an accepted report became' })),
  },
  'Report',
  'A report as analysts see it',
);
export const ReportListSchema = strict(
  { reports: Type.Array(ReportSchema), next_cursor: Nullable(Type.String()) },
  'ReportList',
  'Newest first; pass next_cursor as cursor for the next page',
);
export const ReportDecisionRequestSchema = strict({ note: Type.Optional(Note) }, 'ReportDecisionRequest');
export const ReportDecidedSchema = strict(
  { report: ReportSchema, data_version: Nullable(Type.String({ description: 'the data version that serves the evidence; null when dismissed' })) },
  'ReportDecided',
);

export const DISPUTE_SCHEMAS: Readonly<Record<string, TSchema>> = Object.fromEntries(
  [
    DisputeCreateRequestSchema,
    DisputeSchema,
    DisputeListSchema,
    DisputeConflictSchema,
    AdminDisputeSchema,
    AdminDisputeListSchema,
    EvidenceItemSchema,
    DisputeReviewSchema,
    DisputeResolveRequestSchema,
    DisputeResolvedSchema,
    ReportCreateRequestSchema,
    ReportReceiptSchema,
    ReportSchema,
    ReportListSchema,
    ReportDecisionRequestSchema,
    ReportDecidedSchema,
  ].map((s) => [s.$id!, s]),
);
