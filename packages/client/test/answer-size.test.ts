/**
 * Every answer is read up to a bound: a 2xx JSON answer to 1 MiB (a page
 * or a cluster to 16 MiB), an error body to 64 KiB. Past it reading stops:
 * a 2xx answer is a ResponseFormatError, an error answer is typed by its
 * status.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskClient } from '../src/client.js';
import { ApiError, ResponseFormatError, ServiceUnavailableError } from '../src/errors.js';
import { DEFAULT_MAX_ANSWER_BYTES, MAX_ERROR_BODY_BYTES, type FetchLike } from '../src/transport.js';
import { BASE_URL, fakeClock, itemOf, cleared } from './fakes.js';

const CHUNK_BYTES = 16 * 1024;
const encoder = new TextEncoder();

/** A fetch answering `head`, then `padBytes` of padding, then `tail`, as a stream pulled on demand; `pulled` counts the bytes read from it. */
function streamingFetch(status: number, head: string, padBytes: number, tail: string) {
  const counter = { pulled: 0, requests: 0 };
  const fetch: FetchLike = async () => {
    counter.requests++;
    const parts = [encoder.encode(head)];
    for (let left = padBytes; left > 0; left -= CHUNK_BYTES) parts.push(encoder.encode('x'.repeat(Math.min(CHUNK_BYTES, left))));
    parts.push(encoder.encode(tail));
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const part = parts.shift();
        if (part === undefined) return controller.close();
        counter.pulled += part.length;
        controller.enqueue(part);
      },
    });
    return new Response(body, { status, headers: { 'content-type': 'application/json', 'x-request-id': 'req-big' } });
  };
  return { fetch, counter };
}

function clientWith(fetch: FetchLike) {
  const clock = fakeClock();
  return { client: new UpiRiskClient({ baseUrl: BASE_URL, apiKey: 'k', fetch, now: clock.now, sleep: clock.sleep, random: () => 0 }), clock };
}

test('a JSON answer past 1 MiB: ResponseFormatError, reading stopped there, not retried', async () => {
  const { fetch, counter } = streamingFetch(200, '{"upi":"a@ybl","status":"CLEARED","padding":"', 8 * 1024 * 1024, '"}');
  const { client } = clientWith(fetch);
  await assert.rejects(client.verify('a@ybl'), (e) => e instanceof ResponseFormatError && new RegExp(`GET /v1/verify/upi is larger than the ${DEFAULT_MAX_ANSWER_BYTES} bytes`).test(e.message));
  assert.equal(counter.requests, 1);
  assert.ok(counter.pulled <= DEFAULT_MAX_ANSWER_BYTES + 2 * CHUNK_BYTES, `${counter.pulled} bytes read`);
  // Just under the bound: read whole.
  const fits = streamingFetch(200, '{"upi":"a@ybl","status":"CLEARED","padding":"', DEFAULT_MAX_ANSWER_BYTES - 100, '"}');
  assert.equal((await clientWith(fits.fetch).client.verify('a@ybl')).verdict.status, 'CLEARED');
});

test('an error body past 64 KiB (a proxy page) is not read: the error is typed by its status, and retried as such', async () => {
  const { fetch, counter } = streamingFetch(503, '<html>', 8 * 1024 * 1024, '</html>');
  const { client, clock } = clientWith(fetch);
  await assert.rejects(client.verify('a@ybl'), (e) => e instanceof ServiceUnavailableError && e.status === 503 && e.requestId === 'req-big');
  assert.deepEqual(clock.delays, [1000, 2000, 4000]);
  assert.ok(counter.pulled <= 4 * (MAX_ERROR_BODY_BYTES + 2 * CHUNK_BYTES), `${counter.pulled} bytes read in 4 attempts`);
  // A long body whose start is the service's JSON is not read either: its code is not taken from a body cut short.
  const coded = streamingFetch(410, '{"error":"gone","message":"', 1024 * 1024, '"}');
  await assert.rejects(clientWith(coded.fetch).client.verify('a@ybl'), (e) => e instanceof ApiError && e.code === 'http_410');
});

test('a page may be larger than 1 MiB: listings and clusters are read up to 16 MiB', async () => {
  const vpas = Array.from({ length: 1000 }, (_, i) => ({ ...itemOf(cleared(`m${i}@okaxis`)), note: 'x'.repeat(2000) }));
  const page = JSON.stringify({ vpas, next_cursor: null });
  assert.ok(page.length > DEFAULT_MAX_ANSWER_BYTES);
  const { client } = clientWith(async () => new Response(page, { status: 200 }));
  assert.equal((await client.listWatchlistVpas('wl_1', { limit: 1000 })).vpas.length, 1000);
});
