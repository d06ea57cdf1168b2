import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { DocumentParts } from './openapi-parts.js';
import { ClusterIdText, Confidence, Nullable, RiskCategorySchema, Status, Timestamp, VPA_PATTERN, strict } from './schemas.js';

/**
 * The record of what was served (docs/api.md, "Data versions"): its JSON
 * Schema and its operation, for the OpenAPI document and the contract tests.
 */
export const DataVersionSchema = strict(
  {
    version: Type.String({ description: 'The data version, as X-Data-Version carried it' }),
    from: Timestamp,
    until: Nullable(Type.String({ format: 'date-time', description: 'When the next state replaced it or its server stopped; null while it is served' })),
    snapshot: Type.String({ pattern: '^[!-~]{1,64}$', description: 'The snapshot served' }),
    position: Type.Integer({ minimum: 0, description: 'The live delta\'s position over the snapshot; 0 for the snapshot alone' }),
  },
  'DataVersion',
  'When a data version was served, and what it held',
);

/** Why a VPA's answer changed (GET /v1/verify/upi/history; history/answer-changes.ts says when each applies). */
export const CHANGE_CAUSES = ['evidence', 'retraction', 'clearance', 'clearance_ended', 'expiry', 'compaction'] as const;
export type ChangeCause = (typeof CHANGE_CAUSES)[number];

export const AnswerChangeSchema = strict(
  {
    at: Type.String({ format: 'date-time', description: 'When the state that made the change began to be served' }),
    data_version: Type.String({ description: 'That state, as X-Data-Version named it (GET /v1/data-versions/{version})' }),
    status: Status,
    risk_category: Nullable(RiskCategorySchema),
    confidence: Nullable(Confidence),
    cluster_id: Nullable(ClusterIdText),
    cause: Type.Union(CHANGE_CAUSES.map((c) => Type.Literal(c)), { description: 'Why the answer changed' }),
  },
  'AnswerChange',
  "A change of a VPA's status, risk category, confidence band or cluster",
);

/** A change as the history answers it. */
export type ChangeEntry = Static<typeof AnswerChangeSchema>;

export const AnswerHistorySchema = strict(
  {
    upi: Type.String({ description: 'The queried VPA, echoed' }),
    changes: Type.Array(AnswerChangeSchema, { description: 'Oldest first, within the history kept (serve --history-days)' }),
  },
  'AnswerHistory',
  "How a VPA's answer changed",
);

/** The 422 of an `as_of` before the history kept (docs/api.md, "Answers as of a past instant"). */
export const AsOfRefusalSchema = strict(
  {
    error: Type.Literal('validation_error'),
    message: Type.String(),
    earliest_as_of: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'With an as_of before the history kept: the earliest instant answers are told as of; null where none is kept (serve --history-days 0, or no state recorded yet)' }))),
  },
  'AsOfRefusal',
  'An as_of refused: still to come, or before the history kept (with earliest_as_of)',
);

export const HISTORY_SCHEMAS: Readonly<Record<string, TSchema>> = { DataVersion: DataVersionSchema, AnswerChange: AnswerChangeSchema, AnswerHistory: AnswerHistorySchema, AsOfRefusal: AsOfRefusalSchema };

/** The `as_of` query parameter of a single lookup. */
export const AS_OF_PARAMETER = {
  name: 'as_of',
  in: 'query',
  required: false,
  description: 'Answer exactly as the service answered at this RFC 3339 instant (with its zone; "+" as %2B), from the state then served: its X-Data-Version and X-Data-As-Of, and X-As-Of echoing the instant',
  schema: { type: 'string', format: 'date-time' },
};

/** What a lookup with `as_of` may answer besides the lookup's own. */
export function asOfResponses({ ref, json, error }: Pick<DocumentParts, 'ref' | 'json' | 'error'>): Record<string, unknown> {
  return {
    '422': { description: 'validation_error: an as_of still to come (or a batch body of the wrong shape); or one before the history kept, with earliest_as_of', content: json(ref('AsOfRefusal')) },
    '503': error('service_unavailable: an as_of whose instant the history does not hold (not recorded then, or in a fleet not yet a second past), or a history that cannot be read'),
  };
}

export const HISTORY_TAGS = [{ name: 'History', description: 'What the service served, and when (a key with the screen scope)' }];

export function historyPaths({ ref, ok, error, common }: DocumentParts): Record<string, unknown> {
  return {
    '/v1/verify/upi/history': {
      get: {
        operationId: 'getAnswerHistory',
        tags: ['History'],
        summary: "Every change of a VPA's status, risk category, confidence band or cluster, with the data version that first served it and why",
        description: 'A VPA never seen answers 200 with no changes. Kept in the data directory, or in a fleet in the store (every follower answers).',
        parameters: [{ name: 'upi', in: 'query', required: true, schema: { type: 'string', pattern: VPA_PATTERN } }],
        responses: {
          ...ok("The VPA's changes", ref('AnswerHistory')),
          ...common,
          '503': error('service_unavailable: the history of answers is not kept here, or cannot be read'),
        },
      },
    },
    '/v1/data-versions/{version}': {
      get: {
        operationId: 'getDataVersion',
        tags: ['History'],
        summary: 'When a data version (an answer\'s X-Data-Version) was served, and the snapshot and delta position it held',
        parameters: [{ name: 'version', in: 'path', required: true, description: 'The version, percent-encoded (+ as %2B)', schema: { type: 'string' } }],
        responses: {
          ...ok('The version', ref('DataVersion')),
          ...common,
          '404': error('not_found: the version was not served since the record of versions began'),
          '503': error('service_unavailable: the record of versions served cannot be read'),
        },
      },
    },
  };
}
