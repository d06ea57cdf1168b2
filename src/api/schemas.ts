import { FormatRegistry, Type, type Static, type TSchema } from '@sinclair/typebox';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../vpa/categories.js';
import { MAX_VPA_LENGTH } from '../vpa/vpa.js';
import { parseIsoWithZone } from '../common/time.js';

/**
 * JSON Schemas of the v1 wire format (TypeBox), the one source for request
 * validation, response contract tests and the served OpenAPI document.
 * Field names and rules follow the spec exactly.
 */

/** The VPA grammar as a JSON Schema pattern (the validator in src/vpa is the fast path; tests keep them equal). */
export const VPA_PATTERN = '^[A-Za-z0-9._-]{1,256}@[A-Za-z][A-Za-z0-9]{1,63}$';
export const MAX_BATCH_ITEMS = 100;
/** Largest accepted batch body: 100 VPAs of the longest legal form with JSON overhead fit well inside. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Largest body of POST /v1/admin/evidence: about 40,000 evidence items; larger files go through `upi-risk ingest`. */
export const MAX_EVIDENCE_BODY_BYTES = 16 * 1024 * 1024;

// JSON Schema formats TypeBox checks only once registered: RFC 3339 timestamps and dates.
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;
if (!FormatRegistry.Has('date-time')) {
  FormatRegistry.Set('date-time', (value) => RFC3339.test(value) && !Number.isNaN(parseIsoWithZone(value)));
}
if (!FormatRegistry.Has('date')) {
  FormatRegistry.Set('date', (value) => /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(parseIsoWithZone(`${value}T00:00:00Z`)));
}

/** An RFC 3339 instant (a `date-time`), epoch ms; NaN for text that is not one. */
export function parseRfc3339(text: string): number {
  return RFC3339.test(text) ? parseIsoWithZone(text) : Number.NaN;
}

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 timestamp, UTC' });
/** A component of the document (`id`) with no field but those named. */
export const strict = <T extends Parameters<typeof Type.Object>[0]>(properties: T, id: string, description?: string) =>
  Type.Object(properties, { $id: id, additionalProperties: false, ...(description === undefined ? {} : { description }) });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const RiskCategorySchema = Type.Union(
  RISK_CATEGORIES.map((c) => Type.Literal(c)),
  { $id: 'RiskCategory', description: 'mule, gambling, phishing, scam or nbfc_impersonation' },
);
export const SourceCategorySchema = Type.Union(
  SOURCE_CATEGORIES.map((c) => Type.Literal(c)),
  { $id: 'SourceCategory' },
);
export const Vpa = Type.String({ pattern: VPA_PATTERN, maxLength: MAX_VPA_LENGTH, description: 'handle@provider' });
export const ClusterIdText = Type.String({ pattern: '^MC-[0-9]+$' });
export const Confidence = Type.Number({ minimum: 0, maximum: 1 });
export const Status = Type.Union([Type.Literal('FLAGGED'), Type.Literal('CLEARED')]);
export const Count = Type.Integer({ minimum: 0 });

export const SourceSchema = Type.Object(
  {
    url: Type.String(),
    category: SourceCategorySchema,
    captured_at: Timestamp,
    screenshot_available: Type.Boolean(),
  },
  { $id: 'Source' },
);

export const VpaVerdictSchema = Type.Object(
  {
    upi: Type.String({ description: 'The queried VPA, echoed' }),
    status: Status,
    confidence: Nullable(Confidence),
    risk_category: Nullable(RiskCategorySchema),
    cluster_id: Nullable(ClusterIdText),
    cluster_size: Count,
    first_seen: Nullable(Timestamp),
    last_seen: Nullable(Timestamp),
    sources: Type.Array(SourceSchema),
    evidence_count: Count,
  },
  { $id: 'VpaVerdict' },
);

export const BatchItemSchema = Type.Object(
  {
    upi: Type.String(),
    status: Status,
    confidence: Nullable(Confidence),
    risk_category: Nullable(RiskCategorySchema),
    cluster_id: Nullable(ClusterIdText),
    cluster_size: Count,
    evidence_count: Count,
  },
  { $id: 'BatchItem' },
);

export const BatchResponseSchema = Type.Object(
  {
    results: Type.Array(BatchItemSchema),
    total: Count,
    flagged_count: Count,
    cleared_count: Count,
  },
  { $id: 'BatchResponse' },
);

export const ClusterSchema = Type.Object(
  {
    cluster_id: ClusterIdText,
    size: Count,
    created_at: Timestamp,
    last_updated: Timestamp,
    risk_category: RiskCategorySchema,
    confidence: Confidence,
    members: Type.Array(Type.Object({ upi: Type.String(), confidence: Confidence, first_seen: Timestamp })),
    top_sources: Type.Array(Type.Object({ url: Type.String(), category: SourceCategorySchema, member_count: Count }), { maxItems: 10 }),
    total_evidence_count: Count,
  },
  { $id: 'Cluster' },
);

export const ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'validation_error',
  'rate_limit_exceeded',
  'internal_error',
  'service_unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const ErrorSchema = Type.Object(
  {
    error: Type.Union(ERROR_CODES.map((c) => Type.Literal(c))),
    message: Type.String(),
    retry_after: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { $id: 'Error' },
);

/** Batch request: the reference form names the array `upis`; `vpas` is accepted as an alias. */
const batchArray = (name: string) =>
  Type.Array(Vpa, { minItems: 1, maxItems: MAX_BATCH_ITEMS, description: `1 to ${MAX_BATCH_ITEMS} VPAs (${name})` });
/** `as_of` of a lookup: answer as the service answered at that instant (docs/api.md, "Answers as of a past instant"). */
export const AsOfText = Type.String({ format: 'date-time', description: 'Answer exactly as the service answered at this instant (RFC 3339), within the history kept' });

export const BatchRequestSchema = Type.Union(
  [
    // Each form forbids the other: a body naming both is refused, not silently half-read.
    Type.Object({ upis: batchArray('reference form'), vpas: Type.Optional(Type.Never()), as_of: Type.Optional(AsOfText) }),
    Type.Object({ vpas: batchArray('alias from the secondary description; same meaning as upis'), upis: Type.Optional(Type.Never()), as_of: Type.Optional(AsOfText) }),
  ],
  { $id: 'BatchRequest' },
);

// Planned operations: shapes published ahead of availability.
const Severity = Type.Union([Type.Literal('high'), Type.Literal('medium'), Type.Literal('low')]);

export const EntityExposureReportSchema = Type.Object(
  {
    entity: Type.String(),
    status: Type.Union([Type.Literal('EXPOSED'), Type.Literal('CLEAN')]),
    credential_leaks: Type.Array(
      Type.Object({
        source: Type.String(),
        data_types: Type.Array(Type.String({ examples: ['email', 'password', 'phone', 'otp_seed', 'upi_id'] })),
        severity: Severity,
        detected_at: Type.String({ format: 'date' }),
      }),
    ),
    attack_surface: Type.Array(Type.Object({ finding: Type.String(), detail: Type.String(), severity: Severity })),
    dark_web_mentions: Type.Array(Type.Object({ source: Type.String(), detail: Type.String(), age_hours: Count })),
    leak_count: Count,
    attack_surface_count: Count,
    dark_web_count: Count,
  },
  { $id: 'EntityExposureReport', description: 'Planned; the operation is not yet available.' },
);

export const AppAuditRequestSchema = Type.Object(
  { package_id: Type.String({ minLength: 1 }), platform: Type.Literal('android') },
  { $id: 'AppAuditRequest', description: 'Planned; the operation is not yet available.' },
);

// Not in the OpenAPI document: no operation answers it until the status operation that polls an audit is defined.
export const AppAuditReportSchema = Type.Object(
  {
    package_id: Type.String(),
    platform: Type.Literal('android'),
    status: Type.Union([Type.Literal('FLAGGED'), Type.Literal('CLEARED'), Type.Literal('PENDING'), Type.Literal('ERROR')]),
    risk_score: Confidence,
    findings: Type.Array(
      Type.Object({
        type: Type.Union(
          ['deposit_screen_detected', 'extracted_upis', 'permission_abuse', 'fraud_module_detected', 'hidden_payment_handler'].map((t) =>
            Type.Literal(t),
          ),
        ),
        severity: Severity,
        detail: Type.String(),
        upis: Type.Optional(Type.Array(Type.String())),
      }),
    ),
    permissions: Type.Object({ declared: Type.Array(Type.String()), suspicious: Type.Array(Type.String()) }),
    screenshot_count: Count,
    audit_completed_at: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$' }),
  },
  { $id: 'AppAuditReport', description: 'Planned; the operation is not yet available.' },
);

export type VpaVerdictJson = Static<typeof VpaVerdictSchema>;
export type BatchResponseJson = Static<typeof BatchResponseSchema>;
export type ClusterJson = Static<typeof ClusterSchema>;
export type ErrorJson = Static<typeof ErrorSchema>;
export type EntityExposureReport = Static<typeof EntityExposureReportSchema>;
export type AppAuditReport = Static<typeof AppAuditReportSchema>;

/** The answer to POST /v1/admin/evidence: the evidence is stored (durably) and served. */
export const EvidenceReceiptSchema = Type.Object(
  {
    items: Type.Integer({ minimum: 1, description: 'valid evidence items in the body, all stored' }),
    added: Nullable(Type.Integer({ minimum: 0, description: 'items with an evidence id not seen before, served from now on; null when not known (a server with --full-rebuilds)' })),
    duplicates: Nullable(Type.Integer({ minimum: 0, description: 'items whose evidence id was seen before, which change nothing' })),
    data_version: Type.String({ description: 'the data version that serves them (X-Data-Version)' }),
  },
  { $id: 'EvidenceReceipt' },
);

/** 422 to POST /v1/admin/evidence: a line broke the ingestion contract, and nothing was stored. */
export const EvidenceRefusalSchema = Type.Object(
  {
    error: Type.Literal('validation_error'),
    message: Type.String(),
    invalid_lines: Type.Integer({ minimum: 1 }),
    errors: Type.Array(Type.Object({ line: Type.Integer({ minimum: 1 }), reason: Type.String() }), {
      description: 'the first invalid lines (up to 50), by line number',
    }),
  },
  { $id: 'EvidenceRefusal' },
);
