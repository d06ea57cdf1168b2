import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, Agent } from 'node:http';
import { get, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';

/**
 * HEAD is answered without a body on every path: /healthz and /readyz with
 * the status GET gives (200), every other path 404. A body would be read
 * by a keep-alive client as the start of the next answer, so the tests read
 * the next answer on the same connection.
 */
const OTHER_PATHS = ['/v1/verify/upi?upi=a@ybl', '/v1/verify/upi/batch', '/v1/verify/upi/cluster/MC-1', '/v1/openapi.json', '/metrics', '/nope', '/'];

describe('HEAD', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  const head = (path: string) => `HEAD ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\r\n\r\n`;

  test('/healthz and /readyz answer 200 without a body, and the pipelined next answer parses', async () => {
    for (const path of ['/healthz', '/readyz', '/healthz?probe=1']) {
      const result = await rawRequest(edge.port, [head(path) + get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key)], { expect: 2, heads: [0] });
      assert.deepEqual(result.answers.map((a) => a.status), [200, 200], path);
      assert.equal(result.answers[0]!.headers.get('content-type'), 'application/json');
      assert.ok(result.answers[0]!.headers.has('x-request-id'));
      // The byte after the HEAD answer's blank line is the next status line.
      const raw = result.raw.toString('latin1');
      assert.equal(raw.slice(raw.indexOf('\r\n\r\n') + 4).startsWith('HTTP/1.1 200'), true, path);
      assert.equal((JSON.parse(result.answers[1]!.body) as { upi: string }).upi, edge.flagged);
      assert.equal(result.rest.length, 0);
    }
  });

  test('every other path answers a bodiless 404, and the next answer on the connection parses', async () => {
    for (const path of OTHER_PATHS) {
      const result = await rawRequest(edge.port, [head(path) + get('/readyz', null)], { expect: 2, heads: [0] });
      assert.deepEqual(result.answers.map((a) => a.status), [404, 200], path);
      const raw = result.raw.toString('latin1');
      assert.equal(raw.slice(raw.indexOf('\r\n\r\n') + 4).startsWith('HTTP/1.1 200'), true, path);
      assert.equal((JSON.parse(result.answers[1]!.body) as { status: string }).status, 'ready');
      assert.equal(result.rest.length, 0);
    }
  });

  test('HEAD in a later read on a kept-alive connection, between GETs', async () => {
    const chunks = [get('/healthz', null), head('/nope'), head('/readyz'), get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key)];
    const result = await rawRequest(edge.port, chunks, { expect: 4, heads: [1, 2], gapMs: 20 });
    assert.deepEqual(result.answers.map((a) => a.status), [200, 404, 200, 200]);
    assert.equal((JSON.parse(result.answers[3]!.body) as { upi: string }).upi, edge.flagged);
  });

  test("Node's HTTP client keeps the connection and reads the GET after a HEAD", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const ask = (method: string, path: string) =>
      new Promise<{ status: number; body: string; localPort: number | undefined }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: edge.port, method, path, agent }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          const localPort = res.socket.localPort;
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body, localPort }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const first = await ask('HEAD', '/healthz');
      const second = await ask('GET', '/healthz');
      const third = await ask('HEAD', '/nope');
      const fourth = await ask('GET', '/readyz');
      assert.deepEqual([first.status, second.status, third.status, fourth.status], [200, 200, 404, 200]);
      assert.equal(first.body, '');
      assert.equal(second.body, '{"status":"ok"}');
      assert.equal(third.body, '');
      assert.equal(first.localPort, fourth.localPort, 'the connection was not kept');
    } finally {
      agent.destroy();
    }
  });
});

describe('HEAD over TLS', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ tls: true, args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  test('HEAD over TLS is bodiless and the next answer parses', async () => {
    const result = await rawRequest(edge.port, [`HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n${get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key)}`], { expect: 2, heads: [0], tls: true });
    assert.deepEqual(result.answers.map((a) => a.status), [200, 200]);
    assert.equal(result.rest.length, 0);
  });
});
