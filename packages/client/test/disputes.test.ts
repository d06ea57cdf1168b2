import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, NotFoundError, ResponseFormatError, ServiceUnavailableError, ValidationError } from '../src/errors.js';
import { scriptedClient, type SentRequest } from './fakes.js';

const dispute = {
  id: 'dsp_019cbf2a41c8a3f09e1d5b27c4e6',
  upi: 'shop.42@okaxis',
  status: 'OPEN',
  reason: 'not_fraud',
  details: 'our merchant since 2019',
  reference: 'CASE-1',
  created_at: '2027-01-15T08:00:00.000Z',
  resolved_at: null,
  resolution_note: null,
};

const call = (r: SentRequest) => `${r.method} ${r.url.pathname}${r.url.search}`;

test('dispute, getDispute, listDisputes and report: methods, paths and bodies of docs/api.md', async () => {
  const { client, requests } = scriptedClient((request) => {
    switch (`${request.method} ${request.url.pathname}`) {
      case 'POST /v1/disputes':
        return { status: 201, body: dispute };
      case `GET /v1/disputes/${dispute.id}`:
        return { status: 200, body: dispute };
      case 'GET /v1/disputes':
        return { status: 200, body: { disputes: [dispute], next_cursor: null } };
      case 'POST /v1/reports':
        return { status: 202, body: { id: 'rep_019cbf2a41c8a3f09e1d5b27c4e7', status: 'RECEIVED' } };
      default:
        return { status: 404, body: { error: 'not_found', message: request.url.pathname } };
    }
  });
  const request = { upi: 'Shop.42@okaxis', reason: 'not_fraud' as const, details: 'our merchant since 2019', reference: 'CASE-1' };
  assert.deepEqual(await client.dispute(request), dispute);
  assert.deepEqual(requests[0]!.body, request);
  assert.equal(requests[0]!.headers['content-type'], 'application/json');
  assert.deepEqual(await client.getDispute(dispute.id), dispute);
  assert.deepEqual((await client.listDisputes({ limit: 10 })).disputes, [dispute]);
  const report = { upi: 'payee@ybl', outcome: 'confirmed_fraud' as const, risk_category: 'mule' as const, occurred_at: '2027-01-14T10:00:00Z' };
  assert.deepEqual(await client.report(report), { id: 'rep_019cbf2a41c8a3f09e1d5b27c4e7', status: 'RECEIVED' });
  assert.deepEqual(requests[3]!.body, report);
  await assert.rejects(client.getDispute('dsp/../x'), NotFoundError);
  assert.deepEqual(requests.map(call), [
    'POST /v1/disputes',
    `GET /v1/disputes/${dispute.id}`,
    'GET /v1/disputes?limit=10',
    'POST /v1/reports',
    // Ids are path segments, encoded: they cannot reach another route.
    'GET /v1/disputes/dsp%2F..%2Fx',
  ]);
  // Bad arguments reject (never throw), and send nothing.
  const sent = requests.length;
  for (const bad of [
    () => client.getDispute(''),
    () => client.dispute(null as never),
    () => client.dispute({ ...request, upi: '' }),
    () => client.report('payee@ybl' as never),
    () => client.report({ outcome: 'false_positive' } as never),
  ]) {
    await assert.rejects(bad(), TypeError);
  }
  await assert.rejects(async () => await client.listDisputes({ limit: 0 }), RangeError);
  assert.equal(requests.length, sent);
});

test('a dispute answered for another VPA than the one disputed is a ResponseFormatError', async () => {
  const { client } = scriptedClient(() => ({ status: 201, body: { ...dispute, upi: 'other@ybl' }, headers: { 'x-request-id': 'req-d' } }));
  await assert.rejects(
    client.dispute({ upi: 'shop.42@okaxis', reason: 'other', details: '' }),
    (e) => e instanceof ResponseFormatError && e.requestId === 'req-d' && /other@ybl, not shop\.42@okaxis/.test(e.message),
  );
  const { upi: _, ...withoutUpi } = dispute;
  const bare = scriptedClient(() => ({ status: 201, body: withoutUpi }));
  await assert.rejects(bare.client.dispute({ upi: 'shop.42@okaxis', reason: 'other', details: '' }), ResponseFormatError);
});

test("a second open dispute is a ConflictError naming the first; the service's refusals keep their classes", async () => {
  const { client } = scriptedClient((request) => {
    const upi = (request.body as { upi: string }).upi;
    if (upi === 'again@ybl') return { status: 409, body: { error: 'conflict', message: 'this key has an open dispute of again@ybl already', dispute_id: dispute.id } };
    if (upi === 'clean@ybl') return { status: 422, body: { error: 'validation_error', message: 'clean@ybl is CLEARED' } };
    // A proxy's page, without the service's body: taken by its status.
    return { status: 409, body: '<html>conflict</html>' };
  });
  const conflict = await client.dispute({ upi: 'again@ybl', reason: 'other', details: '' }).then(
    () => assert.fail('resolved'),
    (error: unknown) => error,
  );
  assert.ok(conflict instanceof ConflictError);
  assert.equal(conflict.code, 'conflict');
  assert.equal(conflict.status, 409);
  assert.equal(conflict.name, 'ConflictError');
  assert.equal(conflict.disputeId, dispute.id);
  await assert.rejects(client.dispute({ upi: 'clean@ybl', reason: 'other', details: '' }), ValidationError);
  await assert.rejects(client.dispute({ upi: 'proxied@ybl', reason: 'other', details: '' }), (error: unknown) => error instanceof ConflictError && error.disputeId === null);
});

test('a report carries one Idempotency-Key on every attempt, so a lost answer is retried; a 503 is retried too', async () => {
  const lost = scriptedClient((_, index) => (index < 2 ? { reset: true } : { status: 202, body: { id: 'rep_1', status: 'RECEIVED' } }));
  assert.deepEqual(await lost.client.report({ upi: 'payee@ybl', outcome: 'confirmed_fraud' }), { id: 'rep_1', status: 'RECEIVED' });
  assert.equal(lost.requests.length, 3);
  const keys = lost.requests.map((r) => r.headers['idempotency-key']);
  assert.match(keys[0]!, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.deepEqual(new Set(keys).size, 1, 'the same key on every attempt');
  await lost.client.report({ upi: 'payee@ybl', outcome: 'confirmed_fraud' });
  assert.notEqual(lost.requests[3]!.headers['idempotency-key'], keys[0], 'another report, another key');

  const busy = scriptedClient((_, index) => (index < 2 ? { status: 503, body: { error: 'service_unavailable', message: 'store down' } } : { status: 202, body: { id: 'rep_1', status: 'RECEIVED' } }));
  assert.deepEqual(await busy.client.report({ upi: 'payee@ybl', outcome: 'false_positive' }, { idempotencyKey: 'PAY-2027-000042' }), { id: 'rep_1', status: 'RECEIVED' });
  assert.equal(busy.requests.length, 3);
  assert.deepEqual(busy.clock.delays, [1_000, 2_000]);
  assert.deepEqual(busy.requests.map((r) => r.headers['idempotency-key']), ['PAY-2027-000042', 'PAY-2027-000042', 'PAY-2027-000042']);
  for (const bad of ['', 'has space', 'x'.repeat(256), 42]) {
    await assert.rejects(busy.client.report({ upi: 'payee@ybl', outcome: 'false_positive' }, { idempotencyKey: bad as string }), TypeError);
  }
  assert.equal(busy.requests.length, 3, 'nothing sent with a bad key');

  const down = scriptedClient(() => ({ status: 503, body: { error: 'service_unavailable', message: 'store down' } }));
  await assert.rejects(down.client.getDispute(dispute.id), ServiceUnavailableError);
  assert.equal(down.requests.length, 4, 'a read is retried 3 times');
});
