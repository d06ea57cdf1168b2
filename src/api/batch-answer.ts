import { NOT_FOUND } from '../common/brand.js';
import { asciiBytes, putAscii, putDigits, putPiece, type ByteScratch } from '../common/byte-scratch.js';
import type { ServingView } from '../engine/serving-view.js';
import { MAX_VPA_LENGTH } from '../vpa/vpa.js';
import { badRequest, type HttpError } from './http-error.js';
import { parseBatchRequest } from './batch-request.js';
import { FLAGGED_BATCH_ITEM_BOUND, putFlaggedBatchItem } from './flagged-verdict-bytes.js';
import { MAX_BATCH_ITEMS } from './schemas.js';

/** A batch to be answered as of a past instant: its VPAs, and the instant as sent. */
export interface AsOfBatch {
  readonly upis: readonly string[];
  readonly asOf: string;
}

/**
 * A batch request from body bytes to response JSON, below the HTTP layer:
 * parse, validate, look every VPA up in the one view given (one snapshot
 * and one state of its delta), encode. Returns the 200 answer's JSON as
 * bytes in `out` (valid until `out` is written again), or the error to
 * answer.
 *
 * A body with `as_of` is not answered from the view: its VPAs and the
 * instant are returned for the history to answer (AsOfBatch).
 *
 * The answer is written as it is looked up, without an object per item and
 * without a string for the whole: most payees are unknown, and a CLEARED
 * item is a constant around the VPA. A valid VPA is printable ASCII without
 * a quote or backslash (vpa.ts), so it goes in as it is; a flagged item is
 * written from the snapshot's arrays (putFlaggedBatchItem). The bytes are
 * those of batchResponseJson (a test holds the two together).
 */
export function answerBatchBody(view: ServingView, body: Buffer, out: ByteScratch): Uint8Array | HttpError | AsOfBatch {
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
  const asOf = (parsed as Record<string, unknown>).as_of;
  if (typeof asOf === 'string') return { upis, asOf };
  const b = out.clear().room(BATCH_ANSWER_BOUND);
  let at = putPiece(b, 0, RESULTS_START);
  let flagged = 0;
  const { ids, inDelta } = view.locateAll(upis);
  for (let i = 0; i < upis.length; i++) {
    if (i > 0) b[at++] = COMMA;
    const upi = upis[i]!;
    const id = ids[i]!;
    if (id === NOT_FOUND) {
      at = putPiece(b, putAscii(b, putPiece(b, at, CLEARED_ITEM_START), upi), CLEARED_ITEM_END);
    } else {
      flagged++;
      at = putFlaggedBatchItem(b, at, inDelta[i] === 1 ? view.delta! : view.base, id, upi);
    }
  }
  at = putDigits(b, putPiece(b, at, TOTAL), upis.length, 10, 1);
  at = putDigits(b, putPiece(b, at, FLAGGED_COUNT), flagged, 10, 1);
  at = putDigits(b, putPiece(b, at, CLEARED_COUNT), upis.length - flagged, 10, 1);
  b[at++] = CLOSE_BRACE;
  return out.commit(at).view();
}

const RESULTS_START = asciiBytes('{"results":[');
const CLEARED_ITEM_START = asciiBytes('{"upi":"');
const CLEARED_ITEM_END = asciiBytes('","status":"CLEARED","confidence":null,"risk_category":null,"cluster_id":null,"cluster_size":0,"evidence_count":0}');
const TOTAL = asciiBytes('],"total":');
const FLAGGED_COUNT = asciiBytes(',"flagged_count":');
const CLEARED_COUNT = asciiBytes(',"cleared_count":');
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;

/**
 * The most bytes a batch answer takes: per item its VPA and at most
 * FLAGGED_BATCH_ITEM_BOUND bytes besides (a CLEARED item's are fewer), and
 * the envelope.
 */
export const BATCH_ANSWER_BOUND = MAX_BATCH_ITEMS * (MAX_VPA_LENGTH + FLAGGED_BATCH_ITEM_BOUND) + 256;
