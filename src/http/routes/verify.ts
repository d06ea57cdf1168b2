import type { HttpRequest } from 'uWebSockets.js';
import { MAX_BODY_BYTES } from '../../api/schemas.js';
import { BATCH_ANSWER_BOUND, answerBatchBody } from '../../api/batch-answer.js';
import { answerSingle } from '../../api/single-answer.js';
import { HttpError, badRequest, serviceUnavailable } from '../../api/http-error.js';
import { ByteScratch } from '../../common/byte-scratch.js';
import { isValidVpa } from '../../vpa/vpa.js';
import type { Answer, BodyAnswer, Exchange } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, RouteKit } from '../route-kit.js';
import { caller, mainThreadCalls } from './main-thread.js';
import { MALFORMED_QUERY, strictQueryValue } from '../strict-query.js';

/**
 * Room for a single answer written as bytes: a CLEARED one is about 170
 * bytes around the VPA, a FLAGGED one about 150 more per source; one whose
 * upper bound is past this is written as text (flagged-verdict-bytes.ts).
 * The buffer keeps a view per answer length it has written (byte-scratch.ts),
 * at most one per byte of this: a megabyte or two per serving thread.
 */
const SINGLE_BODY_CAPACITY = 16_384;

/**
 * Screening (docs/api.md): GET /v1/verify/upi for one VPA and POST
 * /v1/verify/upi/batch for up to a hundred, the hot path; and the planned
 * screening endpoints, which answer 503 until they exist.
 */
export function registerVerifyRoutes(kit: RouteKit, deps: Pick<ApiDependencies, 'admin'>): void {
  const { routes, keyed, keyedBody, send } = kit;
  const { ask, relay } = mainThreadCalls(kit, deps);
  // The body of the answer being written, when it is written as bytes (single lookups).
  const bodyBytes = new ByteScratch(SINGLE_BODY_CAPACITY);
  // The body of a batch answer: written and handed to uWS within one call, like a single one. Its views
  // (one per answer length, byte-scratch.ts) are a few thousand in practice, answers of 100 being 12-16 KB.
  const batchBytes = new ByteScratch(BATCH_ANSWER_BOUND);

  const verifySingle: Answer<VerifyQuery> = (x, query) => {
    if (typeof query === 'object' && query !== null) return verifyAsOf(x, [requireUpi(query.upi)], query.asOf, false);
    send(x, 200, answerSingle(x.view, requireUpi(query), bodyBytes));
    return undefined;
  };

  const verifyBatch: BodyAnswer<undefined> = (x, body) => {
    const answer = answerBatchBody(x.view, body, batchBytes);
    if (answer instanceof HttpError) throw answer;
    if (!(answer instanceof Uint8Array)) return verifyAsOf(x, answer.upis, answer.asOf, true);
    send(x, 200, answer);
    return undefined;
  };

  // An answer as of a past instant is read from the history the main thread keeps (docs/api.md, "Answers as of a past instant").
  const verifyAsOf = async (x: Exchange, upis: readonly string[], asOf: string | null, batch: boolean): Promise<void> => {
    if (asOf === null) throw badRequest('"as_of" must be an RFC 3339 instant (such as 2026-03-03T10:02:00Z), percent-encoded in a query ("+" as %2B)');
    relay(x, await ask({ op: 'verify.as-of', key: caller(x), upis, asOf, batch }));
  };

  routes.get('/v1/verify/upi', keyed(ROUTE.verify, 'screen', readVerifyQuery, verifySingle));
  routes.post('/v1/verify/upi/batch', keyedBody(ROUTE.batch, 'screen', MAX_BODY_BYTES, 'application/json', verifyBatch));
  routes.get('/v1/cyber/check', keyed(ROUTE.cyber_check, 'screen', noInput, entityExposurePlanned));
  routes.post('/v1/audit/app', keyed(ROUTE.audit_app, 'screen', noInput, appAuditPlanned));
}

/** A lookup's query: the `upi` as readUpi reads it, or with `as_of` beside it (null: not text). */
type VerifyQuery = string | undefined | null | { readonly upi: string | undefined | null; readonly asOf: string | null };

/**
 * readUpi, and `as_of` when the query names it: most do not, and cost one
 * look for the name more.
 */
function readVerifyQuery(req: HttpRequest): VerifyQuery {
  const query = req.getQuery();
  if (query === undefined) return undefined;
  const upi = strictQueryValue(query, 'upi');
  if (!query.includes('as_of')) return upi;
  const asOf = strictQueryValue(query, 'as_of');
  return asOf === undefined ? upi : { upi, asOf };
}

/**
 * The `upi` query parameter: undefined when absent, MALFORMED_QUERY when the
 * query's percent-encoding is malformed. Read from the raw query, not with
 * uWS's `getQuery(key)`, whose decoding is lenient: one call into uWS as
 * before, and decoding work only when the query holds a `%`.
 */
export function readUpi(req: HttpRequest): string | undefined | null {
  const query = req.getQuery();
  return query === undefined ? undefined : strictQueryValue(query, 'upi');
}

/** The VPA readUpi read, or the 400 of one missing, malformed or not a VPA. */
export function requireUpi(upi: string | undefined | null): string {
  if (upi === MALFORMED_QUERY) throw badRequest('the query string has a malformed percent-encoding (a "%" not followed by two hex digits, or bytes that are not UTF-8)');
  if (upi === undefined || upi === '') throw badRequest('missing query parameter "upi"');
  if (!isValidVpa(upi)) throw badRequest('"upi" is not a valid VPA (handle@provider)');
  return upi;
}

function noInput(): null {
  return null;
}

function entityExposurePlanned(): never {
  throw serviceUnavailable('the entity exposure check is planned and not yet available');
}

function appAuditPlanned(): never {
  throw serviceUnavailable('the mobile app audit is planned and not yet available');
}
