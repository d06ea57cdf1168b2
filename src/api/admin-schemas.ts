import { Type, type TSchema } from '@sinclair/typebox';
import { AUDIT_ACTIONS } from '../access/audit-actions.js';
import { KEY_SCOPES, MAX_KEY_LIMITS } from '../access/key-record.js';
import { ClusterIdText, ClusterSchema, Confidence, Count, Nullable, RiskCategorySchema, SourceCategorySchema, Timestamp, Vpa, strict } from './schemas.js';

/**
 * JSON Schemas of the admin API under /v1/admin/ (docs/console.md): the
 * OpenAPI document and the contract tests use them, as they do the v1 ones.
 */
const Scope = Type.Union(KEY_SCOPES.map((s) => Type.Literal(s)));
const Scopes = Type.Array(Scope, { minItems: 1, uniqueItems: true });

export const SignInRequestSchema = strict({ api_key: Type.String({ minLength: 1, description: 'an API key with the admin scope; sent once, never stored by the console' }) }, 'SignInRequest');

export const SessionSchema = strict(
  {
    key: Type.Object({ id: Type.String(), name: Type.String(), scopes: Scopes }, { additionalProperties: false }),
    csrf_token: Type.String({ description: 'send as X-CSRF-Token with every change made with the session cookie' }),
    expires_at: Timestamp,
  },
  'Session',
);

export const AdminKeySchema = strict(
  {
    id: Type.String({ pattern: '^key_[0-9a-f]{12}$' }),
    name: Type.String(),
    plan: Type.String(),
    scopes: Scopes,
    limits: Nullable(
      Type.Object({
        burst: Type.Integer({ minimum: 1, maximum: MAX_KEY_LIMITS.burst }),
        sustained: Type.Integer({ minimum: 1, maximum: MAX_KEY_LIMITS.sustained }),
        windowSeconds: Type.Integer({ minimum: 1, maximum: MAX_KEY_LIMITS.windowSeconds }),
      }),
    ),
    created_at: Timestamp,
    rotated_at: Nullable(Timestamp),
    revoked_at: Nullable(Timestamp),
    last_used_at: Nullable(Timestamp),
    requests_24h: Count,
    rate_limited_24h: Count,
  },
  'AdminKey',
  'An API key as the admin API shows it: never its hash',
);

export const KeyListSchema = strict({ keys: Type.Array(AdminKeySchema), plans: Type.Array(Type.String()) }, 'KeyList');
export const NewKeySchema = strict(
  { key: Type.String({ pattern: '^upirisk_[A-Za-z0-9_-]{43}$', description: 'the key itself, shown only in this answer' }), record: AdminKeySchema },
  'NewKey',
);
export const KeyAnswerSchema = strict({ record: AdminKeySchema }, 'KeyAnswer');
export const KeyCreateRequestSchema = strict({ name: Type.String({ minLength: 1, maxLength: 200 }), plan: Type.Optional(Type.String()), scopes: Type.Optional(Scopes) }, 'KeyCreateRequest');
export const KeyUpdateRequestSchema = strict({ plan: Type.String() }, 'KeyUpdateRequest');

export const AuditRecordSchema = strict(
  {
    id: Type.String({ pattern: '^aud_[0-9a-f]{16}$' }),
    at: Timestamp,
    actor: Type.Object({ key_id: Nullable(Type.String()), name: Type.String() }, { additionalProperties: false, description: 'the key that made the change; key_id null and name "cli" for upi-risk keys' }),
    action: Type.Union(AUDIT_ACTIONS.map((a) => Type.Literal(a))),
    target: Type.String(),
    details: Type.Record(Type.String(), Type.Unknown()),
  },
  'AuditRecord',
);
export const AuditListSchema = strict({ records: Type.Array(AuditRecordSchema) }, 'AuditList');

const Seconds = Type.Number({ minimum: 0 });
export const StatsSchema = strict(
  {
    mode: Type.Union([Type.Literal('embedded'), Type.Literal('fleet')]),
    data_version: Type.String(),
    snapshot: Type.Object(
      { id: Type.String(), as_of: Nullable(Timestamp), built_at: Timestamp, vpas: Count, clusters: Count, urls: Count, evidence_items: Count },
      { additionalProperties: false },
    ),
    delta: Type.Object({ vpas: Count, evidence_items: Count, bytes: Count, age_seconds: Seconds }, { additionalProperties: false }),
    seconds_since_compaction: Seconds,
    builds: Type.Array(
      Type.Object(
        {
          finished_at: Timestamp,
          duration_ms: Nullable(Count),
          outcome: Type.Union([Type.Literal('built'), Type.Literal('failed'), Type.Literal('published')]),
          snapshot: Nullable(Type.String()),
          message: Nullable(Type.String()),
        },
        { additionalProperties: false },
      ),
      { maxItems: 20 },
    ),
    freshness: Type.Object(
      {
        last_ingest_at: Nullable(Timestamp),
        last_ingest_items: Nullable(Count),
        last_ingest_served_ms: Nullable(Count),
        store_connected: Type.Optional(Type.Boolean()),
        seconds_since_caught_up: Type.Optional(Seconds),
      },
      { additionalProperties: false },
    ),
    history: Type.Object(
      {
        interval_seconds: Type.Number({ exclusiveMinimum: 0 }),
        samples: Type.Array(
          Type.Object(
            { at: Timestamp, requests_per_second: Seconds, rate_limited_per_second: Seconds, delta_vpas: Count, resident_bytes: Count },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false },
    ),
  },
  'Stats',
);

export const ClusterListSchema = strict(
  {
    clusters: Type.Array(
      Type.Object({ cluster_id: ClusterIdText, size: Count, risk_category: RiskCategorySchema, confidence: Confidence }, { additionalProperties: false }),
    ),
  },
  'ClusterList',
);

export const ClusterGraphSchema = strict(
  {
    cluster: ClusterSchema,
    members: Type.Array(
      Type.Object(
        {
          upi: Type.String(),
          confidence: Nullable(Confidence),
          risk_category: Nullable(RiskCategorySchema),
          first_seen: Nullable(Timestamp),
          last_seen: Nullable(Timestamp),
          evidence_count: Count,
        },
        { additionalProperties: false },
      ),
      { maxItems: 1000 },
    ),
    urls: Type.Array(Type.Object({ url: Type.String(), category: SourceCategorySchema }, { additionalProperties: false })),
    sightings: Type.Array(Type.Object({ upi: Type.String(), url: Type.String(), captured_at: Timestamp }, { additionalProperties: false })),
  },
  'ClusterGraph',
);

export const SignedOutSchema = strict({ signed_out: Type.Literal(true) }, 'SignedOut');

export const CompactionStartedSchema = strict(
  {
    started: Type.Boolean({ description: 'false when a compaction was already running: that one goes on, and serves what this one would' }),
    snapshot: Type.String({ description: 'the snapshot being folded together with the live delta' }),
  },
  'CompactionStarted',
  'A compaction runs in the background; the new snapshot is served when built (GET /v1/admin/stats shows it)',
);

/** Evidence ids one retraction names at most. */
export const MAX_RETRACTION_IDS = 1000;
/** The longest evidence id: the ingestion contract's (evidence/record.ts, MAX_EVIDENCE_ID_LENGTH). */
export const EVIDENCE_ID_MAX_LENGTH = 256;
/** The longest reason of a retraction, a clearance or its end. */
export const MAX_CORRECTION_REASON = 500;
/** The longest reference of a clearance (a ticket, a case number). */
export const MAX_CLEARANCE_REFERENCE = 200;
/** A clearance's id: `clr_` and 16 random hex digits. */
export const CLEARANCE_ID_PATTERN = '^clr_[0-9a-f]{16}$';

const EvidenceId = Type.String({
  minLength: 1,
  maxLength: EVIDENCE_ID_MAX_LENGTH,
  pattern: '^[^\\u0000-\\u001f\\u007f]*$',
  description: 'an evidence_id as ingested: 1 to 256 characters, no control characters',
});
const Reason = Type.String({ minLength: 1, maxLength: MAX_CORRECTION_REASON, pattern: '\\S', description: 'why, for the audit log: 1 to 500 characters, not all spaces' });
const Actor = Type.String({ description: 'the id of the key that made the change, or "cli"' });

export const RetractionRequestSchema = strict(
  { evidence_ids: Type.Array(EvidenceId, { minItems: 1, maxItems: MAX_RETRACTION_IDS }), reason: Reason },
  'RetractionRequest',
);
export const RetractionOutcomeSchema = strict(
  {
    retracted: Type.Integer({ minimum: 0, description: 'ids retracted by this call' }),
    unknown: Type.Array(Type.String(), { description: 'ids that name no stored evidence: nothing was stored for them' }),
    already_retracted: Type.Integer({ minimum: 0, description: 'ids retracted before' }),
    data_version: Type.String({ description: 'the version that serves the retraction on every serving thread' }),
  },
  'RetractionOutcome',
  'Retracted evidence never counts again, even when its id is sent again (it stays a duplicate)',
);

export const ClearanceCreateRequestSchema = strict(
  { upi: Vpa, reason: Reason, reference: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_CLEARANCE_REFERENCE, description: 'a ticket or case number, up to 200 characters' })) },
  'ClearanceCreateRequest',
);
export const ClearanceEndRequestSchema = strict({ reason: Type.Optional(Reason) }, 'ClearanceEndRequest', 'An optional body of DELETE: why the clearance ends, for the audit log');

const clearanceFields = {
  id: Type.String({ pattern: CLEARANCE_ID_PATTERN }),
  upi: Type.String({ description: 'the VPA, lower-cased' }),
  reason: Type.String(),
  reference: Nullable(Type.String()),
  created_at: Timestamp,
  created_by: Actor,
  ended_at: Nullable(Timestamp),
  ended_by: Nullable(Actor),
};
export const ClearanceSchema = strict(
  clearanceFields,
  'Clearance',
  "A clearance: while in force (ended_at null), the VPA's evidence captured at or before created_at, and any evidence from a url among its sources then, does not count",
);
export const ClearanceChangeSchema = strict(
  { ...clearanceFields, data_version: Type.String({ description: 'the version that serves the change on every serving thread' }) },
  'ClearanceChange',
);
export const ClearanceListSchema = strict(
  { clearances: Type.Array(ClearanceSchema), next_cursor: Nullable(Type.String()) },
  'ClearanceList',
  'Clearances in the order they were made, in force and ended, a page at a time; pass next_cursor as cursor for the next page',
);
export const ClearanceConflictSchema = strict(
  { error: Type.Literal('conflict'), message: Type.String(), clearance_id: Type.String({ pattern: CLEARANCE_ID_PATTERN, description: 'the clearance in force' }) },
  'ClearanceConflict',
  'The VPA has a clearance in force: one at a time per VPA',
);

/** Every admin schema by its $id, for the OpenAPI document's components. */
export const ADMIN_SCHEMAS: Readonly<Record<string, TSchema>> = Object.fromEntries(
  [
    SignInRequestSchema,
    SessionSchema,
    AdminKeySchema,
    KeyListSchema,
    NewKeySchema,
    KeyAnswerSchema,
    KeyCreateRequestSchema,
    KeyUpdateRequestSchema,
    AuditRecordSchema,
    AuditListSchema,
    StatsSchema,
    ClusterListSchema,
    ClusterGraphSchema,
    SignedOutSchema,
    CompactionStartedSchema,
    RetractionRequestSchema,
    RetractionOutcomeSchema,
    ClearanceCreateRequestSchema,
    ClearanceEndRequestSchema,
    ClearanceSchema,
    ClearanceChangeSchema,
    ClearanceListSchema,
    ClearanceConflictSchema,
  ].map((s) => [s.$id!, s]),
);
