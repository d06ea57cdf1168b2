import {
  AppAuditReportSchema,
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
  const planned = (summary: string) => ({
    summary: `${summary} (planned, not yet available)`,
    description: 'Routed and authenticated; answers 503 service_unavailable until the operation launches.',
    responses: { '401': common['401'], '503': error('service_unavailable: the operation is planned and not yet available') },
  });
  return {
    openapi: '3.1.0',
    info: { title: 'UPI payee risk screening', version },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: plain({
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
        AppAuditReport: AppAuditReportSchema,
        EvidenceReceipt: EvidenceReceiptSchema,
        EvidenceRefusal: EvidenceRefusalSchema,
      }),
    },
    paths: {
      '/v1/verify/upi': {
        get: {
          summary: 'Single lookup',
          parameters: [{ name: 'upi', in: 'query', required: true, schema: { type: 'string', pattern: VPA_PATTERN } }],
          responses: { ...ok('VPA verdict', ref('VpaVerdict')), ...common },
        },
      },
      '/v1/verify/upi/batch': {
        post: {
          summary: 'Batch lookup of 1 to 100 VPAs; counts as one request against the rate limit',
          description: `"vpas" is accepted as an alias of "upis"; the response is always the reference form. Bodies over ${MAX_BODY_BYTES} bytes are refused with 400.`,
          requestBody: { required: true, content: json(ref('BatchRequest')) },
          responses: { ...ok('Batch response, results in input order', ref('BatchResponse')), ...common, '422': error('validation_error: the body is JSON of the wrong shape') },
        },
      },
      '/v1/verify/upi/cluster/{cluster_id}': {
        get: {
          summary: 'Cluster lookup',
          parameters: [{ name: 'cluster_id', in: 'path', required: true, schema: { type: 'string', pattern: '^MC-[0-9]+$' } }],
          responses: { ...ok('Cluster', ref('Cluster')), ...common, '404': error('not_found: no such cluster') },
        },
      },
      '/v1/admin/evidence': {
        post: {
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
      '/v1/cyber/check': { get: { ...planned('Entity dark-web exposure check'), parameters: [{ name: 'entity', in: 'query', required: true, schema: { type: 'string' } }] } },
      '/v1/audit/app': { post: { ...planned('Mobile app audit submission'), requestBody: { content: json(ref('AppAuditRequest')) } } },
    },
  };
}

/** TypeBox schemas carry symbol-keyed metadata; the document wants plain JSON. */
function plain(value: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}
