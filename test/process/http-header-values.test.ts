import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, postBatch, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';

/**
 * The header values the service reads (Authorization, Content-Type,
 * Content-Length) must be visible ASCII with spaces or tabs between. A
 * malformed Authorization is an invalid key: 401 unauthorized (the spec's
 * error table); a malformed Content-Type is 400 bad_request.
 *
 * uWebSockets.js hands values over as latin1 text and strips bytes of 0x80
 * or more from both ends of a value, as it strips spaces: those the service
 * never sees, so a valid key followed by such bytes is the valid key. The
 * last test pins that, so a library that stops stripping them shows here
 * (the service would then refuse them).
 */
describe('header values the service reads', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  const lookupWith = async (authorization: string) => {
    const bytes = `GET /v1/verify/upi?upi=${edge.flagged} HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\n\r\n`;
    const result = await rawRequest(edge.port, [Buffer.from(bytes, 'latin1')], { expect: 1 });
    assert.equal(result.answers.length, 1, `no answer for ${JSON.stringify(authorization)}`);
    return result.answers[0]!;
  };

  test('an Authorization value with bytes that are not visible ASCII inside is 401 unauthorized', async () => {
    const key = edge.key;
    for (const value of [`Bearer ${key}\xe9x`, `Bearer ${key.slice(0, 10)}\x80${key.slice(10)}`, `Bearer\xa0${key}`, `Be\xe4rer ${key}`, `Bearer ${key}\x7f`, `Bearer ${key}\xc3\xa9 x`]) {
      const answer = await lookupWith(value);
      assert.equal(answer.status, 401, JSON.stringify(value));
      assert.equal((JSON.parse(answer.body) as { error: string }).error, 'unauthorized');
      assert.equal(answer.headers.get('www-authenticate'), 'Bearer');
    }
  });

  test('the valid key alone, with spaces around it, is accepted', async () => {
    for (const value of [`Bearer ${edge.key}`, `bearer   ${edge.key}  `, `BEARER ${edge.key}`]) {
      const answer = await lookupWith(value);
      assert.equal(answer.status, 200, JSON.stringify(value));
      assert.equal((JSON.parse(answer.body) as { upi: string }).upi, edge.flagged);
    }
  });

  test('a Content-Type with bytes that are not visible ASCII inside is 400 bad_request', async () => {
    const body = JSON.stringify({ upis: [edge.flagged] });
    for (const type of ['application/json; charset=ut\xe9f-8', 'application/j\xa0son', 'application/json;\x7f']) {
      const bytes = `POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const result = await rawRequest(edge.port, [Buffer.from(bytes, 'latin1')], { expect: 1 });
      assert.equal(result.answers[0]?.status, 400, JSON.stringify(type));
      assert.equal((JSON.parse(result.answers[0]!.body) as { error: string }).error, 'bad_request');
    }
    const ok = await rawRequest(edge.port, [postBatch(body, edge.key)], { expect: 1 });
    assert.equal(ok.answers[0]?.status, 200);
  });

  test('a refused header leaves the connection serving: the pipelined request behind it is answered', async () => {
    const bad = `GET /v1/verify/upi?upi=${edge.flagged} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${edge.key}\xe9x\r\n\r\n`;
    const result = await rawRequest(edge.port, [Buffer.from(bad + get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key), 'latin1')], { expect: 2 });
    assert.deepEqual(result.answers.map((a) => a.status), [401, 200]);
  });

  test('pinned library behaviour: bytes of 0x80 or more at the ends of a value are stripped before the service sees it', async () => {
    const answer = await lookupWith(`\xe9Bearer ${edge.key}\xff\x80`);
    assert.equal(answer.status, 200);
    assert.equal((JSON.parse(answer.body) as { upi: string }).upi, edge.flagged);
  });
});
