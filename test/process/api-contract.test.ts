import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertSchema } from '../schema-check.js';
import { BatchResponseSchema, ClusterSchema, ErrorSchema, VpaVerdictSchema } from '../../src/api/schemas.js';
import { tempDataDir, ingest, evidence } from '../helpers.js';
import { startServer, runCli, lastLine, type RunningServer } from '../server-process.js';

// One server process for the contract suite; every response is checked against the JSON Schemas.
let server: RunningServer;
let key: string;
let cleanup: () => Promise<void>;


interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function call(path: string, init: RequestInit & { auth?: string | null } = {}): Promise<Reply> {
  const headers = new Headers(init.headers);
  if (init.auth !== null) headers.set('authorization', init.auth ?? `Bearer ${key}`);
  const response = await fetch(`${server.base}${path}`, { ...init, headers });
  const text = await response.text();
  assert.equal(response.headers.get('content-type'), 'application/json', `${path} content type`);
  assert.ok((response.headers.get('x-request-id') ?? '').length > 0, 'X-Request-Id on every response');
  assert.ok((response.headers.get('x-data-version') ?? '').length > 0, 'X-Data-Version on every response');
  assert.ok(!Number.isNaN(Date.parse(response.headers.get('x-data-as-of') ?? '')), 'X-Data-As-Of on every response');
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    assert.match(response.headers.get(name) ?? '', /^\d+$/, `${name} on every response`);
  }
  const body = JSON.parse(text) as Record<string, unknown>;
  if (response.status !== 200) {
    assertSchema(ErrorSchema, body);
    assert.equal(Object.keys(body).filter((k) => k !== 'retry_after').sort().join(','), 'error,message');
  }
  return { status: response.status, headers: response.headers, body };
}

async function expectError(reply: Promise<Reply>, status: number, code: string, message?: RegExp): Promise<Reply> {
  const r = await reply;
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.error, code);
  if (message !== undefined) assert.match(String(r.body.message), message);
  return r;
}

const batch = (body: unknown, contentType = 'application/json') =>
  call('/v1/verify/upi/batch', { method: 'POST', headers: { 'content-type': contentType }, body: typeof body === 'string' ? body : JSON.stringify(body) });

before(async () => {
  const t = await tempDataDir();
  cleanup = t.cleanup;
  await ingest(t.dir, t.root, [
    evidence('gang1@ybl', 'https://t.me/gang', { source_category: 'telegram', risk_category: 'mule' }),
    evidence('gang2@okaxis', 'https://t.me/gang', { source_category: 'telegram', risk_category: 'mule' }),
    evidence('gang3@paytm', 'https://t.me/gang', { source_category: 'telegram' }),
    evidence('gang3@paytm', 'https://bet.example/deposit', { screenshot_available: true }),
    evidence('solo@ibl', 'https://phish.example/kyc', { source_category: 'phishing' }),
  ]);
  const created = await runCli(['keys', 'create', '--data-dir', t.dir.root, '--name', 'contract']);
  assert.equal(created.code, 0, created.stderr);
  key = lastLine(created.stdout);
  server = await startServer(t.dir.root);
});

after(async () => {
  assert.equal(await server.stop(), 0, 'graceful exit');
  await cleanup();
});

test('single lookup: FLAGGED verdict with every field, case-insensitive, query echoed', async () => {
  const r = await call('/v1/verify/upi?upi=GANG3%40PayTM');
  assert.equal(r.status, 200);
  assertSchema(VpaVerdictSchema, r.body);
  assert.equal(r.body.upi, 'GANG3@PayTM');
  assert.equal(r.body.status, 'FLAGGED');
  assert.equal(r.body.evidence_count, 2);
  assert.equal((r.body.sources as unknown[]).length, 2);
  assert.match(String(r.body.cluster_id), /^MC-\d+$/);
  assert.equal(r.body.cluster_size, 3);
});

test('single lookup: CLEARED carries every field with null, 0 and empty values', async () => {
  const r = await call('/v1/verify/upi?upi=never.seen@ybl');
  assert.equal(r.status, 200);
  assertSchema(VpaVerdictSchema, r.body);
  assert.deepEqual(r.body, {
    upi: 'never.seen@ybl',
    status: 'CLEARED',
    confidence: null,
    risk_category: null,
    cluster_id: null,
    cluster_size: 0,
    first_seen: null,
    last_seen: null,
    sources: [],
    evidence_count: 0,
  });
});

test('single lookup errors: missing or invalid upi is 400 bad_request', async () => {
  await expectError(call('/v1/verify/upi'), 400, 'bad_request', /upi/);
  await expectError(call('/v1/verify/upi?upi='), 400, 'bad_request');
  await expectError(call('/v1/verify/upi?upi=no-at-sign'), 400, 'bad_request', /valid VPA/);
  await expectError(call('/v1/verify/upi?upi=a%40b'), 400, 'bad_request');
  await expectError(call(`/v1/verify/upi?upi=${'a'.repeat(300)}%40ybl`), 400, 'bad_request');
  await expectError(call('/v1/verify/upi?upi=%E2%82%AC%40ybl'), 400, 'bad_request');
});

test('authentication: missing header, other scheme, unknown key are 401 unauthorized', async () => {
  const missing = await expectError(call('/v1/verify/upi?upi=a@ybl', { auth: null }), 401, 'unauthorized', /missing/);
  assert.equal(missing.headers.get('www-authenticate'), 'Bearer');
  await expectError(call('/v1/verify/upi?upi=a@ybl', { auth: `Basic ${key}` }), 401, 'unauthorized', /Bearer/);
  await expectError(call('/v1/verify/upi?upi=a@ybl', { auth: 'Bearer upirisk_not-a-real-key' }), 401, 'unauthorized', /invalid/);
  await expectError(call('/v1/verify/upi?upi=a@ybl', { auth: 'Bearer' }), 401, 'unauthorized');
  await expectError(call('/v1/verify/upi/batch', { method: 'POST', auth: null }), 401, 'unauthorized');
  await expectError(call('/v1/verify/upi/cluster/MC-1', { auth: null }), 401, 'unauthorized');
  // The scheme is case-insensitive (RFC 7235).
  assert.equal((await call('/v1/verify/upi?upi=a@ybl', { auth: `bearer ${key}` })).status, 200);
});

test('batch: reference form, input order with duplicates, counts add up, one snapshot', async () => {
  const upis = ['solo@ibl', 'nobody@ybl', 'GANG1@ybl', 'solo@ibl', 'other@okaxis'];
  const r = await batch({ upis });
  assert.equal(r.status, 200);
  assertSchema(BatchResponseSchema, r.body);
  const results = r.body.results as { upi: string; status: string }[];
  assert.deepEqual(results.map((x) => x.upi), upis);
  assert.deepEqual(results.map((x) => x.status), ['FLAGGED', 'CLEARED', 'FLAGGED', 'FLAGGED', 'CLEARED']);
  assert.equal(r.body.total, 5);
  assert.equal(r.body.flagged_count, 3);
  assert.equal(r.body.cleared_count, 2);
  for (const item of results) assert.equal('sources' in item || 'first_seen' in item, false);
});

test('batch: "vpas" is accepted as an alias and the answer is still the reference form', async () => {
  const r = await batch({ vpas: ['solo@ibl'] });
  assert.equal(r.status, 200);
  assertSchema(BatchResponseSchema, r.body);
  assert.equal(r.body.total, 1);
  const max = await batch({ upis: Array.from({ length: 100 }, (_, i) => `user${i}@ybl`) });
  assert.equal(max.status, 200);
  assert.equal(max.body.cleared_count, 100);
});

test('batch errors: 400 for missing, malformed, empty, oversized or invalid; 422 for wrong shapes', async () => {
  await expectError(batch(''), 400, 'bad_request', /missing/);
  await expectError(batch('{"upis": ['), 400, 'bad_request', /JSON/);
  await expectError(batch({}), 400, 'bad_request', /upis/);
  await expectError(batch({ upis: [] }), 400, 'bad_request', /1 to 100/);
  await expectError(batch({ upis: Array.from({ length: 101 }, (_, i) => `u${i}@ybl`) }), 400, 'bad_request', /101/);
  await expectError(batch({ upis: ['ok@ybl', 'bad'] }), 400, 'bad_request', /\[1\]/);
  await expectError(batch({ upis: ['a@ybl'] }, 'text/plain'), 400, 'bad_request', /Content-Type/);
  await expectError(batch(JSON.stringify({ upis: ['a@ybl'], pad: 'x'.repeat(70_000) })), 400, 'bad_request', /larger than/);
  await expectError(batch([1, 2]), 422, 'validation_error');
  await expectError(batch('"text"'), 422, 'validation_error');
  await expectError(batch('null'), 422, 'validation_error');
  await expectError(batch({ upis: 'a@ybl' }), 422, 'validation_error', /array/);
  await expectError(batch({ upis: ['a@ybl', 7] }), 422, 'validation_error', /\[1\]/);
  await expectError(batch({ upis: ['a@ybl'], vpas: ['b@ybl'] }), 422, 'validation_error', /not both/);
  // charset parameters are fine
  assert.equal((await batch({ upis: ['a@ybl'] }, 'application/json; charset=utf-8')).status, 200);
});

test('cluster: consistent with every member lookup', async () => {
  const v = await call('/v1/verify/upi?upi=gang1@ybl');
  const id = String(v.body.cluster_id);
  const r = await call(`/v1/verify/upi/cluster/${id}`);
  assert.equal(r.status, 200);
  assertSchema(ClusterSchema, r.body);
  assert.equal(r.body.cluster_id, id);
  const members = r.body.members as { upi: string; confidence: number; first_seen: string }[];
  assert.equal(r.body.size, members.length);
  assert.equal(members.length, 3);
  for (const m of members) {
    const mv = await call(`/v1/verify/upi?upi=${encodeURIComponent(m.upi)}`);
    assert.equal(mv.body.cluster_id, id);
    assert.equal(mv.body.cluster_size, r.body.size);
    assert.equal(mv.body.confidence, m.confidence);
  }
  assert.equal(r.body.total_evidence_count, 4);
});

test('cluster errors: wrong form is 400, unknown is 404', async () => {
  await expectError(call('/v1/verify/upi/cluster/cluster-1'), 400, 'bad_request', /MC-/);
  await expectError(call('/v1/verify/upi/cluster/'), 400, 'bad_request');
  await expectError(call('/v1/verify/upi/cluster/MC-'), 400, 'bad_request');
  await expectError(call('/v1/verify/upi/cluster/MC-99999'), 404, 'not_found');
});

test('planned operations are routed and authenticated, then answer 503 service_unavailable', async () => {
  await expectError(call('/v1/cyber/check?entity=example.com'), 503, 'service_unavailable', /planned/);
  await expectError(call('/v1/audit/app', { method: 'POST', body: '{"package_id":"x","platform":"android"}', headers: { 'content-type': 'application/json' } }), 503, 'service_unavailable', /planned/);
  await expectError(call('/v1/cyber/check?entity=example.com', { auth: null }), 401, 'unauthorized');
});

test('unknown paths and methods are 404 not_found', async () => {
  await expectError(call('/v2/verify/upi?upi=a@ybl'), 404, 'not_found');
  await expectError(call('/'), 404, 'not_found');
  await expectError(call('/v1/verify/upi', { method: 'DELETE' }), 404, 'not_found');
});

test('every request gets its own X-Request-Id', async () => {
  const ids = new Set<string>();
  for (let i = 0; i < 20; i++) ids.add((await call('/v1/verify/upi?upi=a@ybl')).headers.get('x-request-id')!);
  assert.equal(ids.size, 20);
});

test('the OpenAPI document is served and names every live and planned path', async () => {
  const r = await call('/v1/openapi.json', { auth: null });
  assert.equal(r.status, 200);
  assert.equal(r.body.openapi, '3.1.0');
  assert.deepEqual(Object.keys(r.body.paths as object).sort(), [
    '/v1/admin/audit',
    '/v1/admin/clearances',
    '/v1/admin/clearances/{id}',
    '/v1/admin/clusters',
    '/v1/admin/clusters/{cluster_id}/graph',
    '/v1/admin/compaction',
    '/v1/admin/disputes',
    '/v1/admin/disputes/{id}',
    '/v1/admin/disputes/{id}/resolve',
    '/v1/admin/evidence',
    '/v1/admin/keys',
    '/v1/admin/keys/{id}',
    '/v1/admin/keys/{id}/revoke',
    '/v1/admin/keys/{id}/rotate',
    '/v1/admin/reports',
    '/v1/admin/reports/{id}/accept',
    '/v1/admin/reports/{id}/dismiss',
    '/v1/admin/retractions',
    '/v1/admin/session',
    '/v1/admin/stats',
    '/v1/admin/watchlists',
    '/v1/admin/watchlists/{id}',
    '/v1/admin/watchlists/{id}/events',
    '/v1/admin/watchlists/{id}/vpas',
    '/v1/audit/app',
    '/v1/cyber/check',
    '/v1/data-versions/{version}',
    '/v1/disputes',
    '/v1/disputes/{id}',
    '/v1/mirror/diff/{from}/{to}',
    '/v1/mirror/full/{version}',
    '/v1/mirror/manifest',
    '/v1/mirror/public-key',
    '/v1/reports',
    '/v1/verify/upi',
    '/v1/verify/upi/batch',
    '/v1/verify/upi/cluster/{cluster_id}',
    '/v1/verify/upi/history',
    '/v1/verify/upi/range/{prefix}',
    '/v1/watchlists',
    '/v1/watchlists/{id}',
    '/v1/watchlists/{id}/events',
    '/v1/watchlists/{id}/events/{event_id}/redeliver',
    '/v1/watchlists/{id}/secret',
    '/v1/watchlists/{id}/vpas',
  ]);
  const schemas = (r.body.components as { schemas: Record<string, unknown> }).schemas;
  // The document names nested components by $ref and drops TypeBox's $ids: put both back to compare.
  const inlined = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(inlined);
    if (value === null || typeof value !== 'object') return value;
    const { $ref: target, ...rest } = value as Record<string, unknown>;
    if (typeof target === 'string') return inlined(schemas[target.replace('#/components/schemas/', '')]);
    return Object.fromEntries(Object.entries(rest).map(([k, child]) => [k, inlined(child)]));
  };
  const withoutIds: unknown = JSON.parse(JSON.stringify(VpaVerdictSchema), (k, v: unknown) => (k === '$id' ? undefined : v));
  assert.deepEqual(inlined(schemas.VpaVerdict), withoutIds);
});
