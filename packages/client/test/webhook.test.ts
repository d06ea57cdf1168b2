import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { WebhookSignatureError, type WebhookRefusal } from '../src/errors.js';
import { signWebhook, verifyWebhook } from '../src/webhook.js';

const SECRET = 'whsec_3p9QbV0uYk2b';
const T = 1_795_698_429;
const at = (seconds: number) => () => seconds * 1000;
const event = {
  id: 'evt_01JD0Z3M5Q8W2V9K7N4C6B1X0A',
  type: 'vpa.changed',
  watchlist_id: 'wl_6f1d2a9c8b7e4d3f',
  upi: 'merchant42@okaxis',
  before: { upi: 'merchant42@okaxis', status: 'CLEARED', confidence: null, risk_category: null, cluster_id: null, cluster_size: 0, evidence_count: 0 },
  after: { upi: 'merchant42@okaxis', status: 'FLAGGED', confidence: 0.91, risk_category: 'mule', cluster_id: 'MC-1207', cluster_size: 14, evidence_count: 3 },
  data_version: '20261126T101500000Z-3f2a1b+42',
  occurred_at: '2026-11-26T10:21:07.512Z',
};
const body = JSON.stringify(event);

/** The signature computed independently, with node:crypto, as docs/watchlists.md states it. */
const v1 = (t: number, raw: string | Buffer, secret = SECRET) => createHmac('sha256', secret).update(`${t}.`).update(raw).digest('hex');

async function refusal(promise: Promise<unknown>): Promise<WebhookRefusal> {
  const error = await promise.then(() => assert.fail('accepted'), (e: unknown) => e);
  assert.ok(error instanceof WebhookSignatureError, String(error));
  assert.equal(error.code, 'webhook_signature_invalid');
  return error.reason;
}

test('a good signature gives the event, from a string, bytes or an ArrayBuffer', async () => {
  const header = `t=${T},v1=${v1(T, body)}`;
  assert.deepEqual(await verifyWebhook(body, header, SECRET, { now: at(T) }), event);
  const bytes = Buffer.from(body);
  assert.deepEqual(await verifyWebhook(bytes, header, SECRET, { now: at(T + 299) }), event);
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  assert.deepEqual(await verifyWebhook(buffer, header, SECRET, { now: at(T - 299) }), event);
});

test('signWebhook writes what the service sends', async () => {
  assert.equal(await signWebhook(body, SECRET, T), `t=${T},v1=${v1(T, body)}`);
});

test('several v1 entries: any that matches will do; spaces and other schemes are ignored', async () => {
  const header = ` t=${T}, v1=${'0'.repeat(64)}, v2=zz, v1=${v1(T, body)}`;
  assert.equal((await verifyWebhook(body, header, SECRET, { now: at(T) })).id, event.id);
});

test('a tampered body, timestamp or signature, or another secret: no_matching_signature', async () => {
  const good = v1(T, body);
  const now = { now: at(T) };
  assert.equal(await refusal(verifyWebhook(body.replace('0.91', '0.19'), `t=${T},v1=${good}`, SECRET, now)), 'no_matching_signature');
  assert.equal(await refusal(verifyWebhook(body, `t=${T + 1},v1=${good}`, SECRET, { now: at(T + 1) })), 'no_matching_signature');
  const flipped = (good[0] === 'a' ? 'b' : 'a') + good.slice(1);
  assert.equal(await refusal(verifyWebhook(body, `t=${T},v1=${flipped}`, SECRET, now)), 'no_matching_signature');
  assert.equal(await refusal(verifyWebhook(body, `t=${T},v1=${good}`, `${SECRET}x`, now)), 'no_matching_signature');
  // A body parsed and serialised again is not the body that was signed.
  const reserialised = JSON.stringify(JSON.parse(body), null, 1);
  assert.equal(await refusal(verifyWebhook(reserialised, `t=${T},v1=${good}`, SECRET, now)), 'no_matching_signature');
});

test('an old or a future timestamp beyond the tolerance: timestamp_out_of_tolerance', async () => {
  const header = `t=${T},v1=${v1(T, body)}`;
  assert.equal(await refusal(verifyWebhook(body, header, SECRET, { now: at(T + 301) })), 'timestamp_out_of_tolerance');
  assert.equal(await refusal(verifyWebhook(body, header, SECRET, { now: at(T - 301) })), 'timestamp_out_of_tolerance');
  assert.equal(await refusal(verifyWebhook(body, header, SECRET, { now: at(T + 31), toleranceSeconds: 30 })), 'timestamp_out_of_tolerance');
  assert.equal((await verifyWebhook(body, header, SECRET, { now: at(T + 30), toleranceSeconds: 30 })).id, event.id);
});

test('a missing or malformed header: malformed_header', async () => {
  const sig = v1(T, body);
  for (const header of [undefined, null, '', 'v1=' + sig, `t=${T}`, `t=soon,v1=${sig}`, `t=${T},t=${T},v1=${sig}`, `t=${T},v1=${sig.slice(2)}`, `t=${T};v1=${sig}`]) {
    assert.equal(await refusal(verifyWebhook(body, header, SECRET, { now: at(T) })), 'malformed_header', String(header));
  }
});

test('a signed body that is not a JSON object: malformed_body', async () => {
  const raw = 'not json';
  assert.equal(await refusal(verifyWebhook(raw, `t=${T},v1=${v1(T, raw)}`, SECRET, { now: at(T) })), 'malformed_body');
});

test('bad arguments are the caller’s errors, not refusals', async () => {
  await assert.rejects(verifyWebhook(body, `t=${T},v1=${v1(T, body)}`, '', { now: at(T) }), TypeError);
  await assert.rejects(verifyWebhook(body, `t=${T},v1=${v1(T, body)}`, SECRET, { toleranceSeconds: -1 }), RangeError);
});

test('property: any body and secret round-trip, and match node:crypto', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.json(), fc.string({ unit: 'grapheme' }).map((s) => JSON.stringify({ s }))),
      fc.string({ minLength: 1, unit: 'grapheme' }),
      fc.integer({ min: 0, max: 4_000_000_000 }),
      async (raw, secret, t) => {
        const header = await signWebhook(raw, secret, t);
        assert.equal(header, `t=${t},v1=${v1(t, raw, secret)}`);
        assert.deepEqual(await verifyWebhook(raw, header, secret, { now: at(t) }).catch((e: WebhookSignatureError) => e.reason), isObject(raw) ? JSON.parse(raw) : 'malformed_body');
      },
    ),
    { numRuns: 200 },
  );
});

function isObject(raw: string): boolean {
  const value = JSON.parse(raw) as unknown;
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
