import type { HttpRequest } from 'uWebSockets.js';
import { answerRange, parseRangePrefix } from '../../api/range-answer.js';
import { HttpError, badRequest } from '../../api/http-error.js';
import { ByteScratch } from '../../common/byte-scratch.js';
import type { Answer } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, RouteKit } from '../route-kit.js';

/**
 * How long a range answer may be cached, s: its ETag names the data version,
 * which a merge replaces within a second, so this is how stale a cached
 * answer may be; compactions come minutes apart (docs/api.md).
 */
export const RANGE_MAX_AGE_SECONDS = 60;
const RANGE_CACHE_CONTROL = `private, max-age=${RANGE_MAX_AGE_SECONDS}`;
/** Bytes of the buffer a range answer is written into. */
const RANGE_ANSWER_CAPACITY = 256 * 1024;
/** Retry-After while a new snapshot's ranges are being made. */
const RANGES_PENDING_RETRY_SECONDS = 2;

interface RangeInput {
  readonly prefix: string;
  readonly padded: boolean | null;
  readonly ifNoneMatch: string;
}

/**
 * GET /v1/verify/upi/range/:prefix, a lookup by the first five hex digits
 * of h(upi) (range-answer.ts), so that the service never learns the payee.
 */
export function registerPrivateLookupRoutes(kit: RouteKit, deps: ApiDependencies): void {
  const { routes, keyed, send } = kit;
  // The answer being written: a few KB (about 5 at 10M VPAs); this room is for ranges of a thousand and more.
  const answerBytes = new ByteScratch(RANGE_ANSWER_CAPACITY);
  const range: Answer<RangeInput> = (x, input) => {
    const prefix = parseRangePrefix(input.prefix);
    if (prefix < 0) throw badRequest('the range prefix must be the first 5 lowercase hex digits of the SHA-256 of the VPA');
    if (input.padded === null) throw badRequest('Upi-Risk-Padding must be "on" or "off"');
    const found = deps.ranges?.rangesFor(x.view) ?? null;
    if (found === null) {
      throw new HttpError(503, 'service_unavailable', 'range lookups for the snapshot being served are still being prepared', { retryAfter: RANGES_PENDING_RETRY_SECONDS });
    }
    const etag = `"${x.view.version}.${input.prefix}${input.padded ? '' : '.u'}"`;
    const headers = ['ETag', etag, 'Cache-Control', RANGE_CACHE_CONTROL, 'Vary', 'Upi-Risk-Padding'];
    if (matchesEtag(input.ifNoneMatch, etag)) {
      send(x, 304, '', headers);
      return;
    }
    send(x, 200, answerRange(x.view, found.ranges, found.delta, prefix, input.padded, answerBytes), headers);
  };
  const rangeRoute = keyed(ROUTE.range, 'screen', readRange, range);
  routes.get('/v1/verify/upi/range/:prefix', rangeRoute);
  routes.get('/v1/verify/upi/range/', rangeRoute);
}

function readRange(req: HttpRequest): RangeInput {
  const padding = req.getHeader('upi-risk-padding').toLowerCase();
  return {
    prefix: req.getParameter(0) ?? '',
    padded: padding === '' || padding === 'on' ? true : padding === 'off' ? false : null,
    ifNoneMatch: req.getHeader('if-none-match'),
  };
}

/** True when an If-None-Match header names `etag` (or is `*`); weak tags match as strong ones do for a GET. */
function matchesEtag(header: string, etag: string): boolean {
  if (header === '') return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
