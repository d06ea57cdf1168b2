import {
  AppAuditRequestSchema,
  BatchItemSchema,
  BatchRequestSchema,
  BatchResponseSchema,
  ClusterSchema,
  EntityExposureReportSchema,
  ErrorSchema,
  EvidenceReceiptSchema,
  EvidenceRefusalSchema,
  MAX_BODY_BYTES,
  MAX_EVIDENCE_BODY_BYTES,
  RiskCategorySchema,
  SourceCategorySchema,
  SourceSchema,
  VPA_PATTERN,
  VpaVerdictSchema,
} from './schemas.js';
import { ADMIN_SCHEMAS } from './admin-schemas.js';
import { WATCH_SCHEMAS } from './watch-schemas.js';
import { DISPUTE_SCHEMAS } from './dispute-schemas.js';
import { DISPUTE_TAGS, disputePaths } from './dispute-paths.js';
import { PRIVATE_LOOKUP_SCHEMAS } from './private-lookup-schemas.js';
import { PRIVATE_LOOKUP_TAGS, privateLookupPaths } from './private-lookup-paths.js';
import { AS_OF_PARAMETER, HISTORY_SCHEMAS, HISTORY_TAGS, asOfResponses, historyPaths } from './history-paths.js';
import type { DocumentParts } from './openapi-parts.js';
import { MAX_ADMIN_BODY_BYTES, MAX_WATCH_BODY_BYTES, MAX_WATCHED_PER_KEY, MAX_WATCHLISTS_PER_KEY } from './admin-requests.js';
import { CLEARANCE_ID_PATTERN, MAX_RETRACTION_IDS } from './admin-schemas.js';

/**
 * The OpenAPI 3.1 document served at /v1/openapi.json, generated from the
 * same TypeBox schemas that validate requests and that the contract tests
 * check responses against, so the document cannot drift from the code.
 */
export function openApiDocument(version: string): Record<string, unknown> {
  const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
  const json = (schema: unknown) => ({ 'application/json': { schema } });
  const error = (description: string) => ({ description, content: json(ref('Error')) });
  const common = {
    '400': error('bad_request: missing or invalid parameters'),
    '401': error('unauthorized: API key missing, of another scheme, unknown, rotated or revoked'),
    '403': error('forbidden: the API key lacks the scope this endpoint needs'),
    '429': error('rate_limit_exceeded: wait Retry-After seconds'),
    '500': error('internal_error'),
  };
  const headers = {
    'X-Request-Id': { description: 'Unique request identifier; log it with the screening record', schema: { type: 'string' } },
    'X-Data-Version': {
      description: 'The intelligence that answered: the snapshot id, followed by "+<position>" when the live delta beside it holds new evidence',
      schema: { type: 'string' },
    },
    'X-Data-As-Of': { description: 'When the newest evidence in that intelligence (snapshot and delta) was ingested (ISO 8601)', schema: { type: 'string' } },
  };
  const ok = (description: string, schema: unknown) => ({ '200': { description, headers, content: json(schema) } });
  // The 2xx a planned operation declares is what it will answer once it launches; until then it answers 503.
  const planned = (summary: string, launched: Record<string, unknown>) => ({
    summary: `${summary} (planned, not yet available)`,
    description: 'Routed and authenticated; answers 503 service_unavailable until the operation launches. The 2xx answer is the one it will give then.',
    'x-planned': true,
    responses: { ...launched, '401': common['401'], '503': error('service_unavailable: the operation is planned and not yet available') },
  });
  return {
    openapi: '3.1.0',
    info: { title: 'UPI payee risk screening', version },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    tags: TAGS,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: '__Host-upi_risk_session',
          description: 'A console session (POST /v1/admin/session); every change made with it carries the X-CSRF-Token header',
        },
      },
      schemas: referenced(plain({
        VpaVerdict: VpaVerdictSchema,
        Source: SourceSchema,
        BatchItem: BatchItemSchema,
        BatchRequest: BatchRequestSchema,
        BatchResponse: BatchResponseSchema,
        Cluster: ClusterSchema,
        Error: ErrorSchema,
        RiskCategory: RiskCategorySchema,
        SourceCategory: SourceCategorySchema,
        EntityExposureReport: EntityExposureReportSchema,
        AppAuditRequest: AppAuditRequestSchema,
        EvidenceReceipt: EvidenceReceiptSchema,
        EvidenceRefusal: EvidenceRefusalSchema,
        ...ADMIN_SCHEMAS,
        ...WATCH_SCHEMAS,
        ...DISPUTE_SCHEMAS,
        ...PRIVATE_LOOKUP_SCHEMAS,
        ...HISTORY_SCHEMAS,
      })),
    },
    paths: {
      '/v1/verify/upi': {
        get: {
          operationId: 'verifyUpi',
          tags: ['Verify'],
          summary: 'Single lookup',
          parameters: [{ name: 'upi', in: 'query', required: true, schema: { type: 'string', pattern: VPA_PATTERN } }, AS_OF_PARAMETER],
          responses: { ...ok('VPA verdict', ref('VpaVerdict')), ...common, ...asOfResponses({ ref, json, error }) },
        },
      },
      '/v1/verify/upi/batch': {
        post: {
          operationId: 'verifyUpiBatch',
          tags: ['Verify'],
          summary: 'Batch lookup of 1 to 100 VPAs; counts as one request against the rate limit',
          description: `"vpas" is accepted as an alias of "upis"; the response is always the reference form. Bodies over ${MAX_BODY_BYTES} bytes are refused with 400. With "as_of", the batch is answered from the one state served at that instant.`,
          requestBody: { required: true, content: json(ref('BatchRequest')) },
          responses: { ...ok('Batch response, results in input order', ref('BatchResponse')), ...common, ...asOfResponses({ ref, json, error }) },
        },
      },
      '/v1/verify/upi/cluster/{cluster_id}': {
        get: {
          operationId: 'getCluster',
          tags: ['Clusters'],
          summary: 'Cluster lookup',
          parameters: [{ name: 'cluster_id', in: 'path', required: true, schema: { type: 'string', pattern: '^MC-[0-9]+$' } }],
          responses: { ...ok('Cluster', ref('Cluster')), ...common, '404': error('not_found: no such cluster') },
        },
      },
      '/v1/admin/evidence': {
        post: {
          operationId: 'ingestEvidence',
          tags: ['Evidence'],
          summary: 'Send evidence (an API key with the ingest scope)',
          description: `NDJSON in the ingestion contract, one evidence item per line (Content-Type: application/x-ndjson), at most ${MAX_EVIDENCE_BODY_BYTES} bytes. All or nothing: a body with any invalid line is refused whole with every bad line. Answered once the evidence is stored durably and served.`,
          requestBody: { required: true, content: { 'application/x-ndjson': { schema: { type: 'string' } } } },
          responses: {
            ...ok('Stored and served', ref('EvidenceReceipt')),
            ...common,
            '422': { description: 'validation_error: a line breaks the ingestion contract; nothing was stored', content: json(ref('EvidenceRefusal')) },
            '503': error('service_unavailable: the evidence could not be stored; nothing was acknowledged'),
          },
        },
      },
      ...adminPaths({ ref, json, ok, error, common }),
      ...watchPaths({ ref, json, ok, error, common }),
      ...correctionPaths({ ref, json, ok, error, common }),
      ...disputePaths({ ref, json, ok, error, common }),
      ...privateLookupPaths({ ref, json, ok, error, common }),
      ...historyPaths({ ref, json, ok, error, common }),
      '/v1/cyber/check': {
        get: {
          operationId: 'checkEntityExposure',
          tags: ['Exposure'],
          ...planned('Entity dark-web exposure check', {
            '200': { description: 'The exposure report of the entity (planned)', content: json(ref('EntityExposureReport')) },
          }),
          parameters: [{ name: 'entity', in: 'query', required: true, description: 'A domain name or a platform-internal entity identifier', schema: { type: 'string' } }],
        },
      },
      '/v1/audit/app': {
        post: {
          operationId: 'submitAppAudit',
          tags: ['AppAudit'],
          ...planned('Mobile app audit submission', {
            '2XX': {
              description:
                'Accepted (planned): the audit runs asynchronously, the answer carries a job identifier, and the report is polled from a status operation. The status code, the shape of the job identifier and the status operation are not defined yet.',
            },
          }),
          requestBody: { required: true, content: json(ref('AppAuditRequest')) },
        },
      },
    },
    webhooks: {
      vpaChanged: {
        post: {
          operationId: 'deliverWatchEvent',
          tags: ['Watchlists'],
          summary: "A watched VPA's verdict changed: the event, POSTed to the watchlist's webhook_url",
          description:
            'At least once and in order per VPA (docs/watchlists.md): anything but a 2xx answer within 10 s (redirects are not followed) is tried again with backoff for up to 24 hours. A redelivery carries the same event id.',
          security: [],
          parameters: [
            {
              name: 'Upi-Risk-Signature',
              in: 'header',
              required: true,
              description: 't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>", keyed with the watchlist\'s secret>; refuse an old t',
              schema: { type: 'string' },
            },
          ],
          requestBody: { required: true, content: json(ref('WatchEvent')) },
          responses: { '2XX': { description: 'Received; the event is delivered' } },
        },
      },
    },
  };
}

/** One tag per operation: client generators make one class of each. */
const TAGS = [
  { name: 'Verify', description: 'Screening payee VPAs, one or up to 100 at a time (a key with the screen scope)' },
  { name: 'Clusters', description: 'Clusters of VPAs seen together: the cluster of a verdict, and for an admin the largest clusters and their graphs' },
  ...PRIVATE_LOOKUP_TAGS,
  ...HISTORY_TAGS,
  { name: 'Evidence', description: 'Sending fraud evidence, stored and served before the answer (a key with the ingest scope)' },
  { name: 'Watchlists', description: "A key's watchlists of VPAs, and the signed webhook events sent when a watched verdict changes (a key with the screen scope)" },
  ...DISPUTE_TAGS,
  { name: 'Exposure', description: 'Entity dark-web exposure check (planned, not yet available)' },
  { name: 'AppAudit', description: 'Mobile app audits (planned, not yet available)' },
  { name: 'Keys', description: 'API keys: create, change the plan of, rotate and revoke (an admin key or console session)' },
  { name: 'Console', description: 'Console sessions: an admin key exchanged for a session cookie' },
  { name: 'Admin', description: "The audit log and every key's watchlists (an admin key or console session)" },
  { name: 'Operations', description: 'The figures of the service and compaction of the live delta (an admin key or console session)' },
  {
    name: 'Corrections',
    description: 'Retractions of evidence (a key with the ingest scope) and clearances of VPAs (an admin key or console session): stored durably, audited, and served before the answer',
  },
];

/** The admin API (docs/console.md): an admin-scoped key or a console session. */
function adminPaths({ ref, json, ok, error, common }: DocumentParts): Record<string, unknown> {
  const security = [{ bearer: [] }, { session: [] }];
  const body = (id: string) => ({
    required: true,
    description: `JSON, at most ${MAX_ADMIN_BODY_BYTES} bytes; unknown fields are refused with 422`,
    content: json(ref(id)),
  });
  const keyId = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^key_[0-9a-f]{12}$' } };
  const limit = (fallback: number, max: number) => ({ name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: max, default: fallback } });
  const refusals = { ...common, '403': error('forbidden: the key lacks the admin scope, or a change made with a session lacks its X-CSRF-Token'), '503': error('service_unavailable: the key store or the records cannot be reached') };
  const changes = { ...refusals, '404': error('not_found: no such key'), '422': error('validation_error: a field is missing, unknown or of the wrong value') };
  return {
    '/v1/admin/session': {
      post: {
        operationId: 'signIn',
        tags: ['Console'],
        summary: 'Sign in to the console: exchange an admin-scoped key for a session cookie',
        security: [],
        requestBody: body('SignInRequest'),
        responses: { ...ok('Signed in; Set-Cookie carries the session', ref('Session')), ...refusals, '422': error('validation_error: no api_key') },
      },
      get: {
        operationId: 'getSession',
        tags: ['Console'],
        summary: 'The console session of the cookie',
        security: [{ session: [] }],
        responses: { ...ok('The session', ref('Session')), ...refusals },
      },
      delete: {
        operationId: 'signOut',
        tags: ['Console'],
        summary: 'Sign out',
        security: [{ session: [] }],
        responses: { ...ok('Signed out; the cookie is cleared', ref('SignedOut')), ...refusals },
      },
    },
    '/v1/admin/keys': {
      get: {
        operationId: 'listKeys',
        tags: ['Keys'],
        summary: 'Every API key, with its use over the last 24 hours',
        security,
        responses: { ...ok('Keys and plan names', ref('KeyList')), ...refusals },
      },
      post: {
        operationId: 'createKey',
        tags: ['Keys'],
        summary: 'Create a key',
        security,
        requestBody: body('KeyCreateRequest'),
        responses: { '201': { description: 'Created; the key is in this answer only', content: json(ref('NewKey')) }, ...changes },
      },
    },
    '/v1/admin/keys/{id}': {
      patch: {
        operationId: 'updateKey',
        tags: ['Keys'],
        summary: "Change a key's plan",
        security,
        parameters: [keyId],
        requestBody: body('KeyUpdateRequest'),
        responses: { ...ok('The key', ref('KeyAnswer')), ...changes },
      },
    },
    '/v1/admin/keys/{id}/rotate': {
      post: {
        operationId: 'rotateKey',
        tags: ['Keys'],
        summary: 'New secret for a key; the old one stops working at once',
        security,
        parameters: [keyId],
        responses: { ...ok('The new key, shown only here', ref('NewKey')), ...changes },
      },
    },
    '/v1/admin/keys/{id}/revoke': {
      post: {
        operationId: 'revokeKey',
        tags: ['Keys'],
        summary: 'Revoke a key; it stops working at once',
        security,
        parameters: [keyId],
        responses: { ...ok('The key', ref('KeyAnswer')), ...changes },
      },
    },
    '/v1/admin/audit': {
      get: {
        operationId: 'listAuditRecords',
        tags: ['Admin'],
        summary: 'The record of key and session changes, newest first',
        security,
        parameters: [limit(100, 1000)],
        responses: { ...ok('Audit records', ref('AuditList')), ...refusals },
      },
    },
    '/v1/admin/stats': {
      get: {
        operationId: 'getStats',
        tags: ['Operations'],
        summary: 'The intelligence served, recent builds, freshness, and an hour of samples',
        security,
        responses: { ...ok('Figures', ref('Stats')), ...refusals },
      },
    },
    '/v1/admin/compaction': {
      post: {
        operationId: 'startCompaction',
        tags: ['Operations'],
        summary: 'Fold the live delta into a new snapshot now, in the background (as SIGUSR2 does)',
        description: 'Answers at once; the new snapshot is served when built, together with what arrived meanwhile. Recorded in the audit log.',
        security,
        responses: { '202': { description: 'Started, or already running', content: json(ref('CompactionStarted')) }, ...refusals, '400': error('bad_request: a fleet follower builds nothing; the active builder publishes') },
      },
    },
    '/v1/admin/clusters': {
      get: {
        operationId: 'listClusters',
        tags: ['Clusters'],
        summary: 'The largest clusters of the snapshot served',
        security,
        parameters: [limit(50, 1000)],
        responses: { ...ok('Clusters, largest first', ref('ClusterList')), ...refusals },
      },
    },
    '/v1/admin/clusters/{cluster_id}/graph': {
      get: {
        operationId: 'getClusterGraph',
        tags: ['Clusters'],
        summary: 'A cluster as a graph: members, the urls they were seen on, and the sightings between them',
        security,
        parameters: [{ name: 'cluster_id', in: 'path', required: true, schema: { type: 'string', pattern: '^MC-[0-9]+$' } }],
        responses: { ...ok('The graph (at most 1,000 members drawn)', ref('ClusterGraph')), ...refusals, '404': error('not_found: no such cluster') },
      },
    },
  };
}

/** Watchlists (docs/watchlists.md): a key with the screen scope, on its own watchlists. */
function watchPaths({ ref, json, ok, error, common }: DocumentParts): Record<string, unknown> {
  const id = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
  const notFound = { '404': error("not_found: no such watchlist (another key's watchlist is answered so too)") };
  const refusals = { ...common, ...notFound, '503': error('service_unavailable: this server keeps no watchlists (a follower), or its store cannot be written') };
  const changes = { ...refusals, '422': error('validation_error: a field is missing, unknown or of the wrong value') };
  const page = [
    { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
    { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'next_cursor of the page before' },
  ];
  const vpas = (description: string) => ({ required: true, description: `${description}; at most ${MAX_WATCH_BODY_BYTES} bytes`, content: json(ref('WatchVpasRequest')) });
  return {
    '/v1/watchlists': {
      post: {
        operationId: 'createWatchlist',
        tags: ['Watchlists'],
        summary: 'Create a watchlist; its events go to webhook_url, signed with the secret of this answer',
        description: `webhook_url must be https and must not be, or resolve to, a private, loopback, link-local or metadata address (400 bad_request). A key holds at most ${MAX_WATCHLISTS_PER_KEY} watchlists (422 validation_error).`,
        requestBody: { required: true, description: `JSON, at most ${MAX_ADMIN_BODY_BYTES} bytes`, content: json(ref('WatchlistCreateRequest')) },
        responses: { '201': { description: 'Created; the secret is shown only here', content: json(ref('NewWatchlist')) }, ...changes },
      },
      get: {
        operationId: 'listWatchlists',
        tags: ['Watchlists'],
        summary: "The key's watchlists",
        responses: { ...ok('Watchlists', ref('WatchlistList')), ...refusals },
      },
    },
    '/v1/watchlists/{id}': {
      get: {
        operationId: 'getWatchlist',
        tags: ['Watchlists'],
        summary: 'A watchlist',
        parameters: [id],
        responses: { ...ok('The watchlist', ref('Watchlist')), ...refusals },
      },
      delete: {
        operationId: 'deleteWatchlist',
        tags: ['Watchlists'],
        summary: 'Delete a watchlist, its VPAs and its undelivered events',
        parameters: [id],
        responses: { ...ok('Deleted', ref('WatchlistDeleted')), ...refusals },
      },
    },
    '/v1/watchlists/{id}/secret': {
      post: {
        operationId: 'rotateWatchlistSecret',
        tags: ['Watchlists'],
        summary: 'A new signing secret; the old one signs nothing from now on, or beside the new one for keep_previous_seconds',
        parameters: [id],
        requestBody: { required: false, description: `JSON, at most ${MAX_ADMIN_BODY_BYTES} bytes; none: the old secret stops at once`, content: json(ref('WatchlistSecretRequest')) },
        responses: { ...ok('The new secret, shown only here', ref('WatchlistSecret')), ...refusals },
      },
    },
    '/v1/watchlists/{id}/vpas': {
      put: {
        operationId: 'watchVpas',
        tags: ['Watchlists'],
        summary: 'Watch 1 to 1,000 VPAs',
        description: `A key watches at most ${MAX_WATCHED_PER_KEY} VPAs over all its watchlists: a call that would go past that adds none (422 validation_error).`,
        parameters: [id],
        requestBody: vpas('VPAs to watch'),
        responses: { ...ok('How many were new, and the total', ref('WatchVpasAdded')), ...changes },
      },
      delete: {
        operationId: 'unwatchVpas',
        tags: ['Watchlists'],
        summary: 'Stop watching 1 to 1,000 VPAs',
        parameters: [id],
        requestBody: vpas('VPAs to stop watching'),
        responses: { ...ok('How many were watched, and the total', ref('WatchVpasRemoved')), ...changes },
      },
      get: {
        operationId: 'listWatchedVpas',
        tags: ['Watchlists'],
        summary: 'The watched VPAs with their verdicts now, a page at a time',
        parameters: [id, ...page],
        responses: { ...ok('A page', ref('WatchedVpasPage')), ...refusals },
      },
    },
    '/v1/watchlists/{id}/events': {
      get: {
        operationId: 'listWatchEvents',
        tags: ['Watchlists'],
        summary: 'Events with their delivery attempts, newest first',
        parameters: [id, ...page],
        responses: { ...ok('A page', ref('WatchEventPage')), ...refusals },
      },
    },
    '/v1/admin/watchlists': {
      get: {
        operationId: 'listAllWatchlists',
        tags: ['Admin'],
        summary: "Every key's watchlists in id order, a page at a time (an admin key or session)",
        security: [{ bearer: [] }, { session: [] }],
        parameters: page,
        responses: { ...ok('Watchlists with their owners', ref('AdminWatchlistList')), ...refusals },
      },
    },
    '/v1/admin/watchlists/{id}': {
      get: {
        operationId: 'getAnyWatchlist',
        tags: ['Admin'],
        summary: "Any key's watchlist, with its owner (an admin key or session)",
        security: [{ bearer: [] }, { session: [] }],
        parameters: [id],
        responses: { ...ok('The watchlist', ref('AdminWatchlist')), ...refusals },
      },
    },
    '/v1/admin/watchlists/{id}/vpas': {
      get: {
        operationId: 'listAnyWatchedVpas',
        tags: ['Admin'],
        summary: "Any key's watched VPAs with their verdicts now (an admin key or session)",
        security: [{ bearer: [] }, { session: [] }],
        parameters: [id, ...page],
        responses: { ...ok('A page', ref('WatchedVpasPage')), ...refusals },
      },
    },
    '/v1/admin/watchlists/{id}/events': {
      get: {
        operationId: 'listAnyWatchEvents',
        tags: ['Admin'],
        summary: "Any key's watchlist events with their delivery attempts (an admin key or session)",
        security: [{ bearer: [] }, { session: [] }],
        parameters: [id, ...page],
        responses: { ...ok('A page', ref('WatchEventPage')), ...refusals },
      },
    },
    '/v1/watchlists/{id}/events/{event_id}/redeliver': {
      post: {
        operationId: 'redeliverWatchEvent',
        tags: ['Watchlists'],
        summary: 'Deliver an event again from now, whatever its state',
        parameters: [id, { name: 'event_id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '202': { description: 'Queued', content: json(ref('Redelivered')) }, ...refusals },
      },
    },
  };
}

/** Corrections (docs/api.md, Corrections): retractions with the ingest scope, clearances with the admin scope. */
function correctionPaths({ ref, json, ok, error, common }: DocumentParts): Record<string, unknown> {
  const security = [{ bearer: [] }, { session: [] }];
  const body = (id: string, required: boolean) => ({
    required,
    description: `JSON, at most ${MAX_ADMIN_BODY_BYTES} bytes; unknown fields are refused with 422`,
    content: json(ref(id)),
  });
  const id = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: CLEARANCE_ID_PATTERN } };
  const refusals = {
    ...common,
    '503': error('service_unavailable: the correction could not be stored (nothing was), or this server takes no corrections (a fleet follower)'),
  };
  const changes = {
    ...refusals,
    '400': error('bad_request: the body is not JSON, or a field has a value it cannot take (too many ids, a malformed id, a reason over 500 characters, not a VPA)'),
    '422': error('validation_error: the body is JSON of the wrong shape (a field missing, unknown or of the wrong type)'),
  };
  const notFound = { '404': error('not_found: no such clearance') };
  return {
    '/v1/admin/retractions': {
      post: {
        operationId: 'retractEvidence',
        tags: ['Corrections'],
        summary: `Retract 1 to ${MAX_RETRACTION_IDS} evidence items by id (a key with the ingest scope)`,
        description:
          'A retracted item never counts again, even when its id is sent again (it stays a duplicate). Stored durably and audited before the answer, which comes once every serving thread serves the result.',
        security,
        requestBody: body('RetractionRequest', true),
        responses: { ...ok('Retracted, and served', ref('RetractionOutcome')), ...changes },
      },
    },
    '/v1/admin/clearances': {
      post: {
        operationId: 'createClearance',
        tags: ['Corrections'],
        summary: 'Clear a VPA: its evidence captured until now, and any from the urls among its sources now, stops counting',
        description:
          'Evidence from a new url captured afterwards counts, and flags the VPA again. A VPA may be cleared before any evidence names it. One clearance in force per VPA. Stored durably and audited before the answer, which comes once every serving thread serves it.',
        security,
        requestBody: body('ClearanceCreateRequest', true),
        responses: {
          '201': { description: 'Made, and served', content: json(ref('ClearanceChange')) },
          ...changes,
          '409': { description: 'conflict: the VPA has a clearance in force, named by clearance_id', content: json(ref('ClearanceConflict')) },
        },
      },
      get: {
        operationId: 'listClearances',
        tags: ['Corrections'],
        summary: 'Clearances in the order made, in force and ended, a page at a time',
        security,
        parameters: [
          { name: 'upi', in: 'query', required: false, description: "only this VPA's clearances", schema: { type: 'string', pattern: VPA_PATTERN } },
          { name: 'cursor', in: 'query', required: false, description: 'next_cursor of the page before', schema: { type: 'string' } },
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        ],
        responses: { ...ok('A page', ref('ClearanceList')), ...refusals },
      },
    },
    '/v1/admin/clearances/{id}': {
      get: {
        operationId: 'getClearance',
        tags: ['Corrections'],
        summary: 'A clearance, in force or ended',
        security,
        parameters: [id],
        responses: { ...ok('The clearance', ref('Clearance')), ...refusals, ...notFound },
      },
      delete: {
        operationId: 'endClearance',
        tags: ['Corrections'],
        summary: 'End a clearance: the evidence it suppressed counts again',
        description: 'Ending an ended clearance changes nothing and answers it as it is. Stored durably and audited before the answer, which comes once every serving thread serves it.',
        security,
        parameters: [id],
        requestBody: body('ClearanceEndRequest', false),
        responses: { ...ok('Ended, and served', ref('ClearanceChange')), ...changes, ...notFound },
      },
    },
  };
}

/**
 * The component schemas with each nested copy of another component (TypeBox
 * inlines a schema wherever it is used, marked with its `$id`) replaced by a
 * `$ref` to it, so that a generated client declares each shape once. The
 * `$id`s go: a relative `$id` would move the base those `$ref`s resolve from.
 */
function referenced(schemas: Record<string, unknown>): Record<string, unknown> {
  const texts = new Map(Object.entries(schemas).map(([name, schema]) => [name, JSON.stringify(schema)]));
  const swap = (value: unknown, top: boolean): unknown => {
    if (Array.isArray(value)) return value.map((item) => swap(item, false));
    if (value === null || typeof value !== 'object') return value;
    const { $id: id, ...rest } = value as Record<string, unknown>;
    if (!top && typeof id === 'string' && texts.has(id)) {
      if (JSON.stringify(value) !== texts.get(id)) throw new Error(`a schema nested as ${id} differs from the component ${id}`);
      return { $ref: `#/components/schemas/${id}` };
    }
    return Object.fromEntries(Object.entries(rest).map(([key, child]) => [key, swap(child, false)]));
  };
  return Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, swap(schema, true)]));
}

/** TypeBox schemas carry symbol-keyed metadata; the document wants plain JSON. */
function plain(value: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}
