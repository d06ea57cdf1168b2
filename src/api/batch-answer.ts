import type { Intelligence } from '../engine/intelligence.js';
import type { BatchItem, BatchResponse } from '../engine/verdict.js';
import { badRequest, type HttpError } from '../http/http-error.js';
import { parseBatchRequest } from './batch-request.js';
import { batchResponseJson } from './answer-json.js';

/**
 * A batch request from body bytes to response JSON, below the HTTP layer:
 * parse, validate, look every VPA up in the one snapshot given, encode.
 * Returns the JSON text of the 200 answer, or the error to answer.
 */
export function answerBatchBody(intel: Intelligence, body: Buffer): string | HttpError {
  if (body.length === 0) return badRequest('request body missing; send {"upis": ["handle@provider", ...]}');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return badRequest('request body is not valid JSON');
  }
  const upis = parseBatchRequest(parsed);
  if (!Array.isArray(upis)) return upis;
  const results: BatchItem[] = new Array(upis.length);
  let flagged = 0;
  for (let i = 0; i < upis.length; i++) {
    const item = intel.batchItem(upis[i]!);
    if (item.status === 'FLAGGED') flagged++;
    results[i] = item;
  }
  const response: BatchResponse = { results, total: upis.length, flagged_count: flagged, cleared_count: upis.length - flagged };
  return batchResponseJson(response);
}
