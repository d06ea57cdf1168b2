import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { SESSION_COOKIE } from '../../src/access/console-sessions.js';
import type { KeyRecord } from '../../src/access/key-record.js';
import type { Quota, QuotaDecision } from '../../src/access/quota.js';
import type { AdminAnswer } from '../../src/api/admin-requests.js';
import { HttpError } from '../../src/api/http-error.js';
import { createAdmission } from '../../src/http/admission.js';
import type { Exchange } from '../../src/http/exchange.js';

// A request made with a console session: what it is charged, and to whom.
// A change without the session's CSRF token is refused before the key is
// charged, and charged to the IP like a wrong key (a forged request from
// another origin costs the key nothing); a session store that cannot
// answer is a 503, neither a 401 nor a failure charged to the IP.

const KEY: KeyRecord = {
  id: 'key_aaaaaaaaaaaa',
  name: 'ops',
  plan: 'default',
  scopes: ['screen', 'admin'],
  limits: null,
  created_at: '2026-01-01T00:00:00.000Z',
  rotated_at: null,
  revoked_at: null,
  hash: 'x'.repeat(64),
};
const CSRF = randomBytes(32).toString('base64url');
const ALLOWED: QuotaDecision = { allowed: true, limit: 10, remaining: 9, reset: 0, retryAfter: 0 };

function setting(session: AdminAnswer) {
  const charged = { key: 0, ip: 0 };
  const quota: Quota = {
    consume: () => {
      charged.key++;
      return ALLOWED;
    },
    failedAuthentication: () => {
      charged.ip++;
      return Promise.resolve(ALLOWED);
    },
    peekIp: () => Promise.resolve(ALLOWED),
  };
  const admission = createAdmission({ keys: { verify: () => null }, quota, admin: () => Promise.resolve(session) });
  const exchange = () => ({ res: { getRemoteAddressAsText: () => Buffer.from('203.0.113.7') } as unknown as HttpResponse, quota: null, key: null, session: null }) as unknown as Exchange;
  const request = (method: string, csrf: string): HttpRequest =>
    ({
      getHeader: (name: string) => ({ cookie: `${SESSION_COOKIE}=${randomBytes(32).toString('base64url')}`, 'x-csrf-token': csrf })[name] ?? '',
      getMethod: () => method,
    }) as unknown as HttpRequest;
  const admit = (method: string, csrf: string) => Promise.resolve(admission.admit(exchange(), request(method, csrf), 'admin'));
  return { admit, charged };
}

const status = (expected: number) => (error: unknown) => error instanceof HttpError && error.status === expected;

test('a change without the session CSRF token is charged to the IP, not the key; with it, to the key once', async () => {
  const { admit, charged } = setting({ status: 200, body: '', session: { key: KEY, csrfToken: CSRF, expiresAt: Date.now() + 60_000 } });
  await assert.rejects(admit('post', ''), status(403));
  await assert.rejects(admit('delete', 'y'.repeat(43)), status(403));
  assert.deepEqual(charged, { key: 0, ip: 2 });
  assert.equal((await admit('post', CSRF)).id, KEY.id);
  assert.equal((await admit('get', '')).id, KEY.id, 'a read needs no token');
  assert.deepEqual(charged, { key: 2, ip: 2 });
});

test('sessions that cannot be read answer 503, charging neither the key nor the IP; an ended session is charged to the IP', async () => {
  const down = setting({ status: 503, body: '{"error":"service_unavailable"}' });
  await assert.rejects(down.admit('get', ''), status(503));
  assert.deepEqual(down.charged, { key: 0, ip: 0 });
  const ended = setting({ status: 200, body: '', session: null });
  await assert.rejects(ended.admit('get', ''), status(401));
  assert.deepEqual(ended.charged, { key: 0, ip: 1 });
});
