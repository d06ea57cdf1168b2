import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskClient } from '../src/client.js';
import { NotFoundError, ResponseFormatError } from '../src/errors.js';
import { BASE_URL, fakeClock, scriptedFetch, type Reply, type SentRequest } from './fakes.js';

function clientFor(answer: (request: SentRequest) => Reply) {
  const clock = fakeClock();
  const { fetch, requests } = scriptedFetch(answer);
  return { client: new UpiRiskClient({ baseUrl: BASE_URL, apiKey: 'k', fetch, now: clock.now, sleep: clock.sleep, random: () => 0 }), requests };
}

const resolved = {
  version: '20261128T090000123Z-3fa9c1+1042',
  from: '2026-11-28T09:12:03.217Z',
  until: null,
  snapshot: '20261128T090000123Z-3fa9c1',
  position: 1042,
};

test('dataVersion resolves a version kept with a screening record, the "+" percent-encoded in the path', async () => {
  const { client, requests } = clientFor((request) =>
    request.url.pathname === '/v1/data-versions/20261128T090000123Z-3fa9c1%2B1042' ? { status: 200, body: resolved } : { status: 404, body: { error: 'not_found', message: 'never served' } },
  );
  assert.deepEqual(await client.dataVersion(resolved.version), resolved);
  assert.equal(requests[0]!.method, 'GET');
  await assert.rejects(client.dataVersion('20200101T000000000Z-000000'), NotFoundError);
});

test('dataVersion refuses an answer without its fields', async () => {
  const { client } = clientFor(() => ({ status: 200, body: { ...resolved, until: 7 } }));
  await assert.rejects(client.dataVersion(resolved.version), ResponseFormatError);
});
