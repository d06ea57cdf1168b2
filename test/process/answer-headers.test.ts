import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import uWS from 'uWebSockets.js';
import { listen } from '../../src/http/server.js';
import { AnswerHead, snapshotHeaderLines } from '../../src/http/answer-headers.js';
import { RequestIds } from '../../src/http/request-ids.js';

// Every header of an answer is written with one writeHeader call whose value
// carries the other lines, as bytes from a buffer reused by every answer.
// This pins the bytes uWebSockets.js puts on the wire that way: well-formed
// header lines, each header once, in order, and each answer its own.

/** One raw HTTP/1.1 exchange: the response head as lines, and the body. */
async function rawGet(port: number): Promise<{ head: string[]; body: string }> {
  const socket = connect(port, '127.0.0.1');
  socket.write('GET / HTTP/1.1\r\nHost: test\r\n\r\n');
  let text = '';
  for await (const chunk of socket) {
    text += String(chunk);
    const end = text.indexOf('\r\n\r\n');
    if (end < 0) continue;
    const head = text.slice(0, end).split('\r\n');
    const length = Number(/^content-length: (\d+)$/im.exec(text.slice(0, end))?.[1]);
    if (text.length - end - 4 < length) continue;
    socket.destroy();
    return { head, body: text.slice(end + 4, end + 4 + length) };
  }
  throw new Error('connection closed before a whole response');
}

test('an answer head written in one call is the same header lines, each once', async (t) => {
  const lines = snapshotHeaderLines('20261122T074338123Z-00abcd', '2026-11-22T07:43:38.123Z');
  const ids = new RequestIds();
  const head = new AnswerHead(ids);
  let mode: 'limited' | 'extra' | 'bare' = 'limited';
  const app = uWS.App().get('/', (res) => {
    res.cork(() => {
      if (mode === 'limited') head.write(res, '200 OK', head.lines(lines, 1, { limit: 600, remaining: 599, reset: 1795420000 }));
      else if (mode === 'extra') head.write(res, '429 Too Many Requests', head.lines(lines, 2, { limit: 600, remaining: 0, reset: 1795420000 }, ['Retry-After', '7']));
      else head.write(res, '200 OK', head.lines(lines, 3, null));
      res.end('{"ok":true}');
    });
  });
  const server = await listen(app, '127.0.0.1', 0);
  t.after(() => server.close());

  const limited = await rawGet(server.port);
  assert.equal(limited.head[0], 'HTTP/1.1 200 OK');
  assert.deepEqual(limited.head.slice(1, 8), [
    'Content-Type: application/json',
    'X-Data-Version: 20261122T074338123Z-00abcd',
    'X-Data-As-Of: 2026-11-22T07:43:38.123Z',
    `X-Request-Id: ${ids.text(1)}`,
    'X-RateLimit-Limit: 600',
    'X-RateLimit-Remaining: 599',
    'X-RateLimit-Reset: 1795420000',
  ]);
  assert.equal(limited.body, '{"ok":true}');
  // What uWS adds itself comes after, and nothing appears twice.
  const names = limited.head.slice(1).map((line) => line.slice(0, line.indexOf(':')).toLowerCase());
  assert.equal(new Set(names).size, names.length, limited.head.join('\n'));
  assert.ok(names.includes('content-length'));

  mode = 'extra';
  const refused = await rawGet(server.port);
  assert.equal(refused.head[0], 'HTTP/1.1 429 Too Many Requests');
  assert.deepEqual(refused.head.slice(4, 9), [
    `X-Request-Id: ${ids.text(2)}`,
    'X-RateLimit-Limit: 600',
    'X-RateLimit-Remaining: 0',
    'X-RateLimit-Reset: 1795420000',
    'Retry-After: 7',
  ]);

  // A client that parses headers properly (undici) sees each one.
  mode = 'bare';
  const response = await fetch(`http://127.0.0.1:${server.port}/`);
  assert.equal(response.headers.get('content-type'), 'application/json');
  assert.equal(response.headers.get('x-data-version'), '20261122T074338123Z-00abcd');
  assert.equal(response.headers.get('x-request-id'), ids.text(3));
  assert.equal(response.headers.get('x-ratelimit-limit'), null);
  assert.deepEqual(await response.json(), { ok: true });
});

test('the lines of one answer after another: the start is kept while the snapshot is, and written anew when it changes', () => {
  const ids = new RequestIds();
  const head = new AnswerHead(ids);
  const text = (view: Uint8Array): string => Buffer.from(view).toString('latin1');
  const older = snapshotHeaderLines('20261122T074338123Z-00abcd', '2026-11-22T07:43:38.123Z');
  const newer = snapshotHeaderLines('20261123T000000000Z-00beef', '2026-11-23T00:00:00.000Z');
  const expected = (version: string, asOf: string, n: number, rest: string) =>
    `application/json\r\nX-Data-Version: ${version}\r\nX-Data-As-Of: ${asOf}\r\nX-Request-Id: ${ids.text(n)}${rest}`;
  const limits = (remaining: number) => `\r\nX-RateLimit-Limit: 600\r\nX-RateLimit-Remaining: ${remaining}\r\nX-RateLimit-Reset: 1795420000`;

  assert.equal(text(head.lines(older, 0, { limit: 600, remaining: 599, reset: 1795420000 })), expected('20261122T074338123Z-00abcd', '2026-11-22T07:43:38.123Z', 0, limits(599)));
  // A longer id, a shorter answer, then one with an extra header: nothing of the one before is left.
  assert.equal(text(head.lines(older, 123_456_789, null)), expected('20261122T074338123Z-00abcd', '2026-11-22T07:43:38.123Z', 123_456_789, ''));
  assert.equal(
    text(head.lines(older, 2, { limit: 600, remaining: 0, reset: 1795420000 }, ['Retry-After', '7'])),
    expected('20261122T074338123Z-00abcd', '2026-11-22T07:43:38.123Z', 2, `${limits(0)}\r\nRetry-After: 7`),
  );
  assert.equal(text(head.lines(newer, 3, null)), expected('20261123T000000000Z-00beef', '2026-11-23T00:00:00.000Z', 3, ''));
  assert.equal(text(head.lines(older, 4, null)), expected('20261122T074338123Z-00abcd', '2026-11-22T07:43:38.123Z', 4, ''));
});
