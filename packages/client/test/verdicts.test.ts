import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskClient } from '../src/client.js';
import { ResponseFormatError } from '../src/errors.js';
import { BASE_URL, answerHeaders, cleared, flagged, itemOf, scriptedFetch, type Reply } from './fakes.js';

function clientAnswering(reply: Reply) {
  return new UpiRiskClient({ baseUrl: BASE_URL, apiKey: 'k', fetch: scriptedFetch([reply]).fetch });
}

test('a CLEARED verdict without its optional fields reads as null, 0 and empty', async () => {
  // The spec's guide samples omit these four on CLEARED.
  const sample = { upi: 'new@ybl', status: 'CLEARED', confidence: null, cluster_id: null, sources: [], evidence_count: 0 };
  const result = await clientAnswering({ status: 200, body: sample, headers: answerHeaders(1) }).verify('new@ybl');
  assert.deepEqual(result.verdict, cleared('new@ybl'));
  assert.equal(result.requestId, 'req-1');
  assert.equal(result.dataVersion, 'snap-1+4');
  assert.equal(result.dataAsOf, '2027-01-15T07:59:00.000Z');
});

test('a verdict of only upi and status still reads, every other field defaulted', async () => {
  const single = await clientAnswering({ status: 200, body: { upi: 'new@ybl', status: 'CLEARED' } }).verify('new@ybl');
  assert.deepEqual(single.verdict, cleared('new@ybl'));
  const batch = await clientAnswering({ status: 200, body: { results: [{ upi: 'new@ybl', status: 'CLEARED' }] } }).verifyBatch(['new@ybl']);
  assert.deepEqual(batch.results[0]!.verdict, itemOf(cleared('new@ybl')));
});

test('unknown fields are kept, in verdicts, batch items and the batch answer, never an error', async () => {
  const verdict = { ...flagged('bad@ybl'), velocity_score: 0.4, sources: [{ ...(flagged('x@y').sources as object[])[0], archived: true }] };
  const single = await clientAnswering({ status: 200, body: verdict }).verify('bad@ybl');
  assert.equal((single.verdict as unknown as { velocity_score: number }).velocity_score, 0.4);
  assert.equal((single.verdict.sources[0] as unknown as { archived: boolean }).archived, true);

  const item = { ...itemOf(flagged('bad@ybl')), new_field: 'x' };
  const batch = await clientAnswering({ status: 200, body: { results: [item], total: 1, flagged_count: 1, cleared_count: 0, page: 1 } }).verifyBatch(['bad@ybl']);
  assert.equal((batch.results[0]!.verdict as unknown as { new_field: string }).new_field, 'x');
});

test('what cannot be read is a ResponseFormatError: no upi, an unknown status, not JSON', async () => {
  await assert.rejects(clientAnswering({ status: 200, body: { status: 'CLEARED' } }).verify('a@ybl'), ResponseFormatError);
  await assert.rejects(clientAnswering({ status: 200, body: { upi: 'a@ybl', status: 'MAYBE' } }).verify('a@ybl'), /MAYBE/);
  await assert.rejects(clientAnswering({ status: 200, body: [1] }).verify('a@ybl'), ResponseFormatError);
  const notJson = new UpiRiskClient({
    baseUrl: BASE_URL,
    apiKey: 'k',
    fetch: async () => new Response('<html>', { status: 200, headers: { 'x-request-id': 'r' } }),
  });
  await assert.rejects(notJson.verify('a@ybl'), (e) => e instanceof ResponseFormatError && e.requestId === 'r' && e.status === 200);
});

test('a verdict for another VPA than the one asked about (a cache that ignored the query) is a ResponseFormatError', async () => {
  const other = clientAnswering({ status: 200, body: cleared('someone.else@ybl'), headers: answerHeaders(2) });
  await assert.rejects(other.verify('a@ybl'), (e) => e instanceof ResponseFormatError && e.requestId === 'req-2' && /someone\.else@ybl, not a@ybl/.test(e.message));
  // The canonical form is lower-case: the same VPA in another case is the one asked about.
  assert.equal((await clientAnswering({ status: 200, body: flagged('shop.42@okaxis') }).verify('Shop.42@OKAXIS')).verdict.status, 'FLAGGED');
});

test('a cluster is returned as it came, with the answer headers', async () => {
  const cluster = {
    cluster_id: 'MC-12',
    size: 2,
    created_at: '2026-06-01T04:30:00.000Z',
    last_updated: '2026-06-02T04:30:00.000Z',
    risk_category: 'mule',
    confidence: 0.93,
    members: [{ upi: 'a@ybl', confidence: 0.9, first_seen: '2026-06-01T04:30:00.000Z' }],
    top_sources: [{ url: 'https://t.me/gang', category: 'telegram', member_count: 2 }],
    total_evidence_count: 4,
  };
  const { fetch, requests } = scriptedFetch([{ status: 200, body: cluster, headers: answerHeaders(3) }]);
  const result = await new UpiRiskClient({ baseUrl: `${BASE_URL}/`, apiKey: 'k', fetch }).cluster('MC-12');
  assert.deepEqual(result.cluster, cluster);
  assert.equal(result.requestId, 'req-3');
  assert.equal(requests[0]!.url.href, `${BASE_URL}/v1/verify/upi/cluster/MC-12`);
});
