import type { HttpRequest } from 'uWebSockets.js';
import type { KeyRecord, KeyScope } from '../access/key-record.js';
import { hashApiKey } from '../access/api-key.js';
import { sameCsrfToken, sessionTokenOf } from '../access/console-sessions.js';
import type { UsageCounter } from '../access/key-usage.js';
import type { Quota, QuotaDecision } from '../access/quota.js';
import type { AdminAnswer, AdminRequest } from '../api/admin-requests.js';
import { HttpError, forbidden, serviceUnavailable, tooManyRequests, unauthorized } from '../api/http-error.js';
import { bearerToken, remoteAddress } from './caller.js';
import type { Exchange } from './exchange.js';
import type { ServiceMetrics } from './metrics.js';

/** What admission needs of the edge's dependencies (ApiDependencies). */
export interface AdmissionDependencies {
  readonly keys: { verify(presentedKey: string): KeyRecord | null };
  readonly quota: Quota;
  readonly metrics?: ServiceMetrics;
  readonly admin?: (request: AdminRequest) => Promise<AdminAnswer>;
  readonly usage?: UsageCounter;
}

export interface Admission {
  /**
   * The credentials of a request: its Authorization header, or, without
   * one, the console session of its Cookie header. Read within the handler.
   * With the quota in this process the caller is admitted (or refused, by a
   * thrown HttpError) at once; with Redis or a main-thread quota the answer
   * is a promise.
   */
  admit: (x: Exchange, req: HttpRequest, scope: KeyScope) => KeyRecord | Promise<KeyRecord>;
  /** Charge a known key's quota and check its scope (throws the 429 or 403). */
  admitKey: (x: Exchange, record: KeyRecord, scope: KeyScope) => KeyRecord | Promise<KeyRecord>;
  /** Refuse a presented key: charged to the client IP, so keys cannot be guessed at line rate. */
  refuseKey: (x: Exchange, refusal: string | HttpError, ip: string) => Promise<never>;
}

/** Authentication and quota charging for keyed routes, built once per app. */
export function createAdmission(deps: AdmissionDependencies): Admission {
  const metrics = deps.metrics;

  // The Authorization header read last and its token: a caller's requests follow each other on a thread,
  // and the same token string is then found in the keys' map by the hash V8 keeps on it, not hashed afresh.
  let lastAuthorization: string | null = null;
  let lastToken = '';

  /** A failed authentication is charged to the client IP instead of a key. */
  const authorize = (x: Exchange, authorization: string, scope: KeyScope): KeyRecord | Promise<KeyRecord> => {
    const presented = authorization === lastAuthorization ? lastToken : bearerToken(authorization);
    let record: KeyRecord | null = null;
    if (typeof presented === 'string') {
      lastAuthorization = authorization;
      lastToken = presented;
      record = deps.keys.verify(presented);
    }
    if (record === null) return refuseKey(x, presented, remoteAddress(x.res));
    return admitKey(x, record, scope);
  };

  /**
   * Authenticate by the console session of a Cookie header: the main thread
   * knows the sessions. A change (any method but GET) must carry the
   * session's CSRF token. An unknown session is charged to the client IP,
   * like a wrong key.
   */
  const authorizeSession = async (x: Exchange, cookie: string, csrf: string, change: boolean, scope: KeyScope): Promise<KeyRecord> => {
    const ip = remoteAddress(x.res);
    const token = sessionTokenOf(cookie);
    if (token === null || deps.admin === undefined) {
      return refuseKey(x, unauthorized('missing Authorization header; send "Authorization: Bearer <API key>", or sign in to the console'), ip);
    }
    // An IP past its failures is refused before its cookie costs a lookup (in the fleet, a query of the store).
    if ((await deps.quota.peekIp(ip)).remaining <= 0) return refuseKey(x, unauthorized('the console session was not looked up'), ip);
    const tokenHash = hashApiKey(token);
    const answer = await deps.admin({ op: 'session.find', tokenHash });
    // The sessions could not be read (a store outage): not the caller's fault, so neither a 401 nor a charge to its IP.
    if (answer.status !== 200) throw serviceUnavailable('console sessions cannot be looked up just now; try again');
    const found = answer.session ?? null;
    if (found === null) return refuseKey(x, unauthorized('the console session has ended; sign in again'), ip);
    x.session = { ...found, tokenHash };
    // Refused before the key is charged, and charged to the IP like a wrong key: a forged change from another origin costs the key nothing.
    if (change && !sameCsrfToken(csrf, found.csrfToken)) {
      return refuseKey(x, forbidden('a change made with a console session must carry the session\'s X-CSRF-Token header'), ip);
    }
    return admitKey(x, found.key, scope);
  };

  const admitKey = (x: Exchange, record: KeyRecord, scope: KeyScope): KeyRecord | Promise<KeyRecord> => {
    const decision = deps.quota.consume(record);
    return decision instanceof Promise ? decision.then((d) => charge(x, d, record, scope)) : charge(x, decision, record, scope);
  };

  const admit = (x: Exchange, req: HttpRequest, scope: KeyScope): KeyRecord | Promise<KeyRecord> => {
    const authorization = req.getHeader('authorization');
    if (authorization === '' && deps.admin !== undefined) {
      const cookie = req.getHeader('cookie');
      if (cookie !== '') return authorizeSession(x, cookie, req.getHeader('x-csrf-token'), req.getMethod() !== 'get', scope);
    }
    return authorize(x, authorization, scope);
  };

  /** Admit a known key within its quota to a route of `scope`; the request counts against the quota either way. */
  const charge = (x: Exchange, decision: QuotaDecision, record: KeyRecord, scope: KeyScope): KeyRecord => {
    deps.usage?.count(record.id, !decision.allowed);
    x.quota = decision;
    x.key = record;
    if (!decision.allowed) {
      metrics?.rateLimited.inc({ kind: 'key' });
      throw tooManyRequests(decision.retryAfter);
    }
    if (!record.scopes.includes(scope)) throw forbidden(`this API key does not have the "${scope}" scope this endpoint needs`);
    return record;
  };

  const refuseKey = async (x: Exchange, presented: string | HttpError, ip: string): Promise<never> => {
    const decision = await deps.quota.failedAuthentication(ip);
    x.quota = decision;
    if (!decision.allowed) {
      metrics?.rateLimited.inc({ kind: 'auth_failures' });
      throw tooManyRequests(decision.retryAfter);
    }
    throw presented instanceof HttpError ? presented : unauthorized('invalid API key');
  };

  return { admit, admitKey, refuseKey };
}
