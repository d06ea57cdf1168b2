import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { TSchema } from '@sinclair/typebox';
import { ConflictError, NotFoundError, UpiRiskClient, ValidationError } from '@upi-risk/client';
import { evidence, ingest, tempDataDir } from '../helpers.js';
import { lastLine, runCli, startServer, type RunningServer } from '../server-process.js';
import { assertSchema } from '../schema-check.js';
import { ErrorSchema, VpaVerdictSchema } from '../../src/api/schemas.js';
import { AuditListSchema } from '../../src/api/admin-schemas.js';
import {
  AdminDisputeListSchema,
  DisputeConflictSchema,
  DisputeListSchema,
  DisputeResolvedSchema,
  DisputeReviewSchema,
  DisputeSchema,
  ReportDecidedSchema,
  ReportListSchema,
  ReportReceiptSchema,
} from '../../src/api/dispute-schemas.js';

let dataDirRoot: string;
let cleanup: () => Promise<void>;
let server: RunningServer;
let bank: string;
let other: string;
let analyst: string;

type Body = Record<string, unknown>;

/** A call with a key; an answer is checked against `schema`, an error against the spec's error body. */
async function call(path: string, key: string, method = 'GET', body?: unknown, schema?: TSchema) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const json = (await response.json()) as Body;
  if (response.status >= 400) assertSchema(ErrorSchema, json);
  else if (schema !== undefined) assertSchema(schema, json);
  return { status: response.status, body: json };
}

const dispute = (upi: string, extra: Body = {}): Body => ({ upi, reason: 'not_fraud', details: 'a merchant of ours since 2019', ...extra });

before(async () => {
  const t = await tempDataDir();
  dataDirRoot = t.dir.root;
  cleanup = t.cleanup;
  await ingest(t.dir, t.root, [
    ...['shop@ybl', 'kirana@ybl', 'again@ybl', 'killed@ybl', 'upheld@ybl'].map((upi) => evidence(upi, `https://scam.example/${upi}`, { source_category: 'scam' })),
    evidence('twice.seen@ybl', 'https://scam.example/one', { evidence_id: 'tw-1', source_category: 'scam' }),
    evidence('twice.seen@ybl', 'https://scam.example/two', { evidence_id: 'tw-2', source_category: 'scam' }),
  ]);
  bank = lastLine((await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'bank A'])).stdout);
  other = lastLine((await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'bank B'])).stdout);
  analyst = lastLine((await runCli(['keys', 'create', '--data-dir', dataDirRoot, '--name', 'analyst', '--scopes', 'admin'])).stdout);
  server = await startServer(dataDirRoot, { args: ['--threads', '2'] });
});

after(async () => {
  await server.stop();
  await cleanup();
});

test('a caller disputes a FLAGGED verdict, once, and reads only its own disputes', async () => {
  const opened = await call('/v1/disputes', bank, 'POST', dispute('Shop@YBL', { reference: 'CASE-1' }), DisputeSchema);
  assert.equal(opened.status, 201);
  assert.deepEqual([opened.body.upi, opened.body.status, opened.body.reference, opened.body.resolved_at], ['shop@ybl', 'OPEN', 'CASE-1', null]);
  const id = String(opened.body.id);

  const second = await call('/v1/disputes', bank, 'POST', dispute('shop@ybl'), DisputeConflictSchema);
  assert.equal(second.status, 409);
  assertSchema(DisputeConflictSchema, second.body);
  assert.equal(second.body.dispute_id, id);
  assert.equal((await call('/v1/disputes', other, 'POST', dispute('shop@ybl'), DisputeSchema)).status, 201, "another key's own");

  assert.deepEqual((await call(`/v1/disputes/${id}`, bank, 'GET', undefined, DisputeSchema)).body, opened.body);
  const foreign = await call(`/v1/disputes/${id}`, other);
  assert.deepEqual([foreign.status, foreign.body.error], [404, 'not_found']);
  assert.equal((await call('/v1/disputes/dsp_0000000000000000000000000000', bank)).status, 404);
  assert.equal((await call('/v1/disputes/not-an-id', bank)).status, 400);
  const mine = (await call('/v1/disputes?limit=10', bank, 'GET', undefined, DisputeListSchema)).body;
  assert.deepEqual((mine.disputes as Body[]).map((d) => d.id), [id]);
  assert.equal(mine.next_cursor, null);
  assert.ok(!((await call('/v1/disputes', other, 'GET', undefined, DisputeListSchema)).body.disputes as Body[]).some((d) => d.id === id));
});

test('refusals: a CLEARED VPA 422, bad input 4xx, wrong scope 403, a body over 64 KiB 400; nothing is stored', async () => {
  const before = ((await call('/v1/admin/disputes?limit=1000', analyst)).body.disputes as Body[]).length;
  const refusals: [string, string, unknown, number][] = [
    [bank, '/v1/disputes', dispute('nobody@ybl'), 422],
    [bank, '/v1/disputes', dispute('kirana'), 400],
    [bank, '/v1/disputes', dispute('kirana@ybl', { amount: 5 }), 422],
    [bank, '/v1/disputes', dispute('kirana@ybl', { reason: 5 }), 422],
    [bank, '/v1/disputes', dispute('kirana@ybl', { details: 'x'.repeat(2_001) }), 422],
    // Text PostgreSQL would refuse and a file would keep: refused alike in both modes. Tabs and line breaks are text.
    [bank, '/v1/disputes', dispute('kirana@ybl', { details: 'paid\u0000twice' }), 422],
    [bank, '/v1/disputes', dispute('kirana@ybl', { details: 'half \ud800 pair' }), 422],
    [bank, '/v1/disputes', dispute('kirana@ybl', { reference: 'T-\udfff' }), 422],
    [bank, '/v1/reports', { upi: 'kirana@ybl', outcome: 'confirmed_fraud', reference: 'case\u0000' }, 422],
    [bank, '/v1/disputes', '["kirana@ybl"]', 422],
    [bank, '/v1/disputes', '{"upi":', 400],
    [bank, '/v1/disputes', dispute('kirana@ybl', { details: 'x'.repeat(70_000) }), 400],
    [analyst, '/v1/disputes', dispute('kirana@ybl'), 403],
    [bank, '/v1/reports', { upi: 'kirana@ybl', outcome: 'confirmed_fraud', risk_category: 'theft' }, 422],
    [bank, '/v1/reports', { upi: 'kirana@ybl', outcome: 'maybe' }, 422],
    // Before year 0000 in UTC: it could not be written back as RFC 3339, and a stored report must read back.
    [bank, '/v1/reports', { upi: 'kirana@ybl', outcome: 'confirmed_fraud', occurred_at: '0000-01-01T00:00:00+01:00' }, 422],
    [analyst, '/v1/reports', { upi: 'kirana@ybl', outcome: 'confirmed_fraud' }, 403],
  ];
  for (const [key, path, body, status] of refusals) {
    const answer = await call(path, key, 'POST', body);
    assert.equal(answer.status, status, `${path} ${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(answer.body)}`);
  }
  for (const path of ['/v1/admin/disputes', '/v1/admin/reports', '/v1/admin/disputes/dsp_0000000000000000000000000000']) assert.equal((await call(path, bank)).status, 403, path);
  assert.equal((await call('/v1/admin/disputes/dsp_0000000000000000000000000000/resolve', bank, 'POST', { outcome: 'rejected', note: 'x' })).status, 403);
  assert.equal((await call('/v1/admin/reports/rep_0000000000000000000000000000/accept', bank, 'POST')).status, 403);
  assert.equal((await call('/v1/disputes', analyst)).status, 403);
  assert.equal((await call('/v1/admin/disputes?status=CLOSED', analyst)).status, 400);
  assert.equal((await call('/v1/admin/disputes?cursor=nope', analyst)).status, 400);
  assert.equal((await call('/v1/admin/reports?limit=0', analyst)).status, 400);
  assert.equal(((await call('/v1/admin/disputes?limit=1000', analyst)).body.disputes as Body[]).length, before);
});

test('analysts review a dispute beside the verdict and its evidence, and resolve it once: rejected, upheld by a clearance, or by retracting items', async () => {
  const id = String((await call('/v1/disputes', bank, 'POST', dispute('kirana@ybl'), DisputeSchema)).body.id);
  const open = (await call('/v1/admin/disputes?status=OPEN', analyst, 'GET', undefined, AdminDisputeListSchema)).body.disputes as Body[];
  assert.ok(open.some((d) => d.id === id && typeof d.owner === 'string'));
  const review = await call(`/v1/admin/disputes/${id}`, analyst, 'GET', undefined, DisputeReviewSchema);
  assert.equal(review.status, 200);
  assertSchema(VpaVerdictSchema, review.body.verdict);
  assert.equal((review.body.verdict as Body).status, 'FLAGGED');
  const items = review.body.evidence as Body[];
  assert.deepEqual(
    items.map((item) => [item.url, item.counts]),
    [['https://scam.example/kirana@ybl', true]],
  );
  assert.match(String(items[0]!.evidence_id), /^ev-/);

  assert.equal((await call(`/v1/admin/disputes/${id}/resolve`, analyst, 'POST', { outcome: 'rejected', note: 5 })).status, 422);
  assert.equal((await call(`/v1/admin/disputes/${id}/resolve`, analyst, 'POST', { outcome: 'upheld', note: 'cleared\u0000' })).status, 422);
  assert.equal((await call(`/v1/disputes/${id}`, bank)).body.status, 'OPEN');

  const rejected = await call(`/v1/admin/disputes/${id}/resolve`, analyst, 'POST', { outcome: 'rejected', note: 'two victims confirmed it' }, DisputeResolvedSchema);
  assert.equal(rejected.status, 200);
  assert.equal((rejected.body.dispute as Body).status, 'REJECTED');
  const again = await call(`/v1/admin/disputes/${id}/resolve`, analyst, 'POST', { outcome: 'rejected', note: 'again' });
  assert.deepEqual([again.status, again.body.error, again.body.dispute_id], [409, 'conflict', id]);
  assert.equal((await call('/v1/admin/disputes/dsp_0000000000000000000000000000/resolve', analyst, 'POST', { outcome: 'rejected', note: 'x' })).status, 404);
  const seen = (await call(`/v1/disputes/${id}`, bank, 'GET', undefined, DisputeSchema)).body;
  assert.deepEqual([seen.status, seen.resolution_note], ['REJECTED', 'two victims confirmed it']);
  assert.ok(!((await call('/v1/admin/disputes?status=OPEN', analyst)).body.disputes as Body[]).some((d) => d.id === id));
  // Resolved, the VPA may be disputed again.
  assert.equal((await call('/v1/disputes', bank, 'POST', dispute('kirana@ybl'))).status, 201);

  // Upheld: the VPA is cleared, and served CLEARED before the answer.
  const toUphold = String((await call('/v1/disputes', bank, 'POST', dispute('upheld@ybl'))).body.id);
  const upheld = await call(`/v1/admin/disputes/${toUphold}/resolve`, analyst, 'POST', { outcome: 'upheld', note: 'the owner proved it' }, DisputeResolvedSchema);
  assert.equal(upheld.status, 200, JSON.stringify(upheld.body));
  const made = upheld.body.dispute as Body;
  assert.equal(made.status, 'UPHELD');
  assert.equal((await call('/v1/verify/upi?upi=upheld@ybl', bank)).body.status, 'CLEARED');
  const clearance = await call(`/v1/admin/clearances/${String(made.clearance_id)}`, analyst);
  assert.deepEqual([clearance.body.upi, clearance.body.reference], ['upheld@ybl', toUphold]);
  assert.equal((await call(`/v1/admin/disputes/${toUphold}/resolve`, analyst, 'POST', { outcome: 'upheld', note: 'again' })).status, 409);

  // Upheld by retracting the items named, which must be the VPA's.
  const toRetract = String((await call('/v1/disputes', bank, 'POST', dispute('twice.seen@ybl'))).body.id);
  const foreign = await call(`/v1/admin/disputes/${toRetract}/resolve`, analyst, 'POST', { outcome: 'upheld', note: 'one page was wrong', retract: ['tw-1', 'not-its-item'] });
  assert.equal(foreign.status, 422);
  assert.equal((await call('/v1/verify/upi?upi=twice.seen@ybl', bank)).body.evidence_count, 2, 'nothing retracted');
  const retracted = await call(`/v1/admin/disputes/${toRetract}/resolve`, analyst, 'POST', { outcome: 'upheld', note: 'one page was wrong', retract: ['tw-1'] }, DisputeResolvedSchema);
  assert.equal(retracted.status, 200, JSON.stringify(retracted.body));
  assert.deepEqual((retracted.body.dispute as Body).retracted, ['tw-1']);
  const left = (await call('/v1/verify/upi?upi=twice.seen@ybl', bank)).body;
  assert.deepEqual([left.status, left.evidence_count, (left.sources as Body[]).map((s) => s.url)], ['FLAGGED', 1, ['https://scam.example/two']]);
  // Naming an item retracted already, as a resolution retried after its retraction was stored does: still the VPA's.
  const retry = String((await call('/v1/disputes', bank, 'POST', dispute('twice.seen@ybl'))).body.id);
  const retried = await call(`/v1/admin/disputes/${retry}/resolve`, analyst, 'POST', { outcome: 'upheld', note: 'one page was wrong', retract: ['tw-1'] }, DisputeResolvedSchema);
  assert.equal(retried.status, 200, JSON.stringify(retried.body));
  assert.equal((await call('/v1/verify/upi?upi=twice.seen@ybl', bank)).body.evidence_count, 1);
});

test('an accepted confirmed_fraud report makes the VPA FLAGGED with a report: source; a report is decided once', async () => {
  const before = (await call('/v1/verify/upi?upi=mule.payee@ybl', bank)).body;
  assert.equal(before.status, 'CLEARED');
  const received = await call('/v1/reports', bank, 'POST', { upi: 'Mule.Payee@ybl', outcome: 'confirmed_fraud', risk_category: 'mule', occurred_at: '2026-11-20T12:00:00Z', reference: 'PAY-9' }, ReportReceiptSchema);
  assert.equal(received.status, 202);
  const id = String(received.body.id);
  assert.equal((await call('/v1/verify/upi?upi=mule.payee@ybl', bank)).body.status, 'CLEARED', 'a report changes nothing by itself');
  const queue = (await call('/v1/admin/reports?status=RECEIVED', analyst, 'GET', undefined, ReportListSchema)).body.reports as Body[];
  assert.deepEqual(queue.find((r) => r.id === id)?.upi, 'mule.payee@ybl');

  const accepted = await call(`/v1/admin/reports/${id}/accept`, analyst, 'POST', undefined, ReportDecidedSchema);
  assert.equal(accepted.status, 200);
  assert.deepEqual([(accepted.body.report as Body).status, (accepted.body.report as Body).evidence_id], ['ACCEPTED', `report:${id}`]);
  const after = await call('/v1/verify/upi?upi=mule.payee@ybl', bank, 'GET', undefined, VpaVerdictSchema);
  assert.equal(after.body.status, 'FLAGGED', 'served before the answer');
  assert.equal(after.body.risk_category, 'mule');
  assert.deepEqual((after.body.sources as Body[]).map((s) => [s.url, s.category, s.captured_at]), [[`report:${id}`, 'scam', '2026-11-20T12:00:00Z']]);
  assert.equal((await call(`/v1/admin/reports/${id}/accept`, analyst, 'POST')).status, 409);
  assert.equal((await call(`/v1/admin/reports/${id}/dismiss`, analyst, 'POST')).status, 409);

  const dismissedId = String((await call('/v1/reports', other, 'POST', { upi: 'maybe@ybl', outcome: 'confirmed_fraud' })).body.id);
  const dismissed = await call(`/v1/admin/reports/${dismissedId}/dismiss`, analyst, 'POST', { note: 'no such payment' }, ReportDecidedSchema);
  assert.deepEqual([dismissed.status, (dismissed.body.report as Body).status], [200, 'DISMISSED']);
  assert.equal((await call('/v1/verify/upi?upi=maybe@ybl', bank)).body.status, 'CLEARED');
  assert.equal((await call('/v1/admin/reports/rep_0000000000000000000000000000/dismiss', analyst, 'POST')).status, 404);
  assert.equal((await call('/v1/admin/reports/rep_0/dismiss', analyst, 'POST')).status, 400);

  // Retries with one Idempotency-Key, at once, through both serving threads: one report, answered alike.
  const send = (idempotencyKey: string, body: Body) =>
    fetch(`${server.base}/v1/reports`, { method: 'POST', headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey }, body: JSON.stringify(body) }).then(
      async (response) => ({ status: response.status, body: (await response.json()) as Body }),
    );
  const retried = await Promise.all(Array.from({ length: 4 }, () => send('PAY-5521-report', { upi: 'retried@ybl', outcome: 'confirmed_fraud' })));
  assert.deepEqual(retried.map((r) => r.status), [202, 202, 202, 202]);
  assert.equal(new Set(retried.map((r) => r.body.id)).size, 1);
  const stored = (await call('/v1/admin/reports?limit=100', analyst, 'GET', undefined, ReportListSchema)).body.reports as Body[];
  assert.equal(stored.filter((r) => r.upi === 'retried@ybl').length, 1);
  const reused = await send('PAY-5521-report', { upi: 'retried@ybl', outcome: 'false_positive' });
  assert.deepEqual([reused.status, reused.body.error], [422, 'validation_error']);
  assert.equal((await send('has space', { upi: 'retried@ybl', outcome: 'confirmed_fraud' })).status, 400);

  // A false positive of a FLAGGED VPA opens the caller's dispute of it.
  const fp = await call('/v1/reports', other, 'POST', { upi: 'again@ybl', outcome: 'false_positive' }, ReportReceiptSchema);
  assert.equal(fp.status, 202);
  const theirs = (await call('/v1/disputes', other, 'GET', undefined, DisputeListSchema)).body.disputes as Body[];
  assert.equal(theirs.find((d) => d.upi === 'again@ybl')?.details, `opened by false_positive report ${String(fp.body.id)}`);

  const audit = (await call('/v1/admin/audit?limit=50', analyst, 'GET', undefined, AuditListSchema)).body.records as { action: string; target: string; actor: { key_id: string } }[];
  assert.ok(audit.some((r) => r.action === 'report.accepted' && r.target === id));
  assert.ok(audit.some((r) => r.action === 'report.dismissed' && r.target === dismissedId));
  assert.ok(audit.some((r) => r.action === 'dispute.resolved'));
});

test('disputes, reports and decisions survive SIGKILL and a restart', async () => {
  const id = String((await call('/v1/disputes', bank, 'POST', dispute('killed@ybl'))).body.id);
  const decided = String((await call('/v1/reports', bank, 'POST', { upi: 'killed@ybl', outcome: 'confirmed_fraud' })).body.id);
  assert.equal((await call(`/v1/admin/reports/${decided}/dismiss`, analyst, 'POST', { note: 'duplicate' })).status, 200);
  const resolved = String((await call('/v1/disputes', other, 'POST', dispute('killed@ybl'))).body.id);
  assert.equal((await call(`/v1/admin/disputes/${resolved}/resolve`, analyst, 'POST', { outcome: 'rejected', note: 'stands' })).status, 200);

  server.child.kill('SIGKILL');
  await new Promise((resolve) => server.child.once('exit', resolve));
  server = await startServer(dataDirRoot, { args: ['--threads', '2'] });

  assert.equal((await call(`/v1/disputes/${id}`, bank, 'GET', undefined, DisputeSchema)).body.status, 'OPEN');
  assert.equal((await call('/v1/disputes', bank, 'POST', dispute('killed@ybl'))).body.dispute_id, id, 'still the open one');
  assert.equal((await call(`/v1/disputes/${resolved}`, other, 'GET', undefined, DisputeSchema)).body.status, 'REJECTED');
  const reports = (await call('/v1/admin/reports?status=DISMISSED', analyst, 'GET', undefined, ReportListSchema)).body.reports as Body[];
  assert.equal(reports.find((r) => r.id === decided)?.decision_note, 'duplicate');
});

test('the built client: dispute, getDispute, listDisputes and report against the server', async () => {
  const client = new UpiRiskClient({ baseUrl: server.base, apiKey: other });
  const opened = await client.dispute({ upi: 'kirana@ybl', reason: 'owner_request', details: 'the owner wrote to us', reference: 'CASE-7' });
  assert.equal(opened.status, 'OPEN');
  assert.deepEqual(await client.getDispute(opened.id), opened);
  const conflict = await client.dispute({ upi: 'KIRANA@ybl', reason: 'other', details: '' }).catch((error: unknown) => error);
  assert.ok(conflict instanceof ConflictError);
  assert.equal(conflict.disputeId, opened.id);
  await assert.rejects(client.dispute({ upi: 'nobody@ybl', reason: 'other', details: '' }), ValidationError);
  await assert.rejects(new UpiRiskClient({ baseUrl: server.base, apiKey: bank }).getDispute(opened.id), NotFoundError);
  const ids: string[] = [];
  for await (const page of client.listDisputes({ limit: 1 })) ids.push(...page.disputes.map((d) => d.id));
  assert.ok(ids.includes(opened.id));
  assert.equal(new Set(ids).size, ids.length, 'every dispute once');
  assert.deepEqual(Object.keys(await client.report({ upi: 'kirana@ybl', outcome: 'confirmed_fraud', risk_category: 'mule' })), ['id', 'status']);
});
