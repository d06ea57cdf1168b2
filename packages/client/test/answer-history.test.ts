import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BadRequestError, ResponseFormatError } from '../src/errors.js';
import { scriptedClient } from './fakes.js';

const change = {
  at: '2026-11-28T09:12:03.217Z',
  data_version: '20261128T090000123Z-3fa9c1+1042',
  status: 'FLAGGED',
  risk_category: 'mule',
  confidence: 0.8612,
  cluster_id: 'MC-12',
  cause: 'evidence',
};

test('history asks for the VPA, encoded, and returns its changes as sent', async () => {
  const { client, requests } = scriptedClient((request) => ({ status: 200, body: { upi: request.url.searchParams.get('upi'), changes: [change, { ...change, status: 'CLEARED', risk_category: null, confidence: null, cluster_id: null, cause: 'clearance' }] } }));
  const history = await client.history('Payee+1@ybl');
  assert.equal(requests[0]!.url.pathname, '/v1/verify/upi/history');
  assert.equal(requests[0]!.url.searchParams.get('upi'), 'Payee+1@ybl');
  assert.equal(history.upi, 'Payee+1@ybl');
  assert.deepEqual(history.changes.map((c) => c.cause), ['evidence', 'clearance']);
});

test('history refuses an answer for another VPA, or with a change missing a field', async () => {
  for (const body of [
    { upi: 'other@ybl', changes: [] },
    { upi: 'payee@ybl' },
    { upi: 'payee@ybl', changes: [{ ...change, data_version: 7 }] },
    { upi: 'payee@ybl', changes: [{ ...change, status: 'MAYBE' }] },
  ]) {
    const { client } = scriptedClient(() => ({ status: 200, body }));
    await assert.rejects(client.history('payee@ybl'), ResponseFormatError, JSON.stringify(body));
  }
  const { client } = scriptedClient(() => ({ status: 400, body: { error: 'bad_request', message: '"upi" is not a valid VPA (handle@provider)' } }));
  await assert.rejects(client.history('not-a-vpa'), BadRequestError);
});
