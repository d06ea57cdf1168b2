import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';

/**
 * A batch POST with an empty body is 400 bad_request (no JSON), answered at
 * once however its head arrives. uWebSockets.js never calls the body
 * callback for `Content-Length: 0` when the head came in more than one read,
 * so the service must not wait for one; requests pipelined behind it are
 * answered too.
 */
describe('batch POST with an empty body', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  const head = (extra: string) =>
    `POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\r\nContent-Type: application/json\r\n${extra}`;

  const assertBadRequest = (answer: { status: number; body: string } | undefined, what: string) => {
    assert.ok(answer !== undefined, `no answer: ${what}`);
    assert.equal(answer.status, 400, what);
    assert.equal((JSON.parse(answer.body) as { error: string }).error, 'bad_request', what);
  };

  for (const length of ['0', '00']) {
    test(`Content-Length: ${length} with the head in two reads is answered 400`, async () => {
      const result = await rawRequest(edge.port, [head(''), `Content-Length: ${length}\r\n\r\n`], { expect: 1, gapMs: 30 });
      assertBadRequest(result.answers[0], 'two reads');
    });
  }

  test('Content-Length: 0 split just before the last line feed is answered 400', async () => {
    const result = await rawRequest(edge.port, [`${head('Content-Length: 0\r\n')}\r`, '\n'], { expect: 1, gapMs: 30 });
    assertBadRequest(result.answers[0], 'split CRLF');
  });

  test('Content-Length: 0 in one read is answered 400', async () => {
    const result = await rawRequest(edge.port, [head('Content-Length: 0\r\n\r\n')], { expect: 1 });
    assertBadRequest(result.answers[0], 'one read');
  });

  test('requests pipelined behind an empty body in a later read are answered, in order', async () => {
    const lookup = get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key);
    const result = await rawRequest(edge.port, [head(''), `Content-Length: 0\r\n\r\n${lookup}${lookup}`], { expect: 3, gapMs: 30 });
    assert.deepEqual(result.answers.map((a) => a.status), [400, 200, 200]);
    assert.equal((JSON.parse(result.answers[2]!.body) as { upi: string }).upi, edge.flagged);
  });

  test('a POST with no Content-Length and no body is answered 400, in one read or two', async () => {
    for (const chunks of [[head('\r\n')], [head(''), '\r\n']]) {
      const result = await rawRequest(edge.port, chunks, { expect: 1, gapMs: 30 });
      assertBadRequest(result.answers[0], `no Content-Length, ${chunks.length} read(s)`);
    }
  });

  test('an empty body without a valid key is 401, not a hang', async () => {
    const result = await rawRequest(
      edge.port,
      ['POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n', 'Content-Type: application/json\r\nContent-Length: 0\r\n\r\n'],
      { expect: 1, gapMs: 30 },
    );
    assert.equal(result.answers[0]?.status, 401);
  });
});

describe('batch POST with an empty body, over TLS', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ tls: true, args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  test('Content-Length: 0 with the head in two TLS records is answered 400, and the lookup behind it 200', async () => {
    const head = `POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\r\nContent-Type: application/json\r\n`;
    const lookup = get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key);
    const result = await rawRequest(edge.port, [head, `Content-Length: 0\r\n\r\n${lookup}`], { expect: 2, gapMs: 30, tls: true });
    assert.deepEqual(result.answers.map((a) => a.status), [400, 200]);
    assert.equal((JSON.parse(result.answers[0]!.body) as { error: string }).error, 'bad_request');
  });
});
