import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, lookupProblem, postBatch, rawRequest, startEdgeServer, type EdgeServer, type RawResult } from '../raw-http.js';

/**
 * Requests that the HTTP library (uWebSockets.js 20.30, unofficial build)
 * decides before the service sees them: docs-notes-http-limits.md says what
 * it does with each (mostly: no answer, the connection held until the idle
 * timeout or closed at once) and what to put in front. What the service
 * guarantees, and this holds: never a 5xx, the connection closed within a
 * bound (the 10 s idle timeout, swept every 4 s), and the server alive and
 * exact afterwards. Whether an answer comes is the library's affair and not
 * asserted, except where the service relies on it.
 */
const CLOSED_WITHIN_MS = 20_000;

describe('requests the HTTP library refuses', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  const fields = (n: number) => Array.from({ length: n }, (_, i) => `X-Field-${i}: value\r\n`).join('');
  const bigHead = () => get('/healthz', null, `X-Big: ${'a'.repeat(5000)}\r\n`);

  const cases = (): Record<string, { chunks: (string | Buffer)[]; gapMs?: number }> => ({
    'HTTP/1.0 with Host': { chunks: ['GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n'] },
    'HTTP/1.0 without Host': { chunks: ['GET /healthz HTTP/1.0\r\n\r\n'] },
    'HTTP/1.0 health check as load balancers send it': { chunks: ['OPTIONS / HTTP/1.0\r\n\r\n'] },
    'HTTP/1.1 without Host': { chunks: ['GET /healthz HTTP/1.1\r\n\r\n'] },
    'absolute-form target': { chunks: ['GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n'] },
    'authority-form CONNECT': { chunks: ['CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n'] },
    'chunk extension': {
      chunks: [`POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;a=b\r\n{}\r\n0\r\n\r\n`],
    },
    '60 header fields': { chunks: [get('/healthz', null, fields(59))] },
    'header section over 4 KiB in several reads': { chunks: ((s) => [s.slice(0, 1500), s.slice(1500, 3000), s.slice(3000)])(bigHead()), gapMs: 30 },
    'Content-Length and Transfer-Encoding': { chunks: ['POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'] },
    'Content-Length not a number': { chunks: ['POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nContent-Length: 5x\r\n\r\nhello'] },
    'NUL in a header value': { chunks: ['GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n'] },
    'bare LF line ends': { chunks: ['GET /healthz HTTP/1.1\nHost: x\n\n'] },
    'HTTP/2 preface': { chunks: ['PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'] },
    'not HTTP': { chunks: ['HELLO\r\n\r\n'] },
    'unfinished head': { chunks: ['GET /healthz HTTP/1.1\r\nHo'] },
  });

  test('never a 5xx, closed within a bound, the server alive and exact afterwards', { timeout: 60_000 }, async () => {
    const all = Object.entries(cases());
    // Together: most wait out the same idle timeout.
    const results = await Promise.all(all.map(([, c]) => rawRequest(edge.port, c.chunks, { gapMs: c.gapMs ?? 0, timeoutMs: CLOSED_WITHIN_MS })));
    results.forEach((result: RawResult, i) => {
      const name = all[i]![0];
      assert.equal(result.closed, true, `${name}: connection still open after ${CLOSED_WITHIN_MS} ms`);
      assert.equal(/HTTP\/1\.[01] 5\d\d/.test(result.raw.toString('latin1')), false, `${name}: ${result.raw.toString('latin1').slice(0, 200)}`);
      for (const answer of result.answers) assert.ok(answer.status >= 400 && answer.status < 500, `${name}: answered ${answer.status}`);
    });
    assert.equal(await lookupProblem(edge.port, edge.key, edge.flagged, 'FLAGGED'), null);
  });

  test('what the service relies on: 48 header fields, and a large head in one read, are answered', async () => {
    const many = await rawRequest(edge.port, [get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key, fields(46))], { expect: 1 });
    assert.equal(many.answers[0]?.status, 200);
    const big = await rawRequest(edge.port, [bigHead()], { expect: 1 });
    assert.equal(big.answers[0]?.status, 200);
  });

  test('a body of two lengths closes its connection before it is read: what one length would make a second request is never served', async () => {
    const body = JSON.stringify({ upis: [edge.flagged] });
    // A proxy that takes the last Content-Length forwards one request; uWS, taking the first, would read a second in its body.
    const smuggled = get('/v1/watchlists', edge.key);
    const twoLengths = postBatch(`${body}${smuggled}`, edge.key, `Content-Length: ${Buffer.byteLength(body)}\r\nContent-Length: ${Buffer.byteLength(body) + smuggled.length}\r\n`);
    const result = await rawRequest(edge.port, [twoLengths], { timeoutMs: 3_000 });
    assert.deepEqual(result.answers.map((a) => a.status), [], result.raw.toString('latin1').slice(0, 300));
    assert.equal(result.closed, true);
    // The console's sign-in takes a body without a key: the same.
    const signIn = `POST /v1/admin/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: ${2 + smuggled.length}\r\n\r\n{}${smuggled}`;
    const refused = await rawRequest(edge.port, [signIn], { timeoutMs: 3_000 });
    assert.deepEqual(refused.answers.map((a) => a.status), [], refused.raw.toString('latin1').slice(0, 300));
    assert.equal(refused.closed, true);
    // One length, the same body: answered, and the connection serves on.
    const one = await rawRequest(edge.port, [postBatch(body, edge.key)], { expect: 1 });
    assert.equal(one.answers[0]?.status, 200);
  });
});
