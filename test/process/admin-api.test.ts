import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { assertSchema } from '../schema-check.js';
import { ErrorSchema, EvidenceReceiptSchema } from '../../src/api/schemas.js';
import {
  AuditListSchema,
  ClusterGraphSchema,
  CompactionStartedSchema,
  ClusterListSchema,
  KeyAnswerSchema,
  KeyListSchema,
  NewKeySchema,
  SessionSchema,
  SignedOutSchema,
  StatsSchema,
} from '../../src/api/admin-schemas.js';
import { SESSION_COOKIE } from '../../src/access/console-sessions.js';
import { evidence, ingest, ndjson, tempDataDir, until } from '../helpers.js';
import { lastLine, runCli, startServer, type RunningServer } from '../server-process.js';

// One server for the admin API; every answer is checked against its JSON Schema.
let server: RunningServer;
let adminKey: string;
let screenKey: string;
let dataDirRoot: string;
let cleanup: () => Promise<void>;


interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A call with a key (`auth`), a session (`cookie`, `csrf`) or neither; the body must be the schema's, or the error's. */
async function call(
  path: string,
  options: { method?: string; auth?: string; cookie?: string; csrf?: string; body?: unknown; schema?: TSchema } = {},
): Promise<Reply> {
  const headers = new Headers();
  if (options.auth !== undefined) headers.set('authorization', `Bearer ${options.auth}`);
  if (options.cookie !== undefined) headers.set('cookie', options.cookie);
  if (options.csrf !== undefined) headers.set('x-csrf-token', options.csrf);
  if (options.body !== undefined) headers.set('content-type', 'application/json');
  const response = await fetch(`${server.base}${path}`, {
    method: options.method ?? 'GET',
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  assert.equal(response.headers.get('content-type'), 'application/json', path);
  assert.ok((response.headers.get('x-request-id') ?? '') !== '', 'X-Request-Id');
  assert.match(response.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/, 'X-RateLimit-Remaining');
  const body = JSON.parse(await response.text()) as Record<string, unknown>;
  if (response.status >= 400) assertSchema(ErrorSchema, body);
  else if (options.schema !== undefined) assertSchema(options.schema, body);
  return { status: response.status, headers: response.headers, body };
}

/** Sign in with a key: the cookie to send back and the CSRF token. */
async function signIn(key: string): Promise<{ cookie: string; csrf: string }> {
  const r = await call('/v1/admin/session', { method: 'POST', body: { api_key: key }, schema: SessionSchema });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const setCookie = r.headers.get('set-cookie')!;
  return { cookie: setCookie.slice(0, setCookie.indexOf(';')), csrf: String(r.body.csrf_token) };
}

before(async () => {
  const t = await tempDataDir();
  cleanup = t.cleanup;
  dataDirRoot = t.dir.root;
  const items = [];
  for (let i = 0; i < 5; i++) items.push(evidence(`ring${i}@ybl`, 'https://t.me/ring', { source_category: 'telegram', risk_category: 'mule' }));
  items.push(evidence('ring0@ybl', 'https://bet.example/pay', { source_category: 'gambling' }));
  await ingest(t.dir, t.root, items);
  adminKey = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root, '--name', 'ops', '--scopes', 'screen,ingest,admin'])).stdout);
  screenKey = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root, '--name', 'shop'])).stdout);
  server = await startServer(t.dir.root, { args: ['--threads', '2'] });
});

after(async () => {
  assert.equal(await server.stop(), 0, 'graceful exit');
  await cleanup();
});

test('sign-in: an admin key gets a session cookie; a key without admin is 403, a wrong one 401', async () => {
  const r = await call('/v1/admin/session', { method: 'POST', body: { api_key: adminKey }, schema: SessionSchema });
  assert.equal(r.status, 200);
  const cookie = r.headers.get('set-cookie')!;
  assert.match(cookie, new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_-]{43}; `));
  for (const attribute of ['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/', 'Max-Age=28800']) assert.ok(cookie.includes(attribute), attribute);
  assert.ok(!JSON.stringify(r.body).includes(adminKey), 'the key is not echoed');
  assert.equal((await call('/v1/admin/session', { method: 'POST', body: { api_key: screenKey } })).status, 403);
  assert.equal((await call('/v1/admin/session', { method: 'POST', body: { api_key: 'upirisk_wrong' } })).status, 401);
  assert.equal((await call('/v1/admin/session', { method: 'POST', body: {} })).status, 422);
  assert.equal((await call('/v1/admin/session', { method: 'POST', body: ['x'] })).status, 422);
});

test('a session reads with its cookie alone, and changes only with its CSRF token', async () => {
  const { cookie, csrf } = await signIn(adminKey);
  assert.equal((await call('/v1/admin/session', { cookie, schema: SessionSchema })).body.csrf_token, csrf);
  assert.equal((await call('/v1/admin/keys', { cookie, schema: KeyListSchema })).status, 200);
  const noToken = await call('/v1/admin/keys', { method: 'POST', cookie, body: { name: 'no csrf' } });
  assert.equal(noToken.status, 403);
  assert.match(String(noToken.body.message), /X-CSRF-Token/);
  assert.equal((await call('/v1/admin/keys', { method: 'POST', cookie, csrf: 'x'.repeat(43), body: { name: 'wrong csrf' } })).status, 403);
  // A lookup by POST is a change as far as CSRF goes; a GET lookup is not.
  const batch = await fetch(`${server.base}/v1/verify/upi/batch`, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: '{"upis":["ring0@ybl"]}' });
  assert.equal(batch.status, 403);
  const single = await fetch(`${server.base}/v1/verify/upi?upi=ring0@ybl`, { headers: { cookie } });
  assert.equal(((await single.json()) as { status: string }).status, 'FLAGGED');
  const created = await call('/v1/admin/keys', { method: 'POST', cookie, csrf, body: { name: 'with csrf' }, schema: NewKeySchema });
  assert.equal(created.status, 201);
  // A key needs no CSRF token: it is not sent by the browser on its own.
  assert.equal((await call('/v1/admin/keys', { method: 'POST', auth: adminKey, body: { name: 'by key' }, schema: NewKeySchema })).status, 201);
});

test('keys: created, used at once, rotated (old key 401), re-planned, revoked (401), each in the audit log', async () => {
  const { cookie, csrf } = await signIn(adminKey);
  const created = await call('/v1/admin/keys', { method: 'POST', cookie, csrf, body: { name: 'bank', plan: 'default', scopes: ['screen'] }, schema: NewKeySchema });
  const first = String(created.body.key);
  const id = (created.body.record as { id: string }).id;
  const status = async (key: string) => (await fetch(`${server.base}/v1/verify/upi?upi=ring1@ybl`, { headers: { authorization: `Bearer ${key}` } })).status;
  await until('the new key works on every thread', 2_000, async () => (await status(first)) === 200 && (await status(first)) === 200);

  const rotated = await call(`/v1/admin/keys/${id}/rotate`, { method: 'POST', cookie, csrf, schema: NewKeySchema });
  const second = String(rotated.body.key);
  assert.notEqual(second, first);
  await until('the old key is refused', 2_000, async () => (await status(first)) === 401 && (await status(first)) === 401);
  assert.equal(await status(second), 200);

  const replanned = await call(`/v1/admin/keys/${id}`, { method: 'PATCH', cookie, csrf, body: { plan: 'default' }, schema: KeyAnswerSchema });
  assert.equal(replanned.status, 200);
  assert.equal((await call(`/v1/admin/keys/${id}`, { method: 'PATCH', cookie, csrf, body: { plan: 'platinum' } })).status, 422);

  const revoked = await call(`/v1/admin/keys/${id}/revoke`, { method: 'POST', cookie, csrf, schema: KeyAnswerSchema });
  assert.ok((revoked.body.record as { revoked_at: string | null }).revoked_at !== null);
  await until('the revoked key is refused', 2_000, async () => (await status(second)) === 401 && (await status(second)) === 401);
  assert.equal((await call('/v1/admin/keys/key_000000000000/revoke', { method: 'POST', cookie, csrf })).status, 404);

  const audit = await call('/v1/admin/audit?limit=50', { cookie, schema: AuditListSchema });
  const mine = (audit.body.records as { action: string; target: string; actor: { name: string } }[]).filter((r) => r.target === id);
  assert.deepEqual(mine.map((r) => r.action), ['key.revoked', 'key.rotated', 'key.created']);
  assert.ok(mine.every((r) => r.actor.name === 'ops'));
  const cli = (audit.body.records as { action: string; actor: { key_id: string | null; name: string } }[]).filter((r) => r.actor.name === 'cli');
  assert.equal(cli.length, 2, 'the two keys created with the CLI before the server started');
  assert.ok(cli.every((r) => r.actor.key_id === null && r.action === 'key.created'));
  assert.equal((await call('/v1/admin/audit?limit=0', { cookie })).status, 400);
  assert.equal((await call('/v1/admin/audit?limit=abc', { cookie })).status, 400);
});

test('a session ends on sign-out, and when its key is rotated with the CLI', async () => {
  const { cookie, csrf } = await signIn(adminKey);
  const out = await call('/v1/admin/session', { method: 'DELETE', cookie, csrf, schema: SignedOutSchema });
  assert.match(out.headers.get('set-cookie') ?? '', /Max-Age=0/);
  assert.equal((await call('/v1/admin/session', { cookie })).status, 401);

  const { key: other } = await createAdminKey('second admin');
  const session = await signIn(other);
  const id = (await call('/v1/admin/session', { cookie: session.cookie })).body.key as { id: string };
  const rotated = await runCli(['keys', 'rotate', '--data-dir', dataDirRoot, id.id]);
  assert.equal(rotated.code, 0, rotated.stderr);
  await until('the session of a rotated key ends', 3_000, async () => (await call('/v1/admin/session', { cookie: session.cookie })).status === 401);
});

test('key usage: requests and 429s over the last day, and when last used', async () => {
  const created = await call('/v1/admin/keys', { method: 'POST', auth: adminKey, body: { name: 'usage' }, schema: NewKeySchema });
  const lookup = async () => (await fetch(`${server.base}/v1/verify/upi?upi=ring2@ybl`, { headers: { authorization: `Bearer ${String(created.body.key)}` } })).status;
  // Until the key is known it is refused, and a refused key counts for no key.
  await until('the key works', 2_000, async () => (await lookup()) === 200);
  for (let i = 0; i < 6; i++) assert.equal(await lookup(), 200);
  // Serving threads hand their counts over every few seconds.
  await until('the requests are counted', 15_000, async () => {
    const keys = (await call('/v1/admin/keys', { auth: adminKey, schema: KeyListSchema })).body.keys as { name: string; requests_24h: number; last_used_at: string | null }[];
    const mine = keys.find((k) => k.name === 'usage')!;
    return mine.requests_24h === 7 && mine.last_used_at !== null;
  });
});

test('stats: the snapshot, delta, builds, freshness and samples, after evidence sent over HTTP', async () => {
  const body = ndjson([evidence('fresh@ybl', 'https://t.me/ring', { source_category: 'telegram', evidence_id: 'ev-admin-stats-1' })]);
  const sent = await fetch(`${server.base}/v1/admin/evidence`, { method: 'POST', headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/x-ndjson' }, body });
  const receipt = await sent.json();
  assertSchema(EvidenceReceiptSchema, receipt);
  const stats = await call('/v1/admin/stats', { auth: adminKey, schema: StatsSchema });
  const s = stats.body as { mode: string; snapshot: { vpas: number }; delta: { vpas: number }; builds: { outcome: string }[]; freshness: { last_ingest_items: number | null } };
  assert.equal(s.mode, 'embedded');
  assert.equal(s.snapshot.vpas, 5);
  assert.equal(s.delta.vpas, 1);
  assert.equal(s.builds[0]?.outcome, 'built', 'the build made at start');
  assert.equal(s.freshness.last_ingest_items, 1);
  assert.equal((await call('/v1/admin/stats', { auth: screenKey })).status, 403);
});

test('clusters: the largest, and one as a graph of members, urls and sightings', async () => {
  const list = await call('/v1/admin/clusters?limit=5', { auth: adminKey, schema: ClusterListSchema });
  const [largest] = list.body.clusters as { cluster_id: string; size: number }[];
  assert.equal(largest?.size, 5);
  const graph = await call(`/v1/admin/clusters/${largest!.cluster_id}/graph`, { auth: adminKey, schema: ClusterGraphSchema });
  const g = graph.body as { members: { upi: string }[]; urls: { url: string }[]; sightings: { upi: string; url: string }[] };
  assert.deepEqual(g.members.map((m) => m.upi).sort(), ['ring0@ybl', 'ring1@ybl', 'ring2@ybl', 'ring3@ybl', 'ring4@ybl']);
  assert.deepEqual(g.urls.map((u) => u.url).sort(), ['https://bet.example/pay', 'https://t.me/ring']);
  assert.equal(g.sightings.length, 6);
  assert.equal((await call('/v1/admin/clusters/MC-999999/graph', { auth: adminKey })).status, 404);
  assert.equal((await call('/v1/admin/clusters/nope/graph', { auth: adminKey })).status, 400);
  assert.equal((await call('/v1/admin/clusters?limit=1001', { auth: adminKey })).status, 400);
});

test('every admin route needs the admin scope, with a key or a session', async () => {
  for (const [method, path] of [
    ['GET', '/v1/admin/keys'],
    ['POST', '/v1/admin/keys'],
    ['GET', '/v1/admin/audit'],
    ['GET', '/v1/admin/stats'],
    ['GET', '/v1/admin/clusters'],
    ['POST', '/v1/admin/keys/key_000000000000/rotate'],
    ['POST', '/v1/admin/compaction'],
  ] as const) {
    assert.equal((await call(path, { method, auth: screenKey, ...(method === 'POST' ? { body: {} } : {}) })).status, 403, `${method} ${path}`);
    assert.equal((await call(path, { method })).status, 401, `${method} ${path} without credentials`);
  }
});

test('failed sign-ins count against the per-IP failed-authentication limit', async () => {
  const t = await tempDataDir();
  const plans = join(t.root, 'plans.json');
  await writeFile(plans, JSON.stringify({ version: 1, plans: { default: { burst: 1000, sustained: 100000, windowSeconds: 60 } }, authFailuresPerIp: { points: 3, windowSeconds: 60 } }));
  await ingest(t.dir, t.root, [evidence('one@ybl', 'https://t.me/x')]);
  const limited = await startServer(t.dir.root, { plans });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${limited.base}/v1/admin/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: `upirisk_guess${i}` }) });
      statuses.push(r.status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 429, 429]);
  } finally {
    await limited.stop();
    await t.cleanup();
  }
});

async function createAdminKey(name: string): Promise<{ key: string }> {
  const r = await call('/v1/admin/keys', { method: 'POST', auth: adminKey, body: { name, scopes: ['screen', 'admin'] }, schema: NewKeySchema });
  const key = String(r.body.key);
  await until('the key works', 2_000, async () => (await fetch(`${server.base}/v1/admin/keys`, { headers: { authorization: `Bearer ${key}` } })).status === 200);
  return { key };
}

test('a compaction asked for over the API folds the delta into a new snapshot, and is in the audit log', async () => {
  const before = (await call('/v1/admin/stats', { auth: adminKey, schema: StatsSchema })).body as { snapshot: { id: string }; delta: { vpas: number } };
  assert.ok(before.delta.vpas > 0, 'evidence sent over HTTP waits in the delta');
  const { cookie, csrf } = await signIn(adminKey);
  assert.equal((await call('/v1/admin/compaction', { method: 'POST', cookie })).status, 403, 'a session needs its CSRF token');
  const started = await call('/v1/admin/compaction', { method: 'POST', cookie, csrf, schema: CompactionStartedSchema });
  assert.equal(started.status, 202);
  assert.equal(started.body.snapshot, before.snapshot.id);
  let after = before;
  await until('the compacted snapshot is served', 60_000, async () => {
    after = (await call('/v1/admin/stats', { auth: adminKey })).body as typeof before;
    return after.snapshot.id !== before.snapshot.id;
  });
  assert.equal(after.delta.vpas, 0, 'the delta is folded in');
  assert.equal(((await call('/v1/verify/upi?upi=fresh@ybl', { auth: adminKey })).body as { status: string }).status, 'FLAGGED');
  const audit = (await call('/v1/admin/audit', { auth: adminKey })).body.records as { action: string; target: string }[];
  assert.ok(audit.some((r) => r.action === 'compaction.requested' && r.target === before.snapshot.id));
});
