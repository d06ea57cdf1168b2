import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { migrate } from '../../src/store/migrations.js';
import { PostgresDisputeStore } from '../../src/corrections/postgres-dispute-store.js';
import type { DisputeStore } from '../../src/corrections/dispute-store.js';
import { ErrorCode } from '../../src/common/errors.js';
import { dropTestSchema, newTestLocation, testClient, withPublishedStore, withTestSchema } from '../store-fixtures.js';
import { evidence, until } from '../helpers.js';
import { callWithKey as call, lastLine, runCli, startServer, type RunningServer } from '../server-process.js';
import { KEY_A, disputeStoreCases, openDisputeOf } from '../dispute-store-cases.js';

type Body = Record<string, unknown>;

/** A store in a fresh, migrated schema, dropped when the store is closed. */
async function freshStore(): Promise<DisputeStore> {
  const location = newTestLocation();
  await migrate(location);
  const store = new PostgresDisputeStore(location);
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await dropTestSchema(location);
  };
  return store;
}

disputeStoreCases('postgres tables', freshStore);

test('postgres tables: a row this service did not write is refused with ERR_STORE_DATA', async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const store = new PostgresDisputeStore(location);
    const client = await testClient(location);
    try {
      const d = await store.openDispute(openDisputeOf(KEY_A, 'row@ybl'));
      await client.query("UPDATE disputes SET record = jsonb_set(record, '{status}', '\"MAYBE\"') WHERE id = $1", [d.id]);
      await assert.rejects(store.dispute(d.id), (error: Error & { code?: string }) => error.code === ErrorCode.STORE_DATA && error.message.includes(d.id));
    } finally {
      await client.end();
      await store.close();
    }
  });
});

test('fleet: disputes and reports kept in the store, one open dispute per key and VPA across followers, decided once', { timeout: 180_000 }, async () => {
  await withPublishedStore([evidence('known@ybl', 'https://t.me/known')], async ({ location, storeArgs, root }) => {
    const followers: RunningServer[] = [];
    try {
      const bank = lastLine((await runCli(['keys', 'create', ...storeArgs, '--name', 'bank'])).stdout);
      const other = lastLine((await runCli(['keys', 'create', ...storeArgs, '--name', 'other bank'])).stdout);
      const analyst = lastLine((await runCli(['keys', 'create', ...storeArgs, '--name', 'analyst', '--scopes', 'admin'])).stdout);
      for (const n of [1, 2]) followers.push(await startServer(join(root, `follower-${n}`), { args: [...storeArgs, '--threads', '1'] }));
      const [a, b] = followers as [RunningServer, RunningServer];

      // Opened on both followers at once: one dispute, the other answer names it.
      const body = { upi: 'known@ybl', reason: 'not_fraud', details: 'ours' };
      const both = await Promise.all([call(a, '/v1/disputes', bank, 'POST', body), call(b, '/v1/disputes', bank, 'POST', body)]);
      assert.deepEqual(both.map((r) => r.status).sort(), [201, 409]);
      const id = String(both.find((r) => r.status === 201)!.body.id);
      assert.equal(both.find((r) => r.status === 409)!.body.dispute_id, id);
      assert.equal((await call(b, `/v1/disputes/${id}`, bank)).body.status, 'OPEN');
      assert.equal((await call(a, `/v1/disputes/${id}`, other)).status, 404, "another key's");

      // Resolved on both at once: once.
      const resolve = (server: RunningServer) => call(server, `/v1/admin/disputes/${id}/resolve`, analyst, 'POST', { outcome: 'rejected', note: 'the evidence stands' });
      const resolutions = await Promise.all([resolve(a), resolve(b)]);
      assert.deepEqual(resolutions.map((r) => r.status).sort(), [200, 409]);
      assert.equal((await call(b, `/v1/disputes/${id}`, bank)).body.resolution_note, 'the evidence stands');

      // A report taken by one follower, accepted through the other: evidence in the log, served by both.
      const report = await call(a, '/v1/reports', other, 'POST', { upi: 'fresh@ybl', outcome: 'confirmed_fraud', risk_category: 'gambling' });
      assert.equal(report.status, 202);
      const accepted = await call(b, `/v1/admin/reports/${String(report.body.id)}/accept`, analyst, 'POST');
      assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
      assert.equal((await call(b, '/v1/verify/upi?upi=fresh@ybl', bank)).body.status, 'FLAGGED');
      await until('the other follower serves it', 10_000, async () => (await call(a, '/v1/verify/upi?upi=fresh@ybl', bank)).body.status === 'FLAGGED');
      const client = await testClient(location);
      try {
        const logged = await client.query<{ upi: string; url: string }>('SELECT upi, url FROM evidence WHERE evidence_id = $1', [`report:${String(report.body.id)}`]);
        assert.deepEqual(logged.rows, [{ upi: 'fresh@ybl', url: `report:${String(report.body.id)}` }]);
      } finally {
        await client.end();
      }

      // A follower killed: what it acknowledged is in the store, and the other answers it.
      a.child.kill('SIGKILL');
      await new Promise((resolve) => a.child.once('exit', resolve));
      const reports = (await call(b, '/v1/admin/reports?status=ACCEPTED', analyst)).body.reports as Body[];
      assert.deepEqual(reports.map((r) => r.evidence_id), [`report:${String(report.body.id)}`]);
    } finally {
      for (const follower of followers) await follower.stop();
    }
  });
});
