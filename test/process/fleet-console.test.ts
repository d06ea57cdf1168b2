import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { migrate } from '../../src/store/migrations.js';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { appendToLog, PUBLISH_WHEN_ASKED, testClient, withTestSchema } from '../store-fixtures.js';
import { evidence, tempDataDir, until } from '../helpers.js';
import { lastLine, runCli, startServer, type RunningServer } from '../server-process.js';

/** A JSON call to a follower with a key or a session. */
async function call(server: RunningServer, path: string, options: { method?: string; auth?: string; cookie?: string; csrf?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (options.auth !== undefined) headers.authorization = `Bearer ${options.auth}`;
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  if (options.csrf !== undefined) headers['x-csrf-token'] = options.csrf;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${server.base}${path}`, { method: options.method ?? 'GET', headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }) });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

test('fleet: a console session, the audit log and key usage are shared by every follower', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const store = ['--store', location.url, '--store-schema', location.schema];
    const t = await tempDataDir();
    const followers: RunningServer[] = [];
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED });
    const client = await testClient(location);
    try {
      await appendToLog(location, [evidence('one@ybl', 'https://t.me/a'), evidence('two@ybl', 'https://t.me/a')]);
      builder.requestBuild();
      await until('a publication', 30_000, () => builder.published !== null);
      const created = await runCli(['keys', 'create', ...store, '--name', 'ops', '--scopes', 'screen,ingest,admin']);
      assert.equal(created.code, 0, created.stderr);
      const adminKey = lastLine(created.stdout);
      for (const n of [1, 2]) followers.push(await startServer(join(t.root, `follower-${n}`), { args: [...store, '--threads', '1'] }));
      const [a, b] = followers as [RunningServer, RunningServer];

      // Signed in on one follower, the session works on the other (a load balancer may send each request anywhere).
      const signIn = await call(a, '/v1/admin/session', { method: 'POST', body: { api_key: adminKey } });
      assert.equal(signIn.status, 200);
      const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
      const csrf = String(signIn.body.csrf_token);
      assert.equal((await call(b, '/v1/admin/session', { cookie })).status, 200);
      const made = await call(b, '/v1/admin/keys', { method: 'POST', cookie, csrf, body: { name: 'bank' } });
      assert.equal(made.status, 201);
      const bankKey = String(made.body.key);

      // The key made on one follower works on the other, and its use is counted in the store for both to see.
      await until('the new key works on the other follower', 5_000, async () => (await call(a, '/v1/verify/upi?upi=one@ybl', { auth: bankKey })).status === 200);
      await until('the use is counted', 15_000, async () => {
        const keys = (await call(b, '/v1/admin/keys', { cookie })).body.keys as { name: string; requests_24h: number; last_used_at: string | null }[];
        const bank = keys.find((k) => k.name === 'bank');
        return bank !== undefined && bank.requests_24h >= 1 && bank.last_used_at !== null;
      });

      const audit = (await call(a, '/v1/admin/audit', { cookie })).body.records as { action: string; actor: { name: string } }[];
      assert.deepEqual(
        audit.map((r) => `${r.action} by ${r.actor.name}`),
        ['key.created by ops', 'session.signed_in by ops', 'key.created by cli'],
      );
      assert.equal(Number((await client.query('SELECT count(*) AS n FROM audit_records')).rows[0].n), 3);
      assert.equal(Number((await client.query('SELECT count(*) AS n FROM console_sessions')).rows[0].n), 1);

      const stats = (await call(b, '/v1/admin/stats', { auth: adminKey })).body as { mode: string; builds: { outcome: string; snapshot: string }[]; freshness: { store_connected?: boolean } };
      assert.equal(stats.mode, 'fleet');
      assert.equal(stats.builds[0]?.outcome, 'published');
      assert.equal(stats.builds[0]?.snapshot, builder.published!.id);
      assert.equal(stats.freshness.store_connected, true);

      // Signed out on the other follower: the session has ended everywhere.
      assert.equal((await call(b, '/v1/admin/session', { method: 'DELETE', cookie, csrf })).status, 200);
      assert.equal((await call(a, '/v1/admin/session', { cookie })).status, 401);
    } finally {
      for (const follower of followers) await follower.stop();
      await client.end();
      await builder.close();
      await t.cleanup();
    }
  });
});
