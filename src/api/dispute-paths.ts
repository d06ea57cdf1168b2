import { MAX_ADMIN_BODY_BYTES } from './admin-requests.js';
import { DISPUTE_ID_PATTERN, DISPUTE_STATUSES, REPORT_ID_PATTERN, REPORT_STATUSES } from './dispute-schemas.js';
import type { DocumentParts } from './openapi-parts.js';


/** The tags of these operations, for the document's list. */
export const DISPUTE_TAGS = [
  { name: 'Disputes', description: "Disputing a FLAGGED verdict, and following the key's disputes (a key with the screen scope)" },
  { name: 'Reports', description: 'Telling what happened after a payment: confirmed fraud, or a false positive (a key with the screen scope)' },
  { name: 'Review', description: "Analysts' review of disputes and reports: resolve, accept as evidence, dismiss (an admin key or console session)" },
];

/** Disputes and reports (docs/api.md, Disputes and reports). */
export function disputePaths({ ref, json, ok, error, common }: DocumentParts): Record<string, unknown> {
  const admin = [{ bearer: [] }, { session: [] }];
  const body = (id: string, required = true) => ({
    required,
    description: `JSON, at most ${MAX_ADMIN_BODY_BYTES} bytes; unknown fields are refused with 422`,
    content: json(ref(id)),
  });
  const idParameter = (pattern: string) => ({ name: 'id', in: 'path', required: true, schema: { type: 'string', pattern } });
  const disputeId = idParameter(DISPUTE_ID_PATTERN);
  const reportId = idParameter(REPORT_ID_PATTERN);
  const page = (statuses?: readonly string[]) => [
    { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
    { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'next_cursor of the page before' },
    ...(statuses === undefined ? [] : [{ name: 'status', in: 'query', required: false, schema: { type: 'string', enum: statuses }, description: 'only these; all when absent' }]),
  ];
  const unavailable = { '503': error('service_unavailable: the records cannot be read or written; nothing was stored') };
  const refusals = { ...common, ...unavailable };
  const invalid = { '422': error('validation_error: a field is unknown, missing or of the wrong type or value') };
  const decided = (what: string) => ({ '409': error(`conflict: the ${what} was decided already`) });
  return {
    '/v1/disputes': {
      post: {
        operationId: 'openDispute',
        tags: ['Disputes'],
        summary: 'Dispute the FLAGGED verdict of a VPA',
        description: 'A key has at most one open dispute of a VPA: a second is refused with 409 naming the first. A CLEARED VPA has nothing to dispute (422).',
        requestBody: body('DisputeCreateRequest'),
        responses: {
          '201': { description: 'Opened', content: json(ref('Dispute')) },
          ...refusals,
          '409': { description: 'conflict: the key has an open dispute of the VPA; dispute_id names it', content: json(ref('DisputeConflict')) },
          '422': error('validation_error: a field is unknown, missing or of the wrong type or value, or the VPA is CLEARED'),
        },
      },
      get: {
        operationId: 'listDisputes',
        tags: ['Disputes'],
        summary: "The key's disputes, newest first",
        parameters: page(),
        responses: { ...ok('A page', ref('DisputeList')), ...refusals },
      },
    },
    '/v1/disputes/{id}': {
      get: {
        operationId: 'getDispute',
        tags: ['Disputes'],
        summary: 'A dispute of the key, with its resolution once resolved',
        parameters: [disputeId],
        responses: { ...ok('The dispute', ref('Dispute')), ...refusals, '404': error("not_found: no such dispute (another key's is answered so too)") },
      },
    },
    '/v1/reports': {
      post: {
        operationId: 'submitReport',
        tags: ['Reports'],
        summary: 'Report what happened after a payment',
        description:
          'Never changes a verdict by itself: a false_positive report of a FLAGGED VPA opens a dispute of it (or joins the open one of the key); a confirmed_fraud report waits for an analyst, who may make it evidence. With an Idempotency-Key, a retry is answered as the first attempt was and stores nothing more.',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              'The same on every attempt of one report (a UUID, or the payment record\'s own id): a report with the key of one the caller stored before is that report, answered as it was (202, same id), and nothing more is stored; with other content it is refused (422). Without it each request is a new report.',
            schema: { type: 'string', pattern: '^[!-~]{1,255}$' },
          },
        ],
        requestBody: body('ReportCreateRequest'),
        responses: { '202': { description: 'Received', content: json(ref('ReportReceipt')) }, ...refusals, ...invalid },
      },
    },
    '/v1/admin/disputes': {
      get: {
        operationId: 'listAllDisputes',
        tags: ['Review'],
        summary: "Every key's disputes, newest first",
        security: admin,
        parameters: page(DISPUTE_STATUSES),
        responses: { ...ok('A page', ref('AdminDisputeList')), ...refusals },
      },
    },
    '/v1/admin/disputes/{id}': {
      get: {
        operationId: 'reviewDispute',
        tags: ['Review'],
        summary: "A dispute with its VPA's verdict now and its evidence items",
        security: admin,
        parameters: [disputeId],
        responses: { ...ok('The dispute', ref('DisputeReview')), ...refusals, '404': error('not_found: no such dispute') },
      },
    },
    '/v1/admin/disputes/{id}/resolve': {
      post: {
        operationId: 'resolveDispute',
        tags: ['Review'],
        summary: 'Resolve a dispute: upheld clears the VPA (or retracts the evidence named), rejected changes nothing',
        description: 'Once: a resolved dispute is refused with 409. The correction is served, and the resolution stored and in the audit log, before the answer.',
        security: admin,
        parameters: [disputeId],
        requestBody: body('DisputeResolveRequest'),
        responses: {
          ...ok('Resolved', ref('DisputeResolved')),
          ...refusals,
          '404': error('not_found: no such dispute'),
          ...decided('dispute'),
          '422': error('validation_error: a field is unknown, missing or of the wrong value, or an evidence id to retract is not evidence of the VPA'),
          '503': error('service_unavailable: this server keeps no corrections (upheld), or the records cannot be written; nothing was stored'),
        },
      },
    },
    '/v1/admin/reports': {
      get: {
        operationId: 'listReports',
        tags: ['Review'],
        summary: "Every key's reports, newest first",
        security: admin,
        parameters: page(REPORT_STATUSES),
        responses: { ...ok('A page', ref('ReportList')), ...refusals },
      },
    },
    '/v1/admin/reports/{id}/accept': {
      post: {
        operationId: 'acceptReport',
        tags: ['Review'],
        summary: 'Make a confirmed_fraud report one evidence item of its VPA (url report:<id>), served before the answer',
        security: admin,
        parameters: [reportId],
        requestBody: body('ReportDecisionRequest', false),
        responses: { ...ok('Accepted', ref('ReportDecided')), ...refusals, '404': error('not_found: no such report'), ...decided('report'), ...invalid },
      },
    },
    '/v1/admin/reports/{id}/dismiss': {
      post: {
        operationId: 'dismissReport',
        tags: ['Review'],
        summary: 'Dismiss a report: nothing comes of it',
        security: admin,
        parameters: [reportId],
        requestBody: body('ReportDecisionRequest', false),
        responses: { ...ok('Dismissed', ref('ReportDecided')), ...refusals, '404': error('not_found: no such report'), ...decided('report'), ...invalid },
      },
    },
  };
}
