import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NotFoundError, ResponseFormatError } from '../src/errors.js';
import { scriptedClient } from './fakes.js';

const resolved = {
  version: '20261128T090000123Z-3fa9c1+1042',
  from: '2026-11-28T09:12:03.217Z',
  until: null,
  snapshot: '20261128T090000123Z-3fa9c1',
  position: 1042,
};

test('dataVersion resolves a version kept with a screening record, the "+" percent-encoded in the path', async () => {
  const { client, requests } = scriptedClient((request) =>
    request.url.pathname === '/v1/data-versions/20261128T090000123Z-3fa9c1%2B1042' ? { status: 200, body: resolved } : { status: 404, body: { error: 'not_found', message: 'never served' } },
  );
  assert.deepEqual(await client.dataVersion(resolved.version), resolved);
  assert.equal(requests[0]!.method, 'GET');
  await assert.rejects(client.dataVersion('20200101T000000000Z-000000'), NotFoundError);
});

test('dataVersion refuses an answer without its fields', async () => {
  const { client } = scriptedClient(() => ({ status: 200, body: { ...resolved, until: 7 } }));
  await assert.rejects(client.dataVersion(resolved.version), ResponseFormatError);
});
