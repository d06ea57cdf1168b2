import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskClient } from '../src/client.js';
import { BadRequestError, ResponseFormatError } from '../src/errors.js';
import type { FetchLike } from '../src/transport.js';
import { BASE_URL, answerHeaders, cleared, fakeClock, flagged, itemOf, scriptedFetch, type Reply, type SentRequest } from './fakes.js';

/** A batch answer in the reference form: FLAGGED for VPAs starting with "bad", CLEARED otherwise. */
function referenceAnswer(request: SentRequest, index: number): Reply {
  const upis = (request.body as { upis: string[] }).upis;
  const results = upis.map((upi) => itemOf(upi.startsWith('bad') ? flagged(upi) : cleared(upi)));
  const flaggedCount = results.filter((r) => r.status === 'FLAGGED').length;
  return {
    status: 200,
    body: { results, total: upis.length, flagged_count: flaggedCount, cleared_count: upis.length - flaggedCount },
    headers: answerHeaders(index),
  };
}

function client(fetch: FetchLike, batchConcurrency?: number) {
  const clock = fakeClock();
  return new UpiRiskClient({
    baseUrl: BASE_URL,
    apiKey: 'k',
    fetch,
    now: clock.now,
    sleep: clock.sleep,
    random: () => 0,
    ...(batchConcurrency === undefined ? {} : { batchConcurrency }),
  });
}

const vpas = (n: number) => Array.from({ length: n }, (_, i) => (i % 7 === 0 ? `bad${i}@ybl` : `payee${i}@okaxis`));

test('250 VPAs: requests of 100, 100 and 50, merged in input order with their request ids', async () => {
  // The later chunks answer first: order must come from the input, not from arrival.
  const { fetch, requests } = scriptedFetch(async (request, index) => {
    await new Promise((resolve) => setTimeout(resolve, 30 - index * 10));
    return referenceAnswer(request, index);
  });
  const upis = vpas(250);
  const result = await client(fetch).verifyBatch(upis);
  assert.deepEqual(
    requests.map((r) => (r.body as { upis: string[] }).upis.length),
    [100, 100, 50],
  );
  assert.ok(requests.every((r) => r.method === 'POST' && r.url.pathname === '/v1/verify/upi/batch'));
  assert.deepEqual(requests.flatMap((r) => (r.body as { upis: string[] }).upis), upis);
  assert.deepEqual(result.results.map((r) => r.verdict.upi), upis);
  assert.equal(result.total, 250);
  assert.equal(result.flaggedCount, upis.filter((u) => u.startsWith('bad')).length);
  assert.equal(result.flaggedCount + result.clearedCount, 250);
  assert.deepEqual(result.requests.map((r) => r.requestId), ['req-0', 'req-1', 'req-2']);
  assert.equal(result.results[0]!.requestId, 'req-0');
  assert.equal(result.results[249]!.requestId, 'req-2');
  assert.equal(result.results[249]!.dataVersion, 'snap-1+4');
  const first = result.results[0]!.verdict;
  assert.equal(first.status, 'FLAGGED');
  assert.equal(first.cluster_id, 'MC-12');
  assert.equal(first.confidence, 0.91);
});

test('duplicates are sent and answered one per position', async () => {
  const { fetch, requests } = scriptedFetch(referenceAnswer);
  const upis = ['bad1@ybl', 'x@ybl', 'bad1@ybl', 'x@ybl'];
  const result = await client(fetch).verifyBatch(upis);
  assert.deepEqual((requests[0]!.body as { upis: string[] }).upis, upis);
  assert.deepEqual(result.results.map((r) => r.verdict.status), ['FLAGGED', 'CLEARED', 'FLAGGED', 'CLEARED']);
});

test('at most batchConcurrency requests in flight (4 by default)', async () => {
  for (const [concurrency, expected] of [[undefined, 4], [2, 2]] as const) {
    let inFlight = 0;
    let most = 0;
    const { fetch, requests } = scriptedFetch(async (request, index) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      return referenceAnswer(request, index);
    });
    await client(fetch, concurrency).verifyBatch(vpas(1000));
    assert.equal(requests.length, 10);
    assert.equal(most, expected);
  }
});

test('no VPA, no request', async () => {
  const { fetch, requests } = scriptedFetch([]);
  const result = await client(fetch).verifyBatch([]);
  assert.deepEqual(result, { results: [], total: 0, flaggedCount: 0, clearedCount: 0, requests: [] });
  assert.equal(requests.length, 0);
});

test("the secondary form's bare array of full verdicts is read like the reference form", async () => {
  const { fetch } = scriptedFetch((request) => ({
    status: 200,
    body: (request.body as { upis: string[] }).upis.map((upi) => (upi.startsWith('bad') ? flagged(upi) : cleared(upi))),
  }));
  const result = await client(fetch).verifyBatch(['bad@ybl', 'ok@ybl']);
  assert.deepEqual(result.results.map((r) => r.verdict.status), ['FLAGGED', 'CLEARED']);
  assert.equal(result.flaggedCount, 1);
  assert.equal(result.results[0]!.requestId, null);
});

test('a failing chunk fails the call and cancels the chunks still in flight', async () => {
  const { fetch, requests } = scriptedFetch((request, index) =>
    index === 1 ? { status: 400, body: { error: 'bad_request', message: 'upis[3] is not a valid VPA' } } : { hang: true },
  );
  await assert.rejects(client(fetch).verifyBatch(vpas(450)), BadRequestError);
  assert.equal(requests.length, 4);
});

test('an answer with the wrong number of results, or results for other VPAs, is refused', async () => {
  const short = scriptedFetch([{ status: 200, body: { results: [itemOf(cleared('a@ybl'))], total: 1, flagged_count: 0, cleared_count: 1 } }]);
  await assert.rejects(client(short.fetch).verifyBatch(['a@ybl', 'b@ybl']), ResponseFormatError);
  const swapped = scriptedFetch([{ status: 200, body: { results: [itemOf(cleared('b@ybl')), itemOf(cleared('a@ybl'))] } }]);
  await assert.rejects(client(swapped.fetch).verifyBatch(['a@ybl', 'b@ybl']), /result 0 is for b@ybl/);
  // The service echoes each VPA as sent; case aside, it is the same VPA.
  const cased = scriptedFetch([{ status: 200, body: { results: [itemOf(cleared('A@YBL'))] } }]);
  assert.equal((await client(cased.fetch).verifyBatch(['a@ybl'])).total, 1);
});

test('every VPA must be a non-empty string', async () => {
  const { fetch } = scriptedFetch([]);
  await assert.rejects(client(fetch).verifyBatch(['a@ybl', '']), /upis\[1\]/);
  await assert.rejects(client(fetch).verifyBatch(['a@ybl', 7 as unknown as string]), TypeError);
});
