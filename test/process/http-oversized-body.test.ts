import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { CHUNKED_OVERFLOW_WAIT_MS, MAX_DISCARDED_BODY_BYTES } from '../../src/http/request-body.js';
import { MAX_BODY_BYTES, MAX_EVIDENCE_BODY_BYTES } from '../../src/api/schemas.js';
import { MAX_ADMIN_BODY_BYTES, MAX_WATCH_BODY_BYTES } from '../../src/api/admin-requests.js';
import { get, lookupProblem, parseAnswers, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';

/**
 * A batch body over the 64 KiB cap is refused with 400 bad_request that the
 * client can read, however it sends: a client that sends the whole body
 * before reading (Node's fetch) gets the answer instead of a reset, because
 * the rest of the body is read and dropped, up to MAX_DISCARDED_BODY_BYTES.
 * A client that sends more than that is cut off.
 */
const FIVE_MIB = 5 * 1024 * 1024;
/**
 * How long a refusal of a chunked body that has not ended may take: its
 * wait and then some, well under the six seconds and more that went
 * unanswered and under uWS's idle timeout (8 to 12 s), which would close
 * the connection unanswered.
 */
const UNENDED_ANSWERED_WITHIN_MS = CHUNKED_OVERFLOW_WAIT_MS + 3000;

/** `count` chunks of `size` bytes in chunked framing, without the closing `0` chunk. */
function unendedChunks(count: number, size: number): Buffer {
  const frame = Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, 0x20), Buffer.from('\r\n')]);
  return Buffer.concat(Array.from({ length: count }, () => frame));
}

/** `bytes` cut into writes of `size` bytes. */
function pieces(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

describe('batch bodies over the cap', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  const head = (extra: string) => `POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\r\nContent-Type: application/json\r\n${extra}\r\n`;

  test("Node's fetch sending 5 MiB at once receives the 400 JSON", async () => {
    assert.ok(FIVE_MIB < MAX_DISCARDED_BODY_BYTES);
    for (let round = 0; round < 3; round++) {
      const response = await fetch(`http://127.0.0.1:${edge.port}/v1/verify/upi/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${edge.key}`, 'content-type': 'application/json' },
        body: Buffer.alloc(FIVE_MIB, 0x20),
      });
      assert.equal(response.status, 400);
      const body = (await response.json()) as { error: string; message: string };
      assert.equal(body.error, 'bad_request');
      assert.match(body.message, new RegExp(`larger than ${MAX_BODY_BYTES} bytes`));
    }
    assert.equal(await lookupProblem(edge.port, edge.key, edge.flagged, 'FLAGGED'), null);
  });

  test('a declared 5 MiB body sent whole is refused and dropped; the request pipelined behind it is answered', async () => {
    const body = Buffer.alloc(FIVE_MIB, 0x20);
    const chunks = [head(`Content-Length: ${FIVE_MIB}\r\n`), body, get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key)];
    const result = await rawRequest(edge.port, chunks, { expect: 2, timeoutMs: 20_000 });
    assert.deepEqual(result.answers.map((a) => a.status), [400, 200]);
    assert.equal((JSON.parse(result.answers[1]!.body) as { upi: string }).upi, edge.flagged);
  });

  test('a chunked body over the cap is read to its end and refused; the connection serves on', async () => {
    const piece = Buffer.alloc(32 * 1024, 0x20);
    const frame = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
    const frames: Buffer[] = [];
    for (let sent = 0; sent < 3 * MAX_BODY_BYTES; sent += piece.length) frames.push(frame);
    const chunks = [head('Transfer-Encoding: chunked\r\n'), Buffer.concat([...frames, Buffer.from('0\r\n\r\n')]), get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key)];
    const result = await rawRequest(edge.port, chunks, { expect: 2, timeoutMs: 20_000 });
    assert.deepEqual(result.answers.map((a) => a.status), [400, 200]);
    assert.equal((JSON.parse(result.answers[0]!.body) as { error: string }).error, 'bad_request');
  });

  // A client that stops sending before the closing chunk and waits for the answer.
  for (const [count, piece] of [
    [40, 1000],
    [40, 16_384],
    [320, 1000],
    [320, 16_384],
  ] as const) {
    test(`a chunked body past the cap that has not ended (${count} chunks of 16 KiB in ${piece}-byte writes) is refused at once, and its connection closed`, async () => {
      const bytes = Buffer.concat([Buffer.from(head('Transfer-Encoding: chunked\r\n'), 'latin1'), unendedChunks(count, 16 * 1024)]);
      const result = await rawRequest(edge.port, pieces(bytes, piece), { timeoutMs: UNENDED_ANSWERED_WITHIN_MS });
      assert.deepEqual(result.answers.map((a) => a.status), [400]);
      const body = JSON.parse(result.answers[0]!.body) as { error: string; message: string };
      assert.equal(body.error, 'bad_request');
      assert.match(body.message, new RegExp(`larger than ${MAX_BODY_BYTES} bytes`));
      assert.equal(result.closed, true, 'the connection is closed: the rest of the body will not be read');
      assert.equal(result.answers[0]!.headers.get('connection'), 'close');
    });
  }

  test('a chunked body past the cap that keeps arriving, each piece within the wait, is read to its end and refused; the connection serves on', async () => {
    const frame = unendedChunks(1, 16 * 1024);
    // Past the cap in the first write, then a piece every CHUNKED_OVERFLOW_WAIT_MS / 2 for four waits and more.
    const writes: Buffer[] = [Buffer.concat([Buffer.from(head('Transfer-Encoding: chunked\r\n'), 'latin1'), unendedChunks(MAX_BODY_BYTES / (16 * 1024) + 1, 16 * 1024)])];
    for (let i = 0; i < 9; i++) writes.push(frame);
    writes.push(Buffer.from('0\r\n\r\n'));
    const result = await rawRequest(edge.port, [...writes, get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key)], {
      expect: 2,
      gapMs: CHUNKED_OVERFLOW_WAIT_MS / 2,
      timeoutMs: 20_000,
    });
    assert.deepEqual(result.answers.map((a) => a.status), [400, 200]);
    assert.notEqual(result.answers[0]!.headers.get('connection'), 'close');
  });

  test('every route that reads a body refuses a chunked body past its cap that has not ended', async () => {
    const routes = [
      // Without a key: refused for its size.
      { method: 'POST', path: '/v1/admin/session', cap: MAX_ADMIN_BODY_BYTES, status: 400 },
      { method: 'PUT', path: '/v1/watchlists/wl_000000000001/vpas', cap: MAX_WATCH_BODY_BYTES, status: 400 },
      // The test key has the screen scope only: refused for its scope, once the body is refused.
      { method: 'POST', path: '/v1/admin/keys', cap: MAX_ADMIN_BODY_BYTES, status: 403 },
      { method: 'POST', path: '/v1/admin/evidence', cap: MAX_EVIDENCE_BODY_BYTES, status: 403 },
    ];
    for (const route of routes) {
      const authorization = route.path === '/v1/admin/session' ? '' : `Authorization: Bearer ${edge.key}\r\n`;
      const type = route.path === '/v1/admin/evidence' ? 'application/x-ndjson' : 'application/json';
      const start = `${route.method} ${route.path} HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: ${type}\r\nTransfer-Encoding: chunked\r\n\r\n`;
      const bytes = Buffer.concat([Buffer.from(start, 'latin1'), unendedChunks(route.cap / (16 * 1024) + 4, 16 * 1024)]);
      const result = await rawRequest(edge.port, pieces(bytes, 16_384), { timeoutMs: UNENDED_ANSWERED_WITHIN_MS });
      assert.deepEqual(result.answers.map((a) => a.status), [route.status], `${route.method} ${route.path}`);
      assert.equal(result.closed, true, `${route.method} ${route.path}: the connection is closed`);
    }
  });

  test('a client waiting for 100 Continue gets 100 and then the 400 without sending the body', async () => {
    const result = await rawRequest(edge.port, [head(`Expect: 100-continue\r\nContent-Length: ${FIVE_MIB}\r\n`)], { expect: 1 });
    assert.equal(result.answers[0]?.status, 400);
    assert.match(result.raw.toString('latin1'), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 400 /);
  });

  /** Send an endless body (chunked, or under a huge Content-Length) until the server closes; what came back and how much was sent. */
  const endless = (framing: 'chunked' | 'length') =>
    new Promise<{ sent: number; received: Buffer; closed: boolean }>((resolve) => {
      const socket = connect(edge.port, '127.0.0.1');
      const piece = Buffer.alloc(64 * 1024, 0x20);
      const frame = framing === 'chunked' ? Buffer.concat([Buffer.from('10000\r\n'), piece, Buffer.from('\r\n')]) : piece;
      let sent = 0;
      let received = Buffer.alloc(0);
      let done = false;
      const finish = (closed: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        socket.destroy();
        resolve({ sent, received, closed });
      };
      // Far past any bound the server may keep: a server that never cuts the client off fails here.
      const timer = setTimeout(() => finish(false), 30_000);
      socket.on('data', (d: Buffer) => (received = Buffer.concat([received, d])));
      socket.on('error', () => finish(true));
      socket.on('close', () => finish(true));
      const pump = () => {
        while (!done && sent < 1024 * 1024 * 1024) {
          sent += frame.length;
          if (!socket.write(frame)) {
            socket.once('drain', pump);
            return;
          }
        }
      };
      socket.on('connect', () => {
        socket.write(head(framing === 'chunked' ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${1024 * 1024 * 1024}\r\n`));
        pump();
      });
    });

  for (const framing of ['chunked', 'length'] as const) {
    test(`a client sending an endless body (${framing}) is cut off within a bound`, { timeout: 60_000 }, async () => {
      const { sent, received, closed } = await endless(framing);
      assert.equal(closed, true, `still open after sending ${sent} bytes`);
      // The server reads at most MAX_DISCARDED_BODY_BYTES; the rest is what the socket buffers of both ends held.
      assert.ok(sent < MAX_DISCARDED_BODY_BYTES + 64 * 1024 * 1024, `sent ${sent} bytes before the cut`);
      const answers = parseAnswers(received).answers;
      for (const answer of answers) assert.equal(answer.status, 400);
      assert.equal(await lookupProblem(edge.port, edge.key, edge.flagged, 'FLAGGED'), null);
    });
  }

  test('a body within the cap is still answered 200', async () => {
    const body = JSON.stringify({ upis: [edge.flagged, 'someone.else@ybl'] });
    const result = await rawRequest(edge.port, [head(`Content-Length: ${body.length}\r\n`) + body], { expect: 1 });
    assert.equal(result.answers[0]?.status, 200);
    assert.equal((JSON.parse(result.answers[0]!.body) as { total: number }).total, 2);
  });
});
