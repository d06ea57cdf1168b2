/**
 * The built @upi-risk/client (packages/client/dist) against a real
 * `upi-risk serve` process: verdicts, a batch split into requests, a
 * cluster, and errors as the client's typed classes.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BadRequestError, NotFoundError, UnauthorizedError, UpiRiskClient, recommendedAction } from '@upi-risk/client';
import { tempDataDir, ingest, evidence } from '../helpers.js';
import { startServer, runCli, lastLine, type RunningServer } from '../server-process.js';

let server: RunningServer;
let client: UpiRiskClient;
let key: string;
let cleanup: () => Promise<void>;

/** The single lookup's JSON as the server sends it, read without the client. */
async function rawVerdict(upi: string): Promise<unknown> {
  const response = await fetch(`${server.base}/v1/verify/upi?upi=${encodeURIComponent(upi)}`, { headers: { authorization: `Bearer ${key}` } });
  return response.json();
}

before(async () => {
  const t = await tempDataDir();
  cleanup = t.cleanup;
  // A mule ring sharing one channel, a scam page with a single payee, and payees never seen.
  await ingest(t.dir, t.root, [
    evidence('ring.a@okhdfc', 'https://t.me/payouts', { source_category: 'telegram', risk_category: 'mule' }),
    evidence('ring.b@okicici', 'https://t.me/payouts', { source_category: 'telegram', risk_category: 'mule' }),
    evidence('ring.c@oksbi', 'https://t.me/payouts', { source_category: 'telegram', risk_category: 'mule' }),
    evidence('ring.c@oksbi', 'https://win.example/pay', { screenshot_available: true }),
    evidence('refund.desk@axl', 'https://refund.example/claim', { source_category: 'scam', risk_category: 'scam' }),
  ]);
  const created = await runCli(['keys', 'create', '--data-dir', t.dir.root, '--name', 'client']);
  assert.equal(created.code, 0, created.stderr);
  key = lastLine(created.stdout);
  server = await startServer(t.dir.root);
  client = new UpiRiskClient({ baseUrl: server.base, apiKey: key });
});

after(async () => {
  assert.equal(await server.stop(), 0, 'graceful exit');
  await cleanup();
});

test('a flagged VPA: the verdict as sent, with its request id and data version', async () => {
  const result = await client.verify('RING.C@OkSbi');
  assert.deepEqual(result.verdict, await rawVerdict('RING.C@OkSbi'));
  assert.equal(result.verdict.upi, 'RING.C@OkSbi');
  assert.equal(result.verdict.status, 'FLAGGED');
  assert.equal(result.verdict.evidence_count, 2);
  assert.match(result.verdict.cluster_id ?? '', /^MC-\d+$/);
  assert.ok(result.verdict.confidence !== null && result.verdict.confidence > 0);
  assert.ok((result.requestId ?? '').length > 0);
  assert.ok((result.dataVersion ?? '').length > 0);
  assert.ok(!Number.isNaN(Date.parse(result.dataAsOf ?? '')));
  assert.notEqual(recommendedAction(result.verdict, 'payment'), 'allow');
});

test('a cleared VPA: the verdict as sent, allowed', async () => {
  const result = await client.verify('never.seen@ybl');
  assert.deepEqual(result.verdict, await rawVerdict('never.seen@ybl'));
  assert.equal(result.verdict.status, 'CLEARED');
  assert.equal(recommendedAction(result.verdict, 'payment'), 'allow');
  assert.equal(recommendedAction(result.verdict, 'onboarding'), 'proceed');
});

test('a batch of 250 with duplicates: three requests, input order, each item as the single lookup says', async () => {
  const known = ['ring.a@okhdfc', 'ring.b@okicici', 'ring.c@oksbi', 'refund.desk@axl'];
  const upis = Array.from({ length: 250 }, (_, i) => (i % 10 === 0 ? known[(i / 10) % known.length]! : `payee${i % 60}@okaxis`));
  const result = await client.verifyBatch(upis);
  assert.deepEqual(result.results.map((r) => r.verdict.upi), upis);
  assert.equal(result.total, 250);
  assert.equal(result.flaggedCount, 25);
  assert.equal(result.clearedCount, 225);
  assert.equal(result.requests.length, 3);
  const ids = result.requests.map((r) => r.requestId);
  assert.equal(new Set(ids).size, 3, 'a request id per request');
  assert.ok(result.results.every((r) => ids.includes(r.requestId)));
  for (const upi of known) {
    const single = (await client.verify(upi)).verdict;
    const { sources: _s, first_seen: _f, last_seen: _l, ...item } = single;
    for (const r of result.results.filter((r) => r.verdict.upi === upi)) assert.deepEqual(r.verdict, item);
  }
});

test("a cluster, from a verdict's cluster_id", async () => {
  const { verdict } = await client.verify('ring.a@okhdfc');
  const result = await client.cluster(verdict.cluster_id!);
  assert.equal(result.cluster.cluster_id, verdict.cluster_id);
  assert.equal(result.cluster.size, 3);
  assert.deepEqual(result.cluster.members.map((m) => m.upi), ['ring.a@okhdfc', 'ring.b@okicici', 'ring.c@oksbi']);
  assert.equal(result.cluster.risk_category, 'mule');
  assert.ok((result.requestId ?? '').length > 0);
  await assert.rejects(client.cluster('MC-999999'), NotFoundError);
});

test('errors: a bad key is UnauthorizedError, a bad VPA BadRequestError, each with its request id', async () => {
  const stranger = new UpiRiskClient({ baseUrl: server.base, apiKey: 'upirisk_not-a-real-key' });
  const unauthorized = await stranger.verify('a@ybl').then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(unauthorized instanceof UnauthorizedError);
  assert.equal(unauthorized.status, 401);
  assert.equal(unauthorized.code, 'unauthorized');
  assert.ok((unauthorized.requestId ?? '').length > 0);

  const bad = await client.verify('not-a-vpa').then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(bad instanceof BadRequestError);
  assert.equal(bad.status, 400);
  assert.match(bad.message, /valid VPA/);
  await assert.rejects(client.verifyBatch(['a@ybl', 'nope']), BadRequestError);
});
