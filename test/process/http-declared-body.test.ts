import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, postBatch, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';

/**
 * A body of a declared length from an admitted caller, the common batch,
 * is read and answered without waiting a turn (request-body.ts,
 * readDeclaredBody): whether it comes in one read or several, with a
 * lookup pipelined behind it, or with its client gone half-way, the
 * answer is the one a body read the other way gets.
 */
describe('a batch body of a declared length', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  const upis = () => [edge.flagged, 'nobody.known@ybl', 'Someone.Else@okaxis'];
  const body = () => JSON.stringify({ upis: upis() });

  /** The batch's answer, checked item by item against what was asked. */
  const assertAnswered = (answer: { status: number; body: string } | undefined, what: string) => {
    assert.ok(answer !== undefined, `no answer: ${what}`);
    assert.equal(answer.status, 200, `${what}: ${answer.body}`);
    const parsed = JSON.parse(answer.body) as { results: { upi: string; status: string }[]; total: number; flagged_count: number };
    assert.deepEqual(parsed.results.map((r) => r.upi), upis(), what);
    assert.deepEqual(parsed.results.map((r) => r.status), ['FLAGGED', 'CLEARED', 'CLEARED'], what);
    assert.equal(parsed.total, 3, what);
    assert.equal(parsed.flagged_count, 1, what);
  };

  test('in one read', async () => {
    const result = await rawRequest(edge.port, [postBatch(body(), edge.key)], { expect: 1 });
    assertAnswered(result.answers[0], 'one read');
  });

  test('in several reads, the head apart and the body cut inside a VPA', async () => {
    const request = postBatch(body(), edge.key);
    const bodyAt = request.indexOf('\r\n\r\n') + 4;
    const chunks = [request.slice(0, bodyAt), request.slice(bodyAt, bodyAt + 9), request.slice(bodyAt + 9, request.length - 5), request.slice(request.length - 5)];
    const result = await rawRequest(edge.port, chunks, { expect: 1, gapMs: 30 });
    assertAnswered(result.answers[0], 'several reads');
  });

  test('with lookups pipelined behind it, each answered in order', async () => {
    const lookup = get('/v1/verify/upi?upi=after.batch@paytm', edge.key);
    const result = await rawRequest(edge.port, [postBatch(body(), edge.key) + lookup + postBatch(body(), edge.key) + lookup], { expect: 4 });
    assert.deepEqual(result.answers.map((a) => a.status), [200, 200, 200, 200]);
    assertAnswered(result.answers[0], 'first of the pipeline');
    assertAnswered(result.answers[2], 'third of the pipeline');
    assert.equal((JSON.parse(result.answers[1]!.body) as { upi: string }).upi, 'after.batch@paytm');
  });

  test('that is not JSON is 400 bad_request, and not a batch 422 validation_error, as before', async () => {
    const cases: [string, number, string][] = [
      ['{"upis": [', 400, 'bad_request'],
      ['{"upis": "x@ybl"}', 422, 'validation_error'],
      ['[1, 2]', 422, 'validation_error'],
    ];
    for (const [bad, status, error] of cases) {
      const result = await rawRequest(edge.port, [postBatch(bad, edge.key)], { expect: 1 });
      assert.equal(result.answers[0]?.status, status, bad);
      assert.equal((JSON.parse(result.answers[0]!.body) as { error: string }).error, error, bad);
    }
  });

  test('whose client goes away half-way leaves the server serving', async () => {
    const request = postBatch(body(), edge.key);
    const cut = await rawRequest(edge.port, [request.slice(0, request.length - 10)], { timeoutMs: 300 });
    assert.deepEqual(cut.answers, []);
    const result = await rawRequest(edge.port, [postBatch(body(), edge.key)], { expect: 1 });
    assertAnswered(result.answers[0], 'after a client left');
  });

  test('with a wrong key is still 401 once the body is in, and the connection serves on', async () => {
    const result = await rawRequest(edge.port, [postBatch(body(), 'upirisk_not_a_key_at_all'), get('/v1/verify/upi?upi=after.refusal@ybl', edge.key)], { expect: 2, lockstep: true });
    assert.equal(result.answers[0]?.status, 401);
    assert.equal(result.answers[1]?.status, 200);
  });
});
