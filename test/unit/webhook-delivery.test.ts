import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { DEFAULT_DELIVERY, retryDelay, signature } from '../../src/watch/webhook-delivery.js';
import { signingSecrets } from '../../src/watch/watchlist.js';

test('the signature is t=<seconds>,v1=HMAC-SHA256 of "<t>.<body>" under the secret', () => {
  fc.assert(
    fc.property(fc.string(), fc.string({ minLength: 1 }), fc.integer({ min: 0, max: 4_000_000_000_000 }), (body, secret, now) => {
      const t = Math.floor(now / 1000);
      assert.equal(signature(body, secret, now), `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`);
    }),
  );
});

test("a rotation's previous secret, while kept, signs beside the new one with a second v1", () => {
  const body = '{"id":"evt"}';
  const now = 1_800_000_000_123;
  const t = Math.floor(now / 1000);
  const v1 = (secret: string) => createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  assert.equal(signature(body, ['whsec_new', 'whsec_old'], now), `t=${t},v1=${v1('whsec_new')},v1=${v1('whsec_old')}`);
  assert.equal(signature(body, ['whsec_new'], now), signature(body, 'whsec_new', now));
  const w = { id: 'wl_1', owner: 'k', name: 'n', webhook_url: 'https://h.example/', filters: {}, secret: 'whsec_new', created_at: '2026-11-29T00:00:00.000Z', previous: { secret: 'whsec_old', until: now + 1 } };
  assert.deepEqual(signingSecrets(w, now), ['whsec_new', 'whsec_old']);
  assert.deepEqual(signingSecrets(w, now + 1), ['whsec_new'], 'not at its time');
  assert.deepEqual(signingSecrets({ ...w, previous: undefined }, now), ['whsec_new']);
});

test('retries back off exponentially from the first delay to the cap, with jitter within the ceiling', () => {
  const policy = DEFAULT_DELIVERY;
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 40 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempts, r) => {
      const ceiling = Math.min(policy.maxRetryMs, policy.firstRetryMs * 2 ** (attempts - 1));
      const delay = retryDelay(attempts, policy, () => r);
      assert.ok(delay >= Math.round(ceiling * 0.1) && delay <= ceiling, `${attempts}: ${delay} of ${ceiling}`);
    }),
  );
  assert.equal(retryDelay(1, policy, () => 1 - Number.EPSILON), 10_000);
  assert.equal(retryDelay(3, policy, () => 1 - Number.EPSILON), 40_000);
  assert.equal(retryDelay(30, policy, () => 1 - Number.EPSILON), 15 * 60_000);
});
