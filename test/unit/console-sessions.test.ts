import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MemorySessionStore,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  openSession,
  sameCsrfToken,
  sessionCookie,
  sessionHolds,
  sessionTokenOf,
} from '../../src/access/console-sessions.js';
import { hashApiKey } from '../../src/access/api-key.js';
import type { KeyRecord } from '../../src/access/key-record.js';

const admin: KeyRecord = {
  id: 'key_0123456789ab',
  name: 'ops',
  plan: 'default',
  scopes: ['screen', 'admin'],
  limits: null,
  created_at: '2026-11-01T00:00:00.000Z',
  rotated_at: null,
  revoked_at: null,
  hash: hashApiKey('upirisk_example'),
};

test('a session keeps only the hash of its token, and a CSRF token apart from it', () => {
  const { token, session } = openSession(admin, 1_000);
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(session.tokenHash, hashApiKey(token));
  assert.notEqual(session.csrfToken, token);
  assert.equal(session.expiresAt, 1_000 + SESSION_TTL_MS);
  assert.equal(session.keyHash, admin.hash);
});

test('a session stands only while its key is active, unchanged, admin, and the session unexpired', () => {
  const { session } = openSession(admin, 1_000);
  assert.equal(sessionHolds(session, admin, 2_000), true);
  assert.equal(sessionHolds(session, undefined, 2_000), false, 'key gone');
  assert.equal(sessionHolds(session, { ...admin, revoked_at: '2026-11-02T00:00:00.000Z' }, 2_000), false, 'revoked');
  assert.equal(sessionHolds(session, { ...admin, hash: hashApiKey('upirisk_rotated') }, 2_000), false, 'rotated');
  assert.equal(sessionHolds(session, { ...admin, scopes: ['screen'] }, 2_000), false, 'no longer admin');
  assert.equal(sessionHolds(session, admin, session.expiresAt), false, 'expired');
});

test('the session token is read from a Cookie header among other cookies, and only in its shape', () => {
  const token = 'a'.repeat(43);
  assert.equal(sessionTokenOf(`theme=dark; ${SESSION_COOKIE}=${token}; lang=en`), token);
  assert.equal(sessionTokenOf(`${SESSION_COOKIE}=${token}`), token);
  assert.equal(sessionTokenOf(`${SESSION_COOKIE}=short`), null);
  assert.equal(sessionTokenOf(`${SESSION_COOKIE}=${'a'.repeat(42)}!`), null);
  assert.equal(sessionTokenOf('upi_risk_session=' + token), null, 'the cookie without its __Host- prefix is not it');
  assert.equal(sessionTokenOf(''), null);
});

test('any Cookie header is read without throwing, and a token is found only where the cookie names it', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (header) => {
      const token = sessionTokenOf(header);
      assert.ok(token === null || (/^[A-Za-z0-9_-]{43}$/.test(token) && header.includes(`${SESSION_COOKIE}=${token}`)));
    }),
  );
});

test('the cookie is HttpOnly, Secure, SameSite=Strict, for the whole host, with an expiry', () => {
  const cookie = sessionCookie('t'.repeat(43), 28_800);
  for (const part of ['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/', 'Max-Age=28800']) assert.ok(cookie.includes(part), part);
  assert.ok(!/Domain=/i.test(cookie), '__Host- cookies carry no Domain');
});

test('CSRF tokens compare equal only when equal, whatever their lengths', () => {
  assert.equal(sameCsrfToken('abc', 'abc'), true);
  assert.equal(sameCsrfToken('abd', 'abc'), false);
  assert.equal(sameCsrfToken('', 'abc'), false);
  assert.equal(sameCsrfToken('abcd', 'abc'), false);
});

test('the memory store forgets expired sessions and removed ones', async () => {
  const store = new MemorySessionStore();
  const { session } = openSession(admin, 0);
  await store.save(session);
  assert.deepEqual(await store.find(session.tokenHash, 1), session);
  assert.equal(await store.find(session.tokenHash, session.expiresAt), null);
  await store.remove(session.tokenHash);
  assert.equal(await store.find(session.tokenHash, 1), null);
});
