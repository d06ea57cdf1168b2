import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, rawRequest, startEdgeServer, type EdgeServer } from '../raw-http.js';

/**
 * What pipelining does behind an answer that waits a turn (docs/api.md,
 * "Pipelining"): uWebSockets.js closes the connection as soon as it parses a
 * request while an earlier answer on it is still pending. The pending answer
 * is lost with the later requests, and so are the answers to earlier
 * requests of the same read, which had not been sent yet. /metrics always
 * waits for the main thread, so it stands for every such answer here.
 * test/pipelining.test.ts holds the routes that answer within their handler.
 */
describe('pipelining behind an answer that waits', () => {
  let edge: EdgeServer;
  before(async () => {
    edge = await startEdgeServer({ args: ['--threads', '1'] });
  });
  after(async () => {
    await edge.stop();
  });

  test('a request pipelined behind /metrics closes the connection: no answer at all, /metrics included', async () => {
    const result = await rawRequest(edge.port, [get('/metrics', null) + get('/healthz', null)], { timeoutMs: 5000 });
    assert.equal(result.closed, true);
    assert.deepEqual(result.answers, []);
  });

  test('the answers to requests before it in the same read are lost too', async () => {
    const result = await rawRequest(edge.port, [get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key) + get('/metrics', null) + get('/healthz', null)], { timeoutMs: 5000 });
    assert.equal(result.closed, true);
    assert.deepEqual(result.answers, []);
  });

  test('an answer that waits, alone or last in its read, is given; the connection then serves on', async () => {
    const result = await rawRequest(edge.port, [get('/healthz', null) + get('/metrics', null)], { expect: 2 });
    assert.deepEqual(result.answers.map((a) => a.status), [200, 200]);
    assert.match(result.answers[1]!.body, /upi_risk_/);
    // The next request is sent after the answer came: kept alive, answered.
    const again = await rawRequest(edge.port, [get('/metrics', null), get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key)], { expect: 2, lockstep: true });
    assert.deepEqual(again.answers.map((a) => a.status), [200, 200]);
    assert.equal((JSON.parse(again.answers[1]!.body) as { upi: string }).upi, edge.flagged);
  });

  test('the server serves new connections after such a close', async () => {
    const result = await rawRequest(edge.port, [get(`/v1/verify/upi?upi=${edge.flagged}`, edge.key)], { expect: 1 });
    assert.equal(result.answers[0]?.status, 200);
  });
});
