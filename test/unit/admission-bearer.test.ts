import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { KeyRecord } from '../../src/access/key-record.js';
import type { Quota, QuotaDecision } from '../../src/access/quota.js';
import { HttpError } from '../../src/api/http-error.js';
import { createAdmission } from '../../src/http/admission.js';
import { bearerToken } from '../../src/http/caller.js';
import type { Exchange } from '../../src/http/exchange.js';

// Admission keeps the Authorization header it read last and its token, so
// a caller's next request is not parsed again (admission.ts). Whatever the
// order of headers, each request must be admitted or refused, with the
// message, as reading its own header afresh would decide; the keys are
// asked every time, so a key revoked meanwhile is refused at once.

const record = (id: string): KeyRecord => ({
  id,
  name: id,
  plan: 'default',
  scopes: ['screen'],
  limits: null,
  created_at: '2026-01-01T00:00:00.000Z',
  rotated_at: null,
  revoked_at: null,
  hash: 'x'.repeat(64),
});
const ALLOWED: QuotaDecision = { allowed: true, limit: 10, remaining: 9, reset: 0, retryAfter: 0 };
const quota: Quota = { consume: () => ALLOWED, failedAuthentication: () => Promise.resolve(ALLOWED), peekIp: () => Promise.resolve(ALLOWED) };
const exchange = () => ({ res: { getRemoteAddressAsText: () => Buffer.from('203.0.113.7') } as unknown as HttpResponse, quota: null, key: null, session: null }) as unknown as Exchange;
const request = (authorization: string) => ({ getHeader: (name: string) => (name === 'authorization' ? authorization : '') }) as unknown as HttpRequest;

const HEADERS = ['Bearer upirisk_one', 'bearer upirisk_one', 'Bearer upirisk_two', 'Bearer  upirisk_two ', 'Bearer', 'Bearer ', 'Basic upirisk_one', '', 'Bearer upirisk_gone', 'upirisk_one'];

/** What a request with `authorization` comes to: the key's id, or the status and message it is refused with. */
async function outcome(admission: ReturnType<typeof createAdmission>, authorization: string): Promise<string> {
  try {
    return (await admission.admit(exchange(), request(authorization), 'screen')).id;
  } catch (error) {
    assert.ok(error instanceof HttpError, String(error));
    return `${error.status} ${error.message}`;
  }
}

test('each request is decided by its own header, whatever came before it', async () => {
  const revoked = new Set<string>();
  const keys = {
    verify: (presented: string) => (revoked.has(presented) ? null : presented === 'upirisk_one' ? record('key_one') : presented === 'upirisk_two' ? record('key_two') : null),
  };
  const expected = async (authorization: string) => outcome(createAdmission({ keys, quota }), authorization);
  await fc.assert(
    fc.asyncProperty(fc.array(fc.record({ header: fc.constantFrom(...HEADERS), revoke: fc.boolean() }), { maxLength: 30 }), async (steps) => {
      revoked.clear();
      const admission = createAdmission({ keys, quota });
      for (const { header, revoke } of steps) {
        // A key revoked between two requests with the same header.
        if (revoke) revoked.add(typeof bearerToken(header) === 'string' ? (bearerToken(header) as string) : '');
        assert.equal(await outcome(admission, header), await expected(header), header);
      }
    }),
  );
});

test('a missing header after a valid one is a missing header, not a wrong key', async () => {
  const admission = createAdmission({ keys: { verify: () => record('key_one') }, quota });
  assert.equal(await outcome(admission, 'Bearer upirisk_one'), 'key_one');
  assert.match(await outcome(admission, ''), /^401 missing Authorization header/);
  assert.equal(await outcome(admission, 'Bearer upirisk_one'), 'key_one');
});
