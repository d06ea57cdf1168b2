import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, lookupProblem, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';

/**
 * Methods. Every method the HTTP library parses (GET, HEAD, POST, PUT,
 * DELETE, PATCH, OPTIONS, TRACE, CONNECT with a path) that a path does not
 * have is answered 404 not_found with the JSON error body, and a request
 * pipelined behind it is answered too (HEAD: http-head.test.ts).
 *
 * A method the library does not know (FOO, PROPFIND, lower-case `get`, ...)
 * never reaches the service: uWebSockets.js (the 20.30 build used here)
 * closes the connection at once without an answer, together with the answers
 * to requests that came in the same read before it. This pins that it is
 * closed promptly, with no 5xx, and that the server serves on.
 */
const PATHS = ['/v1/verify/upi?upi=a@ybl', '/v1/verify/upi/batch', '/v1/verify/upi/cluster/MC-1', '/v1/cyber/check', '/v1/audit/app', '/v1/openapi.json', '/healthz', '/readyz', '/metrics', '/nope', '/'];
const UNROUTED = ['PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'CONNECT'];
const UNKNOWN = ['FOO', 'PROPFIND', 'MKCOL', 'M-SEARCH', 'PURGE', 'get', 'Get', 'pOST'];

describe('HTTP methods', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  test('a method a path does not have is 404 not_found with the JSON error body, on every path', async () => {
    for (const path of PATHS) {
      for (const method of UNROUTED) {
        const result = await rawRequest(edge.port, [`${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\r\nContent-Length: 0\r\n\r\n`], { expect: 1 });
        const answer = result.answers[0];
        assert.equal(answer?.status, 404, `${method} ${path}`);
        assert.equal(answer.headers.get('content-type'), 'application/json');
        const body = JSON.parse(answer.body) as { error: string; message: string };
        assert.equal(body.error, 'not_found');
        assert.match(body.message, new RegExp(`^no such endpoint: ${method} `));
      }
    }
  });

  test('GET and POST on paths that take the other are 404 not_found', async () => {
    const post = (path: string) => `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
    for (const request of [get('/v1/verify/upi/batch', edge.key), post('/v1/verify/upi'), post('/healthz'), post('/readyz'), get('/v1/audit/app', edge.key)]) {
      const result = await rawRequest(edge.port, [request], { expect: 1 });
      assert.equal(result.answers[0]?.status, 404, request.split('\r\n')[0]);
      assert.equal((JSON.parse(result.answers[0]!.body) as { error: string }).error, 'not_found');
    }
  });

  test('requests pipelined around a 404 for an unrouted method are all answered, in order', async () => {
    const requests = [get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key), 'DELETE /v1/verify/upi HTTP/1.1\r\nHost: x\r\n\r\n', 'OPTIONS / HTTP/1.1\r\nHost: x\r\n\r\n', get('/healthz', null)];
    const result = await rawRequest(edge.port, [requests.join('')], { expect: 4 });
    assert.deepEqual(result.answers.map((a) => a.status), [200, 404, 404, 200]);
    assert.equal((JSON.parse(result.answers[0]!.body) as { upi: string }).upi, edge.flagged);
  });

  test('a method the HTTP library does not know closes the connection at once, unanswered, and the server serves on', async () => {
    for (const method of UNKNOWN) {
      const result = await rawRequest(edge.port, [`${method} /v1/verify/upi?upi=a@ybl HTTP/1.1\r\nHost: x\r\n\r\n`], { timeoutMs: 3000 });
      assert.equal(result.closed, true, `${method}: connection left open`);
      assert.equal(result.answers.length, 0, method);
      assert.equal(/HTTP\/1\.[01] 5\d\d/.test(result.raw.toString('latin1')), false);
    }
    assert.equal(await lookupProblem(edge.port, edge.key, edge.flagged, 'FLAGGED'), null);
  });

  test('an unknown method in a later read closes the connection after the answers already given', async () => {
    const result = await rawRequest(edge.port, [get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key), 'FOO / HTTP/1.1\r\nHost: x\r\n\r\n'], { gapMs: 50, timeoutMs: 3000 });
    assert.equal(result.closed, true);
    assert.deepEqual(result.answers.map((a) => a.status), [200]);
  });
});
