import type { HttpRequest } from 'uWebSockets.js';
import { badRequest, type HttpError } from '../../api/http-error.js';
import { MALFORMED_QUERY, strictQueryValue } from '../strict-query.js';
import { hasControlCharacter } from '../../common/control-characters.js';

/**
 * What routes read from a request within the handler (the request object is
 * gone after it returns), for the keyed routes' `read`.
 */

/** A route that reads nothing from the request. */
export function noInput(): null {
  return null;
}

/** The path's first parameter (`:id`), empty when absent. */
export function pathId(req: HttpRequest): string {
  return req.getParameter(0) ?? '';
}

/** A paged read's path id, limit and cursor. */
export function page(req: HttpRequest): { id: string; limit: number | HttpError; cursor: string | null | HttpError } {
  return { id: pathId(req), limit: limitOf(req, 100, 1000), cursor: cursorOf(req) };
}

/** The `limit` query parameter: a whole number from 1 to `max`, `fallback` when absent; the 400 to answer otherwise. */
export function limitOf(req: HttpRequest, fallback: number, max: number): number | HttpError {
  const query = req.getQuery();
  const text = query === undefined ? undefined : strictQueryValue(query, 'limit');
  if (text === MALFORMED_QUERY) return badRequest('the query string has a malformed percent-encoding');
  if (text === undefined || text === null) return fallback;
  const limit = /^[0-9]{1,7}$/.test(text) ? Number(text) : NaN;
  return limit >= 1 && limit <= max ? limit : badRequest(`"limit" must be a whole number from 1 to ${max}`);
}

/** The `cursor` query parameter (a VPA or an event id from a previous page), null when absent. */
function cursorOf(req: HttpRequest): string | null | HttpError {
  const query = req.getQuery();
  const text = query === undefined ? undefined : strictQueryValue(query, 'cursor');
  if (text === MALFORMED_QUERY) return badRequest('the query string has a malformed percent-encoding');
  if (text === undefined || text === '') return null;
  if (text.length > 512) return badRequest('"cursor" is longer than any cursor this service hands out');
  // No cursor this service hands out holds one; a store would refuse a NUL in a query parameter.
  return hasControlCharacter(text) ? badRequest('"cursor" holds a control character, which no cursor this service hands out does') : text;
}
