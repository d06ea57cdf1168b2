import { NOT_FOUND } from '../common/brand.js';
import type { ServingView } from '../engine/serving-view.js';
import { badRequest, type HttpError } from './http-error.js';
import { parseBatchRequest } from './batch-request.js';
import { batchEnvelopeJson, batchItemJson, clearedBatchItemJson } from './answer-json.js';

/**
 * A batch request from body bytes to response JSON, below the HTTP layer:
 * parse, validate, look every VPA up in the one view given (one snapshot
 * and one state of its delta), encode.
 * Returns the JSON text of the 200 answer, or the error to answer.
 *
 * The answer is written as it is looked up, without an object per item:
 * most payees are unknown, and a CLEARED item is a constant around the VPA.
 */
export function answerBatchBody(view: ServingView, body: Buffer): string | HttpError {
  if (body.length === 0) return badRequest('request body missing; send {"upis": ["handle@provider", ...]}');
  // V8's JSON.parse: a hand-written byte scanner for the plain body shape was slower
  // (bench/MEASUREMENTS.md, 'The request path: allocation and native calls').
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return badRequest('request body is not valid JSON');
  }
  const upis = parseBatchRequest(parsed);
  if (!Array.isArray(upis)) return upis;
  let items = '';
  let flagged = 0;
  for (let i = 0; i < upis.length; i++) {
    if (i > 0) items += ',';
    const upi = upis[i]!;
    const id = view.locate(upi);
    if (id === NOT_FOUND) {
      items += clearedBatchItemJson(upi);
    } else {
      flagged++;
      items += batchItemJson(view.located.flaggedBatchItem(id, upi));
    }
  }
  return batchEnvelopeJson(items, upis.length, flagged);
}
