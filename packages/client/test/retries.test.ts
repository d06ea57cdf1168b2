import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskClient, type UpiRiskClientOptions } from '../src/client.js';
import {
  AbortError,
  ApiError,
  BadRequestError,
  ForbiddenError,
  InternalError,
  NetworkError,
  NotFoundError,
  RateLimitError,
  ServiceUnavailableError,
  TimeoutError,
  UnauthorizedError,
  ValidationError,
} from '../src/errors.js';
import { BASE_URL, answerHeaders, cleared, fakeClock, scriptedFetch, type Reply } from './fakes.js';

// random() = 0.5 makes every jitter exactly 250 ms.
const JITTER = 250;
const ok: Reply = { status: 200, body: cleared('a@ybl'), headers: answerHeaders(9) };
const rateLimited = (headers: Record<string, string> = {}, body: Record<string, unknown> = {}): Reply => ({
  status: 429,
  body: { error: 'rate_limit_exceeded', message: 'slow down', ...body },
  headers: { 'x-request-id': 'req-429', ...headers },
});
const failure = (status: number, error: string): Reply => ({ status, body: { error, message: error }, headers: { 'x-request-id': `req-${status}` } });

function setup(script: readonly Reply[], options: Partial<UpiRiskClientOptions> = {}) {
  const clock = fakeClock();
  const { fetch, requests } = scriptedFetch(script);
  const client = new UpiRiskClient({ baseUrl: BASE_URL, apiKey: 'upirisk_test', fetch, now: clock.now, sleep: clock.sleep, random: () => 0.5, ...options });
  return { client, clock, requests };
}

test('429 with Retry-After: waits exactly that long plus jitter, then succeeds', async () => {
  const { client, clock, requests } = setup([rateLimited({ 'retry-after': '7' }), rateLimited({ 'retry-after': '3' }), ok]);
  const result = await client.verify('a@ybl');
  assert.equal(result.verdict.status, 'CLEARED');
  assert.equal(result.requestId, 'req-9');
  assert.deepEqual(clock.delays, [7000 + JITTER, 3000 + JITTER]);
  assert.equal(requests.length, 3);
});

test("429 with only the body's retry_after, or both (the larger), or an HTTP date", async () => {
  const body = setup([rateLimited({}, { retry_after: 5 }), ok]);
  await body.client.verify('a@ybl');
  assert.deepEqual(body.clock.delays, [5000 + JITTER]);

  const both = setup([rateLimited({ 'retry-after': '2' }, { retry_after: 4 }), ok]);
  await both.client.verify('a@ybl');
  assert.deepEqual(both.clock.delays, [4000 + JITTER]);

  const clock = fakeClock();
  const date = new Date(clock.now() + 12_000).toUTCString();
  const dated = setup([rateLimited({ 'retry-after': date }), ok], { now: clock.now });
  await dated.client.verify('a@ybl');
  assert.deepEqual(dated.clock.delays, [12_000 + JITTER]);
});

test('429 without Retry-After: 1 s doubling to a 32 s cap, each with jitter', async () => {
  const { client, clock, requests } = setup([...Array<Reply>(8).fill(rateLimited()), ok], { deadlineMs: 600_000 });
  await client.verify('a@ybl');
  assert.deepEqual(
    clock.delays,
    [1000, 2000, 4000, 8000, 16000, 32000, 32000, 32000].map((d) => d + JITTER),
  );
  assert.equal(requests.length, 9);
});

test('a Retry-After shorter than the backoff step, or 0, waits the step: never a hot loop', async () => {
  // Answered 429 with Retry-After: 0 fifty times, then cleared: no wait may be 0.
  const clock = fakeClock();
  const { fetch, requests } = scriptedFetch((_, index) => (index < 50 ? rateLimited({ 'retry-after': '0' }) : ok));
  const client = new UpiRiskClient({ baseUrl: BASE_URL, apiKey: 'upirisk_test', fetch, now: clock.now, sleep: clock.sleep, random: () => 0 });
  const error = await client.verify('a@ybl', { deadlineMs: 5_000 }).then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(error instanceof RateLimitError, `got ${String(error)}`);
  assert.equal(error.retryAfter, 0);
  // 1 s, then 2 s; 4 s more would leave no time before the 5 s deadline.
  assert.deepEqual(clock.delays, [1000, 2000]);
  assert.equal(requests.length, 3);

  const shorter = setup([rateLimited({ 'retry-after': '1' }), rateLimited({ 'retry-after': '1' }), ok]);
  await shorter.client.verify('a@ybl');
  assert.deepEqual(shorter.clock.delays, [1000 + JITTER, 2000 + JITTER]);
});

test('a wait that overran the deadline (a suspended process) ends with the error that asked for it, not a TimeoutError', async () => {
  const { client, clock, requests } = setup([rateLimited()], {
    sleep: async (ms) => {
      clock.advance(ms + 120_000);
    },
  });
  await assert.rejects(client.verify('a@ybl'), (e) => e instanceof RateLimitError && e.requestId === 'req-429');
  assert.equal(requests.length, 1);
  // No attempt either when the wait would leave less than MIN_ATTEMPT_MS of the deadline.
  const tight = setup([failure(503, 'service_unavailable')]);
  await assert.rejects(tight.client.verify('a@ybl', { deadlineMs: 1_050 }), ServiceUnavailableError);
  assert.deepEqual(tight.clock.delays, []);
});

test('503 with Retry-After: waits that long when it is longer than the step, within the 3 retries and the deadline', async () => {
  const { client, clock, requests } = setup([
    { ...failure(503, 'service_unavailable'), headers: { 'retry-after': '5' } },
    { ...failure(503, 'service_unavailable'), headers: { 'retry-after': '1' } },
    ok,
  ]);
  await client.verify('a@ybl');
  assert.deepEqual(clock.delays, [5000, 2000]);
  assert.equal(requests.length, 3);

  const hashing = setup([{ ...failure(503, 'service_unavailable'), headers: { 'retry-after': '2' } }]);
  await assert.rejects(hashing.client.verify('a@ybl'), ServiceUnavailableError);
  assert.deepEqual(hashing.clock.delays, [2000, 2000, 4000]);

  const tooLong = setup([{ ...failure(503, 'service_unavailable'), headers: { 'retry-after': '120' } }]);
  await assert.rejects(tooLong.client.verify('a@ybl'), ServiceUnavailableError);
  assert.deepEqual(tooLong.clock.delays, []);
  assert.equal(tooLong.requests.length, 1);
});

test('jitter spans 0 to 500 ms of the injected random', async () => {
  for (const [random, jitter] of [[0, 0], [0.999_999, 500], [0.2, 100]] as const) {
    const { client, clock } = setup([rateLimited(), ok], { random: () => random });
    await client.verify('a@ybl');
    assert.deepEqual(clock.delays, [1000 + jitter]);
  }
});

test('429 retries stop when the next wait would pass the deadline (60 s by default): RateLimitError', async () => {
  const { client, clock, requests } = setup([rateLimited()]);
  const error = await client.verify('a@ybl').then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(error instanceof RateLimitError);
  assert.equal(error.retryAfter, null);
  assert.equal(error.requestId, 'req-429');
  assert.equal(error.status, 429);
  // 1.25 + 2.25 + 4.25 + 8.25 + 16.25 = 32.25 s slept; 32.25 more would end past 60 s.
  assert.deepEqual(clock.delays, [1000, 2000, 4000, 8000, 16000].map((d) => d + JITTER));
  assert.equal(requests.length, 6);
});

test('a Retry-After past the deadline is not waited for', async () => {
  const { client, clock, requests } = setup([rateLimited({ 'retry-after': '120' })]);
  await assert.rejects(client.verify('a@ybl'), (e) => e instanceof RateLimitError && e.retryAfter === 120);
  assert.deepEqual(clock.delays, []);
  assert.equal(requests.length, 1);
});

for (const [status, code, ErrorClass] of [
  [500, 'internal_error', InternalError],
  [503, 'service_unavailable', ServiceUnavailableError],
] as const) {
  test(`${status}: up to 3 retries after 1, 2 and 4 s, then ${ErrorClass.name}`, async () => {
    const { client, clock, requests } = setup([failure(status, code)]);
    await assert.rejects(client.verify('a@ybl'), (e) => e instanceof ErrorClass && e.status === status && e.requestId === `req-${status}`);
    assert.deepEqual(clock.delays, [1000, 2000, 4000]);
    assert.equal(requests.length, 4);
  });
}

test('a 5xx without a JSON body (a proxy page) is retried and typed by its status', async () => {
  const { client, clock } = setup([{ status: 503, headers: { 'content-type': 'text/html' } }, ok]);
  await client.verify('a@ybl');
  assert.deepEqual(clock.delays, [1000]);
  const gateway = setup([{ status: 502 }]);
  await assert.rejects(gateway.client.verify('a@ybl'), (e: unknown) => e instanceof Error && (e as { code?: string }).code === 'http_502');
  assert.deepEqual(gateway.clock.delays, [1000, 2000, 4000]);
});

test('a connection reset is retried like a 503; 500, 503 and resets share the 3 retries', async () => {
  const resets = setup([{ reset: true }]);
  await assert.rejects(resets.client.verify('a@ybl'), (e) => e instanceof NetworkError && e.status === null && /ECONNRESET/.test(e.message));
  assert.deepEqual(resets.clock.delays, [1000, 2000, 4000]);
  assert.equal(resets.requests.length, 4);

  const mixed = setup([failure(503, 'service_unavailable'), { reset: true }, failure(500, 'internal_error'), ok]);
  assert.equal((await mixed.client.verify('a@ybl')).verdict.upi, 'a@ybl');
  assert.deepEqual(mixed.clock.delays, [1000, 2000, 4000]);
});

test('rate-limit and failure retries are counted apart', async () => {
  const { client, clock } = setup([rateLimited(), failure(500, 'internal_error'), rateLimited(), failure(503, 'service_unavailable'), ok]);
  await client.verify('a@ybl');
  assert.deepEqual(clock.delays, [1000 + JITTER, 1000, 2000 + JITTER, 2000]);
});

for (const [status, code, ErrorClass] of [
  [400, 'bad_request', BadRequestError],
  [401, 'unauthorized', UnauthorizedError],
  [403, 'forbidden', ForbiddenError],
  [404, 'not_found', NotFoundError],
  [422, 'validation_error', ValidationError],
] as const) {
  test(`${status} ${code} is never retried: ${ErrorClass.name}`, async () => {
    const { client, clock, requests } = setup([{ status, body: { error: code, message: `it is ${code}` }, headers: { 'x-request-id': 'req-x' } }]);
    const error = await client.verify('a@ybl').then(() => assert.fail('resolved'), (e: unknown) => e);
    assert.ok(error instanceof ErrorClass);
    assert.equal(error.name, ErrorClass.name);
    assert.equal(error.code, code);
    assert.equal(error.status, status);
    assert.equal(error.requestId, 'req-x');
    assert.equal(error.message, `it is ${code}`);
    assert.deepEqual(clock.delays, []);
    assert.equal(requests.length, 1);
  });
}

test('creating a watchlist is retried on 429 and 503 only: a 500 or a lost answer may have created it', async () => {
  const created = { status: 201, body: { id: 'wl_1', name: 'n', webhook_url: 'https://h.example/w', filters: null, secret: 's', created_at: 'x' } };
  const request = { name: 'n', webhook_url: 'https://h.example/w' };
  for (const reply of [failure(500, 'internal_error'), { reset: true } as const]) {
    const { client, clock, requests } = setup([reply, created]);
    await assert.rejects(client.createWatchlist(request));
    assert.deepEqual(clock.delays, []);
    assert.equal(requests.length, 1);
  }
  const { client, clock } = setup([rateLimited(), failure(503, 'service_unavailable'), created]);
  assert.equal((await client.createWatchlist(request)).secret, 's');
  assert.deepEqual(clock.delays, [1000 + JITTER, 1000]);
});

test("a request that is not idempotent is retried on the service's own 503 only: a proxy's may come after the service took it", async () => {
  const created = { status: 201, body: { id: 'wl_1', name: 'n', webhook_url: 'https://h.example/w', filters: null, secret: 's', created_at: 'x' } };
  const request = { name: 'n', webhook_url: 'https://h.example/w' };
  const proxyPages: Reply[] = [
    { status: 503, headers: { 'content-type': 'text/html' } },
    { status: 503, body: '<html>upstream down</html>' },
    { status: 503, body: { error: 'upstream_timeout', message: 'the gateway gave up' } },
  ];
  for (const reply of proxyPages) {
    const { client, clock, requests } = setup([reply, created]);
    await assert.rejects(client.createWatchlist(request), (e) => e instanceof ApiError && e.status === 503);
    assert.deepEqual(clock.delays, []);
    assert.equal(requests.length, 1);
  }
  for (const call of [
    (client: UpiRiskClient) => client.dispute({ upi: 'payee@ybl', reason: 'other', details: '' }),
    (client: UpiRiskClient) => client.rotateWatchlistSecret('wl_1'),
  ]) {
    const { client, requests } = setup([{ status: 503 }, ok]);
    await assert.rejects(call(client), ServiceUnavailableError);
    assert.equal(requests.length, 1);
  }
  // A read is retried on any 503, and so is a report, which carries its Idempotency-Key.
  const read = setup([{ status: 503 }, ok]);
  await read.client.verify('a@ybl');
  assert.equal(read.requests.length, 2);
  const report = setup([{ status: 503 }, { status: 202, body: { id: 'rep_1', status: 'RECEIVED' } }]);
  await report.client.report({ upi: 'payee@ybl', outcome: 'confirmed_fraud' });
  assert.equal(report.requests.length, 2);
});

test('an attempt past timeoutMs is retried like a lost answer, then TimeoutError', async () => {
  const { client, clock, requests } = setup([{ hang: true }], { timeoutMs: 20 });
  const error = await client.verify('a@ybl').then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(error instanceof TimeoutError);
  assert.equal(error.deadline, false);
  assert.deepEqual(clock.delays, [1000, 2000, 4000]);
  assert.equal(requests.length, 4);
});

test('the deadline cuts a request in flight short: TimeoutError, not retried', async () => {
  // The fake clock stands still, so the request gets the whole 50 ms, cut by a real timer.
  const { client, requests } = setup([{ hang: true }]);
  const started = Date.now();
  const error = await client.verify('a@ybl', { deadlineMs: 50 }).then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(error instanceof TimeoutError && error.deadline);
  assert.equal(requests.length, 1);
  assert.ok(Date.now() - started < 5_000);
});

test('the deadline cuts a retry schedule short: no wait that would end past it', async () => {
  const { client, clock, requests } = setup([failure(503, 'service_unavailable')]);
  await assert.rejects(client.verify('a@ybl', { deadlineMs: 3_500 }), ServiceUnavailableError);
  // 1 s, then 2 s (3 s in all); 4 s more would end at 7 s.
  assert.deepEqual(clock.delays, [1000, 2000]);
  assert.equal(requests.length, 3);
});

test('an AbortSignal cuts a wait between attempts short, whatever the sleep does', async () => {
  const controller = new AbortController();
  const { client, requests } = setup([failure(503, 'service_unavailable')], {
    // A sleep that never ends: only the signal can end the wait.
    sleep: () => new Promise<void>(() => {}),
  });
  setTimeout(() => controller.abort(new Error('user left')), 10);
  const error = await client.verify('a@ybl', { signal: controller.signal }).then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(error instanceof AbortError);
  assert.equal((error.cause as Error).message, 'user left');
  assert.equal(requests.length, 1);
});

test('a sleep that rejects on abort with its own error still ends the call with AbortError', async () => {
  const controller = new AbortController();
  const { client } = setup([failure(503, 'service_unavailable')], {
    sleep: (_, signal) => new Promise<void>((_, reject) => signal?.addEventListener('abort', () => reject(new Error('sleep interrupted')))),
  });
  setTimeout(() => controller.abort(), 10);
  await assert.rejects(client.verify('a@ybl', { signal: controller.signal }), AbortError);
});

test('an AbortSignal cuts a request in flight short; an aborted one sends nothing', async () => {
  const controller = new AbortController();
  const { client, requests } = setup([{ hang: true }]);
  setTimeout(() => controller.abort(), 10);
  await assert.rejects(client.verify('a@ybl', { signal: controller.signal }), AbortError);
  assert.equal(requests.length, 1);

  const early = setup([ok]);
  await assert.rejects(early.client.verify('a@ybl', { signal: AbortSignal.abort() }), AbortError);
  assert.equal(early.requests.length, 0);
});

test('requests carry the key, accept JSON and encode the VPA', async () => {
  const { client, requests } = setup([{ status: 200, body: cleared('a.b+c@ybl') }]);
  await client.verify('a.b+c@ybl');
  const [request] = requests;
  assert.equal(request!.method, 'GET');
  assert.equal(request!.url.pathname, '/v1/verify/upi');
  assert.equal(request!.url.searchParams.get('upi'), 'a.b+c@ybl');
  assert.equal(request!.headers.authorization, 'Bearer upirisk_test');
  assert.equal(request!.headers.accept, 'application/json');
});

test('options are checked at construction, naming the bad one', () => {
  const base = { baseUrl: BASE_URL, apiKey: 'k' };
  assert.throws(() => new UpiRiskClient({ ...base, baseUrl: 'not a url' }), /baseUrl/);
  assert.throws(() => new UpiRiskClient({ ...base, apiKey: '' }), /apiKey/);
  assert.throws(() => new UpiRiskClient({ ...base, timeoutMs: 0 }), /timeoutMs/);
  assert.throws(() => new UpiRiskClient({ ...base, deadlineMs: Number.NaN }), /deadlineMs/);
  assert.throws(() => new UpiRiskClient({ ...base, batchConcurrency: 1.5 }), /batchConcurrency/);
});
