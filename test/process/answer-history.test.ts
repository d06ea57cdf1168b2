import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskClient } from '@upi-risk/client';
import { KeyAdmin } from '../../src/access/key-admin.js';
import { FileKeyBackend, keyFilePath } from '../../src/access/key-file.js';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { evidence, ingest, sample, tempDataDir } from '../helpers.js';
import { startServer, type RunningServer } from '../server-process.js';
import { AnswerHistorySchema } from '../../src/api/history-paths.js';
import { assertSchema } from '../schema-check.js';
import { snapshotPath } from '../../src/engine/snapshot-files.js';

// GET /v1/verify/upi/history on a real server: each change of a VPA's
// answer (status, risk category, confidence band, cluster) with the data
// version that first served it, as X-Data-Version said at the time, and
// why, through new evidence, a retraction, a clearance and its end, a
// compaction, and a SIGKILL and restart that lose none of it.

type Body = Record<string, unknown>;

test('a VPA\'s history: every change with the version that served it and why, kept across a SIGKILL', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  let server: RunningServer | null = null;
  try {
    await ingest(t.dir, t.root, [evidence('payee@ybl', 'https://pages.example/a', { evidence_id: 'ev-1' }), evidence('other@ybl', 'https://pages.example/b', { evidence_id: 'ev-0' })]);
    const admin = new KeyAdmin(new FileKeyBackend(keyFilePath(t.dir)));
    const key = (await admin.create({ name: 'all', scopes: ['screen', 'ingest', 'admin'] })).key;
    const ingestOnly = (await admin.create({ name: 'ingest', scopes: ['ingest'] })).key;
    server = await startServer(t.dir.root, { args: ['--threads', '2'] });
    const running = server;
    const call = async (path: string, options: { method?: string; body?: string; type?: string; as?: string } = {}) => {
      const response = await fetch(`${running.base}${path}`, {
        method: options.method ?? 'GET',
        headers: { authorization: `Bearer ${options.as ?? key}`, ...(options.body === undefined ? {} : { 'content-type': options.type ?? 'application/json' }) },
        ...(options.body === undefined ? {} : { body: options.body }),
      });
      return { status: response.status, version: response.headers.get('x-data-version'), body: (await response.json()) as Body };
    };
    /** The answer for payee@ybl now: its status, band-defining confidence, cluster, and the version serving it. */
    const served = async () => {
      const v = await call('/v1/verify/upi?upi=payee@ybl');
      return { status: v.body.status, confidence: v.body.confidence, cluster: v.body.cluster_id, version: v.version };
    };
    const send = (...items: object[]) => call('/v1/admin/evidence', { method: 'POST', type: 'application/x-ndjson', body: items.map((i) => `${JSON.stringify(i)}\n`).join('') });

    const steps: { cause: string; answer: Awaited<ReturnType<typeof served>> }[] = [];
    steps.push({ cause: 'evidence', answer: await served() });
    // A second page: from the low band (one sighting) to the medium one.
    assert.equal((await send(evidence('payee@ybl', 'https://pages.example/c', { evidence_id: 'ev-2' }))).status, 200);
    steps.push({ cause: 'evidence', answer: await served() });
    assert.equal((await call('/v1/admin/retractions', { method: 'POST', body: JSON.stringify({ evidence_ids: ['ev-2'], reason: 'the page named another payee' }) })).status, 200);
    steps.push({ cause: 'retraction', answer: await served() });
    const clearance = await call('/v1/admin/clearances', { method: 'POST', body: JSON.stringify({ upi: 'payee@ybl', reason: 'a merchant we know' }) });
    assert.equal(clearance.status, 201, JSON.stringify(clearance.body));
    steps.push({ cause: 'clearance', answer: await served() });
    assert.equal((await call(`/v1/admin/clearances/${String(clearance.body.id)}`, { method: 'DELETE' })).status, 200);
    steps.push({ cause: 'clearance_ended', answer: await served() });
    // Another payee on its page: the compaction puts the two in one cluster.
    assert.equal((await send(evidence('mate@ybl', 'https://pages.example/a', { evidence_id: 'ev-3' }))).status, 200);
    const before = (await served()).version!;
    assert.equal((await call('/v1/admin/compaction', { method: 'POST' })).status, 202);
    const deadline = Date.now() + 60_000;
    while ((await served()).version!.split('+')[0] === before.split('+')[0] && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    steps.push({ cause: 'compaction', answer: await served() });

    assert.deepEqual(
      steps.map((s) => [s.answer.status, s.answer.cluster !== null]),
      [['FLAGGED', false], ['FLAGGED', false], ['FLAGGED', false], ['CLEARED', false], ['FLAGGED', false], ['FLAGGED', true]],
      'the steps changed what they should',
    );
    const expected = steps.map((s) => [s.answer.version, s.answer.status, s.answer.confidence, s.answer.cluster, s.cause]);
    const history = async () => {
      const answer = await call('/v1/verify/upi/history?upi=Payee@YBL');
      assert.equal(answer.status, 200);
      assert.equal(answer.body.upi, 'Payee@YBL', 'echoed as given');
      assertSchema(AnswerHistorySchema, answer.body);
      return (answer.body.changes as Body[]).map((c) => [c.data_version, c.status, c.confidence, c.cluster_id, c.cause]);
    };
    assert.deepEqual(await history(), expected);
    const mate = (await call('/v1/verify/upi/history?upi=mate@ybl')).body.changes as Body[];
    assert.deepEqual(mate.map((c) => c.cause), ['evidence', 'compaction']);

    // Killed and started again: nothing lost, nothing recorded twice. Killed as the compaction's file may still be
    // written (it is served as soon as assembled), and the file removed, as if the kill came before it: the restart
    // builds again before serving, and the cluster does not go back.
    server.child.kill('SIGKILL');
    await new Promise((resolve) => running.child.once('exit', resolve));
    const compacted = steps.at(-1)!.answer;
    await rm(snapshotPath(t.dir, compacted.version!.split('+')[0]!), { force: true });
    server = await startServer(t.dir.root, { args: ['--threads', '2'] });
    const again = server;
    assert.match(again.stderr(), /the snapshot last served was not written/);
    const restarted = await fetch(`${again.base}/v1/verify/upi?upi=payee@ybl`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(((await restarted.json()) as Body).cluster_id, compacted.cluster);
    const after = await fetch(`${again.base}/v1/verify/upi/history?upi=payee@ybl`, { headers: { authorization: `Bearer ${key}` } });
    assert.deepEqual(((await after.json()) as { changes: Body[] }).changes.map((c) => [c.data_version, c.status, c.confidence, c.cluster_id, c.cause]), expected);

    const byClient = await new UpiRiskClient({ baseUrl: again.base, apiKey: key }).history('payee@ybl');
    assert.deepEqual(byClient.changes.map((c) => [c.data_version, c.status, c.confidence, c.cluster_id, c.cause]), expected, 'the built client');

    // What it refuses.
    const ask = async (query: string, as = key) => (await fetch(`${again.base}/v1/verify/upi/history${query}`, { headers: { authorization: `Bearer ${as}` } })).status;
    assert.equal(await ask('?upi=nobody@ybl'), 200);
    assert.deepEqual((await (await fetch(`${again.base}/v1/verify/upi/history?upi=nobody@ybl`, { headers: { authorization: `Bearer ${key}` } })).json()) as Body, { upi: 'nobody@ybl', changes: [] });
    assert.equal(await ask(''), 400);
    assert.equal(await ask('?upi=not-a-vpa'), 400);
    assert.equal(await ask('?upi=%zz'), 400);
    assert.equal(await ask('?upi=payee@ybl', ingestOnly), 403);
    assert.equal((await fetch(`${again.base}/v1/verify/upi/history?upi=payee@ybl`)).status, 401);
  } finally {
    await server?.stop();
    await t.cleanup();
  }
});

test('a history file damaged is refused with a clear error while screening goes on; moved aside, a new one starts', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  let running: RunningServer | null = null;
  try {
    await ingest(t.dir, t.root, [evidence('payee@ybl', 'https://pages.example/a')]);
    const key = (await new KeyAdmin(new FileKeyBackend(keyFilePath(t.dir))).create({ name: 'screen', scopes: ['screen'] })).key;
    const get = async (server: RunningServer, path: string) => {
      const response = await fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${key}` } });
      return { status: response.status, body: (await response.json()) as Body };
    };
    const metrics = async (server: RunningServer) => {
      const text = await (await fetch(`${server.base}/metrics`)).text();
      return [sample(text, 'upi_risk_answer_history_recorded'), sample(text, 'upi_risk_answer_history_bytes'), sample(text, 'upi_risk_answer_history_index_bytes')];
    };

    let server = await startServer(t.dir.root);
    running = server;
    assert.equal(((await get(server, '/v1/verify/upi/history?upi=payee@ybl')).body.changes as Body[]).length, 1);
    const [recorded, fileBytes, indexBytes] = await metrics(server);
    assert.deepEqual([recorded, fileBytes], [1, (await stat(t.dir.answerChanges)).size]);
    assert.ok(indexBytes! > 0, `the index in memory: ${indexBytes}`);
    assert.equal(await server.stop(), 0);

    // Stopped cleanly, it kept its index: the next start reads no record, and compares only what may have changed.
    server = await startServer(t.dir.root);
    running = server;
    assert.match(server.stderr(), /"keptIndex":true,"bytesRead":0,.*"history of answers opened"/);
    assert.match(server.stderr(), /"compared":"since the last comparison"/);
    assert.equal(((await get(server, '/v1/verify/upi/history?upi=payee@ybl')).body.changes as Body[]).length, 1);
    assert.equal(await server.stop(), 0);

    // A bit flipped in the first record.
    const bytes = await readFile(t.dir.answerChanges);
    bytes[24 + 9]! ^= 0x10;
    await writeFile(t.dir.answerChanges, bytes);
    server = await startServer(t.dir.root);
    running = server;
    assert.equal((await get(server, '/v1/verify/upi?upi=payee@ybl')).body.status, 'FLAGGED', 'screening goes on');
    const refused = await get(server, '/v1/verify/upi/history?upi=payee@ybl');
    assert.deepEqual([refused.status, refused.body.error], [503, 'service_unavailable']);
    assert.match(String(refused.body.message), /fails its CRC/);
    assert.match(server.stderr(), /ERR_HISTORY/);
    assert.deepEqual(await metrics(server), [0, 0, 0]);
    assert.equal(await server.stop(), 0);
    assert.deepEqual(await readFile(t.dir.answerChanges), bytes, 'left as it was, for an operator to restore');

    await rename(t.dir.answerChanges, `${t.dir.answerChanges}.damaged`);
    server = await startServer(t.dir.root);
    running = server;
    const fresh = (await get(server, '/v1/verify/upi/history?upi=payee@ybl')).body.changes as Body[];
    assert.deepEqual(fresh.map((c) => [c.status, c.cause]), [['FLAGGED', 'evidence']], 'a new history, from the answer served now');
  } finally {
    if (running?.child.exitCode === null && running.child.signalCode === null) await running.stop();
    await t.cleanup();
  }
});
