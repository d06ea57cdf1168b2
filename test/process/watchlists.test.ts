import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { evidence, ingest, ndjson, tempDataDir, until, type EvidenceInput } from '../helpers.js';
import { lastLine, runCli, startServer, type RunningServer } from '../server-process.js';
import { startReceiver, type Receiver } from '../webhook-receiver.js';
import { assertSchema } from '../schema-check.js';
import { ErrorSchema } from '../../src/api/schemas.js';
import {
  AdminWatchlistListSchema,
  AdminWatchlistSchema,
  NewWatchlistSchema,
  RedeliveredSchema,
  WatchEventPageSchema,
  WatchEventSchema,
  WatchVpasAddedSchema,
  WatchVpasRemovedSchema,
  WatchedVpasPageSchema,
  WatchlistDeletedSchema,
  WatchlistListSchema,
  WatchlistSchema,
  WatchlistSecretSchema,
} from '../../src/api/watch-schemas.js';
import type { TSchema } from '@sinclair/typebox';
import { MAX_WATCHLISTS_PER_KEY } from '../../src/api/admin-requests.js';

let dataDirRoot: string;
let cleanup: () => Promise<void>;
let server: RunningServer;
let receiver: Receiver;
let keyA: string;
let keyB: string;
let keyC: string;
const serverArgs = ['--webhook-allow', '127.0.0.1', '--webhook-first-retry-seconds', '1', '--threads', '2'];

/** A call with a key; an answer is checked against `schema`, an error against the spec's error body. */
async function call(path: string, key: string, method = 'GET', body?: unknown, schema?: TSchema) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status >= 400) assertSchema(ErrorSchema, json);
  else if (schema !== undefined) assertSchema(schema, json);
  return { status: response.status, body: json };
}

async function sendEvidence(items: readonly EvidenceInput[]): Promise<void> {
  const response = await fetch(`${server.base}/v1/admin/evidence`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/x-ndjson' },
    body: ndjson(items),
  });
  assert.equal(response.status, 200, await response.text());
}

interface EventBody {
  id: string;
  upi: string;
  watchlist_id: string;
  before: { status: string; cluster_id: string | null };
  after: { status: string; cluster_id: string | null };
  data_version: string;
}
const eventsFor = (upi: string) => receiver.received.map((r) => JSON.parse(r.body) as EventBody).filter((e) => e.upi === upi);

async function watch(key: string, upis: string[]): Promise<{ id: string; secret: string }> {
  const created = await call('/v1/watchlists', key, 'POST', { name: 'settlement VPAs', webhook_url: receiver.url }, NewWatchlistSchema);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = String(created.body.id);
  assert.equal((await call(`/v1/watchlists/${id}/vpas`, key, 'PUT', { upis }, WatchVpasAddedSchema)).status, 200);
  return { id, secret: String(created.body.secret) };
}

before(async () => {
  const t = await tempDataDir();
  dataDirRoot = t.dir.root;
  cleanup = t.cleanup;
  await ingest(t.dir, t.root, [evidence('known@ybl', 'https://t.me/known', { source_category: 'telegram', risk_category: 'mule' })]);
  keyA = lastLine((await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'bank A', '--scopes', 'screen,ingest'])).stdout);
  keyB = lastLine((await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'bank B'])).stdout);
  keyC = lastLine((await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'bank C', '--plan', 'enterprise'])).stdout);
  receiver = await startReceiver();
  server = await startServer(dataDirRoot, { args: serverArgs });
});

after(async () => {
  await server.stop();
  await receiver.close();
  await cleanup();
});

test('an ingest that flips a watched VPA sends one signed event within 2 s', async () => {
  const { id, secret } = await watch(keyA, ['flip@ybl', 'KNOWN@ybl', 'quiet@ybl']);
  const vpas = (await call(`/v1/watchlists/${id}/vpas`, keyA, 'GET', undefined, WatchedVpasPageSchema)).body.vpas as { upi: string; status: string }[];
  assert.deepEqual(vpas.map((v) => `${v.upi} ${v.status}`), ['flip@ybl CLEARED', 'known@ybl FLAGGED', 'quiet@ybl CLEARED']);

  const sent = Date.now();
  await sendEvidence([evidence('flip@ybl', 'https://pay.example/flip', { risk_category: 'gambling' })]);
  await until('the event arrives', 2_000, () => eventsFor('flip@ybl').length === 1);
  const got = receiver.received.find((r) => r.body.includes('flip@ybl'))!;
  assert.ok(got.at - sent < 2_000);
  const event = JSON.parse(got.body) as EventBody;
  assertSchema(WatchEventSchema, event);
  assert.equal(event.watchlist_id, id);
  assert.equal(event.before.status, 'CLEARED');
  assert.equal(event.after.status, 'FLAGGED');
  assert.match(event.id, /^evt_[0-9a-f]{28}$/);
  // The signature: t=<seconds>,v1=HMAC-SHA256(secret, "<t>.<raw body>").
  const header = String(got.headers['upi-risk-signature']);
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  assert.ok(match !== null, header);
  assert.ok(Math.abs(Number(match[1]) - Date.now() / 1000) < 10);
  assert.equal(match[2], createHmac('sha256', secret).update(`${match[1]}.${got.body}`).digest('hex'));
  assert.equal(eventsFor('quiet@ybl').length + eventsFor('known@ybl').length, 0, 'nothing for VPAs that did not change');

  const events = (await call(`/v1/watchlists/${id}/events`, keyA, 'GET', undefined, WatchEventPageSchema)).body.events as { id: string; delivery: { state: string; attempts: unknown[] } }[];
  assert.equal(events[0]!.id, event.id);
  await until('the delivery is recorded', 2_000, async () => ((await call(`/v1/watchlists/${id}/events`, keyA)).body.events as { delivery: { state: string } }[])[0]!.delivery.state === 'delivered');

  // Sent again on request, with the same id.
  const again = await call(`/v1/watchlists/${id}/events/${event.id}/redeliver`, keyA, 'POST', undefined, RedeliveredSchema);
  assert.equal(again.status, 202);
  await until('the event arrives again', 2_000, () => eventsFor('flip@ybl').length === 2);
  assert.deepEqual(eventsFor('flip@ybl').map((e) => e.id), [event.id, event.id]);
  assert.equal((await call(`/v1/watchlists/${id}/events/evt_0000000000000000000000000000/redeliver`, keyA, 'POST')).status, 404);

  const secret2 = await call(`/v1/watchlists/${id}/secret`, keyA, 'POST', undefined, WatchlistSecretSchema);
  assert.notEqual(secret2.body.secret, secret);
  assert.equal(secret2.body.previous_secret_expires_at, null);
  const kept = await call(`/v1/watchlists/${id}/secret`, keyA, 'POST', { keep_previous_seconds: 60 }, WatchlistSecretSchema);
  assert.equal(typeof kept.body.previous_secret_expires_at, 'string');
  for (const bad of [{ keep_previous_seconds: '60' }, { keep_previous_seconds: null }, { keep: 60 }, [60]]) {
    const refused = await call(`/v1/watchlists/${id}/secret`, keyA, 'POST', bad);
    assert.equal(refused.status, 422, JSON.stringify(bad));
    assert.equal(refused.body.error, 'validation_error');
  }
});

test('a receiver down for a while gets every event when it comes back, in order per VPA', async () => {
  await watch(keyA, ['late1@ybl', 'late2@ybl']);
  receiver.status = 503;
  await sendEvidence([evidence('late1@ybl', 'https://t.me/late', { source_category: 'telegram' }), evidence('late2@ybl', 'https://t.me/late', { source_category: 'telegram' })]);
  // A compaction puts both in one cluster: a second event for each, after the first.
  server.child.kill('SIGUSR2');
  await until('the cluster is formed', 20_000, async () => {
    const item = await call('/v1/verify/upi?upi=late1@ybl', keyA);
    return item.body.cluster_id !== null;
  });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(eventsFor('late1@ybl').length, 0, 'nothing while down');
  receiver.status = 200;
  await until('every event arrives', 30_000, () => eventsFor('late1@ybl').length >= 2 && eventsFor('late2@ybl').length >= 2);
  for (const upi of ['late1@ybl', 'late2@ybl']) {
    const [first, second] = eventsFor(upi);
    assert.equal(first!.after.status, 'FLAGGED');
    assert.equal(first!.after.cluster_id, null);
    assert.match(second!.after.cluster_id ?? '', /^MC-\d+$/);
  }
});

test('events pending when the server is killed are delivered after it restarts', async () => {
  await watch(keyA, ['kill1@ybl', 'kill2@ybl', 'kill3@ybl']);
  receiver.status = 503;
  await sendEvidence(['kill1@ybl', 'kill2@ybl', 'kill3@ybl'].map((upi) => evidence(upi, `https://scam.example/${upi}`, { source_category: 'scam' })));
  await new Promise((resolve) => setTimeout(resolve, 300));
  server.child.kill('SIGKILL');
  await new Promise((resolve) => server.child.once('exit', resolve));
  receiver.status = 200;
  server = await startServer(dataDirRoot, { args: serverArgs });
  await until('every event arrives after the restart', 30_000, () => ['kill1@ybl', 'kill2@ybl', 'kill3@ybl'].every((upi) => eventsFor(upi).length >= 1));
  // At least once: the same event may come twice, never two different events for one change.
  for (const upi of ['kill1@ybl', 'kill2@ybl', 'kill3@ybl']) assert.equal(new Set(eventsFor(upi).map((e) => e.id)).size, 1);
});

test("a revoked key's watchlists are screened no more, and their events waiting are given up, not sent", async () => {
  const created = await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'leaked']);
  const leaked = lastLine(created.stdout);
  const admin = lastLine((await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'ops', '--scopes', 'admin'])).stdout);
  await until('the new keys are known', 3_000, async () => (await call('/v1/watchlists', leaked)).status === 200 && (await call('/v1/admin/watchlists', admin)).status === 200);
  const { id } = await watch(leaked, ['revoked-a@ybl', 'revoked-b@ybl']);
  const owner = ((await call(`/v1/admin/watchlists/${id}`, admin)).body as { owner: string }).owner;
  receiver.status = 503;
  await sendEvidence([evidence('revoked-a@ybl', 'https://scam.example/revoked-a', { source_category: 'scam' })]);
  await until('the event waits for its receiver', 10_000, async () => {
    const events = (await call(`/v1/admin/watchlists/${id}/events`, admin)).body.events as { delivery: { attempts: unknown[] } }[];
    return events.length === 1 && events[0]!.delivery.attempts.length >= 1;
  });
  assert.equal((await runCli(['keys', 'revoke', '--data-dir', dataDirRoot, owner])).code, 0);
  await until('the key is refused', 3_000, async () => (await call('/v1/watchlists', leaked)).status === 401);
  receiver.status = 200;
  await sendEvidence([evidence('revoked-b@ybl', 'https://scam.example/revoked-b', { source_category: 'scam' })]);
  await until('the waiting event given up', 15_000, async () => {
    const events = (await call(`/v1/admin/watchlists/${id}/events`, admin)).body.events as { delivery: { state: string; attempts: { error: string | null }[] } }[];
    return events.length === 1 && events[0]!.delivery.state === 'failed' && /key is revoked/.test(events[0]!.delivery.attempts.at(-1)!.error ?? '');
  });
  assert.equal((await call('/v1/verify/upi?upi=revoked-b@ybl', keyA)).body.status, 'FLAGGED');
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.deepEqual([...eventsFor('revoked-a@ybl'), ...eventsFor('revoked-b@ybl')], [], 'nothing sent after the revocation');
});

test("one key never sees or changes another key's watchlists", async () => {
  const { id } = await watch(keyA, ['mine@ybl']);
  for (const [method, path, body] of [
    ['GET', `/v1/watchlists/${id}`, undefined],
    ['DELETE', `/v1/watchlists/${id}`, undefined],
    ['PUT', `/v1/watchlists/${id}/vpas`, { upis: ['x@ybl'] }],
    ['DELETE', `/v1/watchlists/${id}/vpas`, { upis: ['mine@ybl'] }],
    ['GET', `/v1/watchlists/${id}/vpas`, undefined],
    ['GET', `/v1/watchlists/${id}/events`, undefined],
    ['POST', `/v1/watchlists/${id}/secret`, undefined],
  ] as const) {
    const r = await call(path, keyB, method, body);
    assert.equal(r.status, 404, `${method} ${path}`);
    assert.equal(r.body.error, 'not_found');
  }
  assert.deepEqual((await call('/v1/watchlists', keyB, 'GET', undefined, WatchlistListSchema)).body.watchlists, []);
  assert.equal(((await call(`/v1/watchlists/${id}`, keyA, 'GET', undefined, WatchlistSchema)).body as { vpa_count: number }).vpa_count, 1, 'untouched');
});

test("an admin key reads every key's watchlists, their VPAs and events; others may not", async () => {
  const admin = lastLine((await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'ops', '--scopes', 'admin'])).stdout);
  const mine = await watch(keyB, ['b-only@ybl']);
  await until('the admin key is known', 3_000, async () => (await call('/v1/admin/watchlists', admin)).status === 200);
  const all = (await call('/v1/admin/watchlists', admin, 'GET', undefined, AdminWatchlistListSchema)).body.watchlists as { id: string; owner: string }[];
  assert.ok(all.some((w) => w.id === mine.id && w.owner.startsWith('key_')));
  assert.ok(all.length >= 2, "both keys' watchlists");
  // A page at a time, in id order, every one once.
  const paged: string[] = [];
  let cursor: string | null = null;
  do {
    const page = (await call(`/v1/admin/watchlists?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`, admin, 'GET', undefined, AdminWatchlistListSchema)).body as { watchlists: { id: string }[]; next_cursor: string | null };
    assert.ok(page.watchlists.length <= 1);
    paged.push(...page.watchlists.map((w) => w.id));
    cursor = page.next_cursor;
  } while (cursor !== null);
  assert.deepEqual(paged, all.map((w) => w.id).sort());
  assert.equal((await call('/v1/admin/watchlists?limit=0', admin)).status, 400);
  const one = (await call(`/v1/admin/watchlists/${mine.id}`, admin, 'GET', undefined, AdminWatchlistSchema)).body;
  assert.deepEqual([one.id, one.owner], [mine.id, all.find((w) => w.id === mine.id)!.owner]);
  assert.equal((await call('/v1/admin/watchlists/wl_0000000000000000', admin)).status, 404);
  const vpas = (await call(`/v1/admin/watchlists/${mine.id}/vpas`, admin, 'GET', undefined, WatchedVpasPageSchema)).body.vpas as { upi: string }[];
  assert.deepEqual(vpas.map((v) => v.upi), ['b-only@ybl']);
  assert.equal((await call(`/v1/admin/watchlists/${mine.id}/events`, admin, 'GET', undefined, WatchEventPageSchema)).status, 200);
  assert.equal((await call('/v1/admin/watchlists', keyB)).status, 403);
  assert.equal((await call('/v1/admin/watchlists/wl_0000000000000000/events', admin)).status, 404);
});

test('webhook targets inside the network, or not https, are refused with 400', async () => {
  for (const url of [
    'http://hooks.example.com/x',
    'https://localhost/x',
    'https://10.1.2.3/x',
    'https://169.254.169.254/latest/meta-data',
    'https://[::1]/x',
    'https://[::ffff:127.0.0.2]/x',
    'https://user:secret@hooks.example.com/x',
    'ftp://hooks.example.com/x',
    'not a url',
  ]) {
    const r = await call('/v1/watchlists', keyA, 'POST', { name: 'bad', webhook_url: url });
    assert.equal(r.status, 400, `${url}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error, 'bad_request');
  }
  assert.equal((await call('/v1/watchlists', keyA, 'POST', { name: 'x', webhook_url: receiver.url, extra: 1 })).status, 422);
  assert.equal((await call('/v1/watchlists', keyA, 'POST', { webhook_url: receiver.url })).status, 422);
});

test('VPAs: up to 1,000 a call, valid ones only, paged in VPA order with their verdicts', async () => {
  const { id } = await watch(keyA, ['a@ybl']);
  const upis = Array.from({ length: 1000 }, (_, i) => `member${String(i).padStart(4, '0')}@okaxis`);
  assert.deepEqual((await call(`/v1/watchlists/${id}/vpas`, keyA, 'PUT', { upis })).body, { added: 1000, total: 1001 });
  assert.equal((await call(`/v1/watchlists/${id}/vpas`, keyA, 'PUT', { upis: [...upis, 'one-more@ybl'] })).status, 400);
  assert.equal((await call(`/v1/watchlists/${id}/vpas`, keyA, 'PUT', { upis: ['not-a-vpa'] })).status, 400);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = (await call(`/v1/watchlists/${id}/vpas?limit=400${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, keyA)).body as { vpas: { upi: string }[]; next_cursor: string | null };
    seen.push(...page.vpas.map((v) => v.upi));
    cursor = page.next_cursor;
  } while (cursor !== null);
  assert.equal(seen.length, 1001);
  assert.deepEqual(seen, [...seen].sort());
  assert.deepEqual((await call(`/v1/watchlists/${id}/vpas`, keyA, 'DELETE', { upis: ['a@ybl', 'never@ybl'] }, WatchVpasRemovedSchema)).body, { removed: 1, total: 1000 });
  assert.deepEqual((await call(`/v1/watchlists/${id}`, keyA, 'DELETE', undefined, WatchlistDeletedSchema)).body, { deleted: true });
  assert.equal((await call(`/v1/watchlists/${id}`, keyA)).status, 404);
});

test('a key holds at most 100 watchlists', async () => {
  for (let i = 0; i < MAX_WATCHLISTS_PER_KEY; i++) {
    const created = await call('/v1/watchlists', keyC, 'POST', { name: `list ${i}`, webhook_url: receiver.url }, NewWatchlistSchema);
    assert.equal(created.status, 201, JSON.stringify(created.body));
  }
  const refused = await call('/v1/watchlists', keyC, 'POST', { name: 'one too many', webhook_url: receiver.url });
  assert.equal(refused.status, 422);
  assert.equal(refused.body.error, 'validation_error');
  assert.match(String(refused.body.message), /at most 100 watchlists/);
  // Another key is not held back by this one's count.
  assert.equal((await call('/v1/watchlists', keyB, 'POST', { name: 'mine', webhook_url: receiver.url })).status, 201);
  const lists = (await call('/v1/watchlists', keyC, 'GET', undefined, WatchlistListSchema)).body.watchlists as { id: string }[];
  assert.equal(lists.length, MAX_WATCHLISTS_PER_KEY);
  assert.equal((await call(`/v1/watchlists/${lists[0]!.id}`, keyC, 'DELETE')).status, 200);
  assert.equal((await call('/v1/watchlists', keyC, 'POST', { name: 'room again', webhook_url: receiver.url })).status, 201);
});
