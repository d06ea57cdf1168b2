import { MAX_EVIDENCE_BODY_BYTES } from '../../api/schemas.js';
import { badRequest, serviceUnavailable } from '../../api/http-error.js';
import type { IntakeResult } from '../../service/evidence-intake.js';
import type { BodyAnswer } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, RouteKit } from '../route-kit.js';

/**
 * POST /v1/admin/evidence (docs/api.md): NDJSON evidence, stored and
 * answered once it is served, or refused whole with every bad line.
 */
export function registerEvidenceRoutes(kit: RouteKit, deps: Pick<ApiDependencies, 'ingest'>): void {
  const { routes, keyedBody, send } = kit;
  const ingestEvidence: BodyAnswer<undefined> = async (x, body) => {
    if (deps.ingest === undefined) throw serviceUnavailable('this server does not take evidence over HTTP');
    if (body.length === 0) throw badRequest('request body missing; send NDJSON evidence, one item per line');
    send(x, ...evidenceAnswer(await deps.ingest(body)));
  };
  routes.post('/v1/admin/evidence', keyedBody(ROUTE.evidence, 'ingest', MAX_EVIDENCE_BODY_BYTES, 'application/x-ndjson', ingestEvidence));
}

/** The status and JSON of the answer to POST /v1/admin/evidence. */
function evidenceAnswer(result: IntakeResult): [number, string] {
  switch (result.kind) {
    case 'stored':
      return [200, JSON.stringify({ items: result.items, added: result.added, duplicates: result.duplicates, data_version: result.dataVersion })];
    case 'empty':
      throw badRequest('the body holds no evidence item');
    case 'refused': {
      // The error body, with every bad line (up to MAX_REPORTED_ERRORS) beside the message.
      const first = result.errors[0]!;
      const message = `${result.invalidLines} invalid line(s), nothing stored; line ${first.line}: ${first.reason}`;
      return [422, JSON.stringify({ error: 'validation_error', message, invalid_lines: result.invalidLines, errors: result.errors })];
    }
  }
}
