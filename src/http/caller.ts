import { BlockList, isIP } from 'node:net';
import type { HttpResponse } from 'uWebSockets.js';
import { unauthorized, type HttpError } from '../api/http-error.js';
import { isHeaderText } from './request-body.js';

/** The token of a `Bearer` Authorization header (scheme case-insensitive, RFC 7235), or the 401 to answer. */
export function bearerToken(header: string): string | HttpError {
  if (header === '') return unauthorized('missing Authorization header; send "Authorization: Bearer <API key>"');
  if (!isHeaderText(header)) return unauthorized('the Authorization header must be visible ASCII: "Bearer <API key>"');
  const space = header.indexOf(' ');
  if (!isBearerScheme(header, space < 0 ? header.length : space)) return unauthorized('the Authorization scheme must be Bearer');
  const token = header.slice(space + 1).trim();
  return token === '' || space < 0 ? unauthorized('missing API key after "Bearer"') : token;
}

const BEARER = 'bearer';

/** Whether `header` up to `end` is "bearer" in any letter case, compared in place: every keyed request asks. */
function isBearerScheme(header: string, end: number): boolean {
  if (end !== BEARER.length) return false;
  // Setting bit 0x20 lower-cases a letter; no other character becomes one of these lower-case letters by it.
  for (let i = 0; i < end; i++) if ((header.charCodeAt(i) | 0x20) !== BEARER.charCodeAt(i)) return false;
  return true;
}

/** The client's IP address as text. */
export function remoteAddress(res: HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

/**
 * Loopback addresses. uWS writes IPv6 addresses in full (`0000:...:0001`),
 * and on a dual-stack listener (`--host ::`) IPv4 clients arrive as
 * IPv4-mapped IPv6 (`...:ffff:7f00:0001`), so compare parsed addresses, not text.
 */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

export function isLoopback(ip: string): boolean {
  const family = isIP(ip);
  return family !== 0 && LOOPBACK.check(ip, family === 6 ? 'ipv6' : 'ipv4');
}
