/**
 * The client against a real HTTP server on a free port that misbehaves on
 * cue: 429 with and without Retry-After, 500, 503, connection resets, slow
 * answers. The platform's fetch does the HTTP; the clock is injected (its
 * sleep records each delay and returns at once), so every schedule is exact.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { UpiRiskClient, type UpiRiskClientOptions } from '../src/client.js';
import { InternalError, NetworkError, RateLimitError, ServiceUnavailableError, TimeoutError, UnauthorizedError } from '../src/errors.js';
import { cleared, fakeClock, flagged, itemOf } from './fakes.js';

type Fault =
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body?: unknown }
  | 'reset'
  | { readonly slowMs: number };

interface Received {
  readonly method: string;
  readonly url: string;
  readonly authorization: string | undefined;
  readonly body: string;
}

let server: Server;
let base: string;
let faults: Fault[] = [];
const received: Received[] = [];
const sockets = new Set<import('node:net').Socket>();

/** After the scripted faults: the right answer for the request. */
function answer(request: IncomingMessage, body: string, response: ServerResponse, n: number): void {
  const url = new URL(request.url ?? '/', 'http://x');
  const headers = { 'content-type': 'application/json', 'x-request-id': `fault-${n}`, 'x-data-version': 'snap-7', 'x-data-as-of': '2027-01-15T07:00:00.000Z' };
  if (url.pathname === '/v1/verify/upi') {
    const upi = url.searchParams.get('upi') ?? '';
    response.writeHead(200, headers).end(JSON.stringify(upi.startsWith('bad') ? flagged(upi) : cleared(upi)));
  } else if (url.pathname === '/v1/verify/upi/batch') {
    const upis = (JSON.parse(body) as { upis: string[] }).upis;
    response.writeHead(200, headers).end(JSON.stringify({ results: upis.map((u) => itemOf(cleared(u))), total: upis.length, flagged_count: 0, cleared_count: upis.length }));
  } else {
    response.writeHead(404, headers).end(JSON.stringify({ error: 'not_found', message: 'no such path' }));
  }
}

/** Answer with the next fault of the script, or as the service would when none is left. */
async function serveFault(request: IncomingMessage, response: ServerResponse): Promise<void> {
  let body = '';
  for await (const chunk of request) body += String(chunk);
  const n = received.push({ method: request.method ?? '', url: request.url ?? '', authorization: request.headers.authorization, body });
  const fault = faults.shift();
  if (fault === undefined) return answer(request, body, response, n);
  if (fault === 'reset') return void request.socket.resetAndDestroy();
  if ('slowMs' in fault) {
    const timer = setTimeout(() => answer(request, body, response, n), fault.slowMs);
    response.on('close', () => clearTimeout(timer));
    return;
  }
  const payload = fault.body === undefined ? '' : JSON.stringify(fault.body);
  response.writeHead(fault.status, { 'content-type': 'application/json', 'x-request-id': `fault-${n}`, ...fault.headers }).end(payload);
}

before(async () => {
  // A request that fails while its body is read (the client went away) is dropped.
  server = createServer((request, response) => void serveFault(request, response).catch(() => response.destroy()));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  for (const socket of sockets) socket.destroy();
  server.close();
  await once(server, 'close');
});

function setup(script: Fault[], options: Partial<UpiRiskClientOptions> = {}) {
  faults = script;
  received.length = 0;
  const clock = fakeClock();
  const client = new UpiRiskClient({ baseUrl: base, apiKey: 'upirisk_fault', now: clock.now, sleep: clock.sleep, random: () => 0.5, ...options });
  return { client, clock };
}

const limited = (headers: Record<string, string> = {}): Fault => ({ status: 429, headers, body: { error: 'rate_limit_exceeded', message: 'quota spent', retry_after: Number(headers['retry-after'] ?? 1) } });
const failed = (status: number, error: string): Fault => ({ status, body: { error, message: error } });

test('429 with Retry-After: waits what the header says plus jitter', async () => {
  const { client, clock } = setup([limited({ 'retry-after': '4' }), limited({ 'retry-after': '2' })]);
  const result = await client.verify('bad1@ybl');
  assert.equal(result.verdict.status, 'FLAGGED');
  assert.equal(result.requestId, 'fault-3');
  assert.equal(result.dataVersion, 'snap-7');
  assert.deepEqual(clock.delays, [4250, 2250]);
  assert.equal(received.length, 3);
  assert.ok(received.every((r) => r.authorization === 'Bearer upirisk_fault'));
});

test('429 without Retry-After or retry_after: 1, 2, 4, 8, 16, 32, 32 s plus jitter', async () => {
  const bare: Fault = { status: 429, body: { error: 'rate_limit_exceeded', message: 'quota spent' } };
  const { client, clock } = setup(Array<Fault>(7).fill(bare), { deadlineMs: 300_000 });
  await client.verify('x@ybl');
  assert.deepEqual(clock.delays, [1000, 2000, 4000, 8000, 16000, 32000, 32000].map((d) => d + 250));
  assert.equal(received.length, 8);
});

test('429 until the deadline: RateLimitError with the last answer’s request id', async () => {
  const bare: Fault = { status: 429, body: { error: 'rate_limit_exceeded', message: 'quota spent' } };
  const { client, clock } = setup(Array<Fault>(20).fill(bare), { deadlineMs: 10_000 });
  await assert.rejects(client.verify('x@ybl'), (e) => e instanceof RateLimitError && e.requestId === 'fault-4');
  // 1.25 + 2.25 + 4.25 = 7.75 s; 8.25 more would pass 10 s.
  assert.deepEqual(clock.delays, [1250, 2250, 4250]);
});

test('500 and 503: retried after 1, 2 and 4 s, then the error', async () => {
  const five = setup([failed(500, 'internal_error'), failed(503, 'service_unavailable'), failed(500, 'internal_error')]);
  assert.equal((await five.client.verify('x@ybl')).verdict.status, 'CLEARED');
  assert.deepEqual(five.clock.delays, [1000, 2000, 4000]);

  const down = setup(Array<Fault>(4).fill(failed(503, 'service_unavailable')));
  await assert.rejects(down.client.verify('x@ybl'), (e) => e instanceof ServiceUnavailableError && e.requestId === 'fault-4');
  assert.deepEqual(down.clock.delays, [1000, 2000, 4000]);
  assert.equal(received.length, 4);

  const broken = setup(Array<Fault>(4).fill(failed(500, 'internal_error')));
  await assert.rejects(broken.client.verify('x@ybl'), InternalError);
  assert.equal(received.length, 4);
});

test('connection resets: retried like 503, then NetworkError', async () => {
  const recovers = setup(['reset', 'reset']);
  assert.equal((await recovers.client.verifyBatch(['a@ybl', 'b@ybl'])).total, 2);
  assert.deepEqual(recovers.clock.delays, [1000, 2000]);
  assert.equal(received.length, 3);

  const gone = setup(['reset', 'reset', 'reset', 'reset']);
  await assert.rejects(gone.client.verify('x@ybl'), (e) => e instanceof NetworkError && e.status === null);
  assert.deepEqual(gone.clock.delays, [1000, 2000, 4000]);
  assert.equal(received.length, 4);
});

test('slow answers: an attempt past timeoutMs is cut and retried; the deadline cuts the call', async () => {
  const slowOnce = setup([{ slowMs: 2_000 }], { timeoutMs: 100 });
  assert.equal((await slowOnce.client.verify('x@ybl')).verdict.upi, 'x@ybl');
  assert.deepEqual(slowOnce.clock.delays, [1000]);
  assert.equal(received.length, 2);

  const slowAlways = setup(Array<Fault>(4).fill({ slowMs: 2_000 }), { timeoutMs: 50 });
  await assert.rejects(slowAlways.client.verify('x@ybl'), (e) => e instanceof TimeoutError && !e.deadline);
  assert.deepEqual(slowAlways.clock.delays, [1000, 2000, 4000]);

  const deadline = setup([{ slowMs: 2_000 }]);
  const started = Date.now();
  await assert.rejects(deadline.client.verify('x@ybl', { deadlineMs: 150 }), (e) => e instanceof TimeoutError && e.deadline);
  assert.ok(Date.now() - started < 1_500);
  assert.equal(received.length, 1);
});

test('an AbortSignal cuts a slow answer short', async () => {
  const { client } = setup([{ slowMs: 2_000 }]);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 50);
  await assert.rejects(client.verify('x@ybl', { signal: controller.signal }), { name: 'AbortError' });
  assert.equal(received.length, 1);
});

test('a 401 is thrown at once', async () => {
  const { client, clock } = setup([{ status: 401, headers: { 'www-authenticate': 'Bearer' }, body: { error: 'unauthorized', message: 'invalid API key' } }]);
  await assert.rejects(client.verify('x@ybl'), (e) => e instanceof UnauthorizedError && e.requestId === 'fault-1');
  assert.deepEqual(clock.delays, []);
  assert.equal(received.length, 1);
});
