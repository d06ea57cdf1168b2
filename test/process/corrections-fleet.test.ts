import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { migrate } from '../../src/store/migrations.js';
import { evidence, tempDataDir, until } from '../helpers.js';
import { lastLine, runCli, startServer, type RunningServer } from '../server-process.js';
import { PUBLISH_WHEN_ASKED, appendToLog, withTestSchema } from '../store-fixtures.js';

test('fleet: a correction taken by one follower is served by the other at the same version, and retract --store is served by both', { timeout: 180_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const store = ['--store', location.url, '--store-schema', location.schema];
    const t = await tempDataDir();
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED });
    const followers: RunningServer[] = [];
    try {
      await appendToLog(location, [
        evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'm1' }),
        evidence('mule@ybl', 'https://t.me/b', { evidence_id: 'm2' }),
        evidence('shop@ybl', 'https://copied.example', { evidence_id: 's1' }),
        evidence('other@ybl', 'https://other.example', { evidence_id: 'o1' }),
      ]);
      builder.requestBuild();
      await until('a publication', 30_000, () => builder.published !== null);
      const created = await runCli(['keys', 'create', ...store, '--name', 'ops', '--scopes', 'screen,ingest,admin']);
      assert.equal(created.code, 0, created.stderr);
      const key = lastLine(created.stdout);
      for (const name of ['a', 'b']) followers.push(await startServer(join(t.root, name), { args: [...store, '--threads', '1'] }));
      const [a, b] = followers as [RunningServer, RunningServer];
      const call = async (server: RunningServer, method: string, path: string, body?: object) => {
        const response = await fetch(`${server.base}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: response.status, version: response.headers.get('x-data-version'), body: (await response.json()) as Record<string, unknown> };
      };
      const verdict = async (server: RunningServer, upi: string) => (await call(server, 'GET', `/v1/verify/upi?upi=${upi}`)).body;
      const servedBy = async (server: RunningServer, what: string, check: (v: Record<string, unknown>) => boolean, upi: string) => {
        await until(what, 5_000, async () => check(await verdict(server, upi)));
      };

      // A retraction on A: A answers once it serves it; B serves it at the same version
      // (how soon is measured by the bench's corrections section, not here).
      const retracted = await call(a, 'POST', '/v1/admin/retractions', { evidence_ids: ['m1', 'nope'], reason: 'the page was a bank notice' });
      assert.equal(retracted.status, 200, JSON.stringify(retracted.body));
      assert.deepEqual({ ...retracted.body, data_version: null }, { retracted: 1, unknown: ['nope'], already_retracted: 0, data_version: null });
      assert.equal((await verdict(a, 'mule@ybl')).evidence_count, 1);
      await servedBy(b, 'the retraction on the other follower', (v) => v.evidence_count === 1, 'mule@ybl');
      assert.equal((await call(b, 'GET', '/v1/verify/upi?upi=mule@ybl')).version, retracted.body.data_version);
      const again = await call(b, 'POST', '/v1/admin/retractions', { evidence_ids: ['m1'], reason: 'again' });
      assert.deepEqual([again.body.retracted, again.body.already_retracted], [0, 1]);

      // A clearance on B, served by A; a second one is refused with the first's id; the list and the one are on both.
      const cleared = await call(b, 'POST', '/v1/admin/clearances', { upi: 'Shop@YBL', reason: 'merchant verified', reference: 'CASE-7' });
      assert.equal(cleared.status, 201, JSON.stringify(cleared.body));
      assert.equal(cleared.body.upi, 'shop@ybl');
      await servedBy(a, 'the clearance on the other follower', (v) => v.status === 'CLEARED', 'shop@ybl');
      const twice = await call(a, 'POST', '/v1/admin/clearances', { upi: 'shop@ybl', reason: 'twice' });
      assert.deepEqual([twice.status, twice.body.error, twice.body.clearance_id], [409, 'conflict', cleared.body.id]);
      const listed = await call(a, 'GET', '/v1/admin/clearances?upi=shop@ybl');
      assert.deepEqual((listed.body.clearances as { id: string }[]).map((c) => c.id), [cleared.body.id]);
      assert.equal((await call(a, 'GET', `/v1/admin/clearances/${String(cleared.body.id)}`)).body.reference, 'CASE-7');
      await call(a, 'POST', '/v1/admin/clearances', { upi: 'other@ybl', reason: 'verified too' });
      const first = await call(b, 'GET', '/v1/admin/clearances?limit=1');
      const second = await call(b, 'GET', `/v1/admin/clearances?limit=1&cursor=${String(first.body.next_cursor)}`);
      assert.deepEqual([...(first.body.clearances as { upi: string }[]), ...(second.body.clearances as { upi: string }[])].map((c) => c.upi), ['shop@ybl', 'other@ybl']);
      assert.equal(second.body.next_cursor, null);
      assert.equal((await call(b, 'GET', '/v1/admin/clearances?cursor=clr_0000000000000000')).status, 400);
      // A control character no cursor holds is refused before it reaches the store (which refuses a NUL).
      assert.equal((await call(b, 'GET', '/v1/admin/clearances?cursor=%00')).status, 400);

      // Its end on A, served by B.
      const ended = await call(a, 'DELETE', `/v1/admin/clearances/${String(cleared.body.id)}`);
      assert.equal(ended.status, 200, JSON.stringify(ended.body));
      assert.notEqual(ended.body.ended_at, null);
      await servedBy(b, 'the end on the other follower', (v) => v.status === 'FLAGGED', 'shop@ybl');
      assert.equal((await call(b, 'DELETE', '/v1/admin/clearances/clr_0000000000000000')).status, 404);

      // From the host, into the log: both serve it.
      const cli = await runCli(['retract', ...store, '--reason', 'wrong page', 'm2', 'missing-id']);
      assert.equal(cli.code, 0, cli.stderr);
      assert.deepEqual(JSON.parse(lastLine(cli.stdout)), { retracted: 1, unknown: ['missing-id'], already_retracted: 0, data_version: null });
      for (const server of followers) await servedBy(server, 'the CLI retraction', (v) => v.status === 'CLEARED', 'mule@ybl');

      // The next publication is built under all of it.
      builder.requestBuild();
      await until('a second publication', 30_000, () => (builder.published?.seq ?? 0) > 1);
      for (const server of followers) {
        await until('the publication served', 10_000, async () => (await call(server, 'GET', '/v1/verify/upi?upi=mule@ybl')).version === builder.published!.id);
        assert.deepEqual(
          await Promise.all(['mule@ybl', 'shop@ybl', 'other@ybl'].map(async (upi) => (await verdict(server, upi)).status)),
          ['CLEARED', 'FLAGGED', 'CLEARED'],
        );
      }
    } finally {
      for (const server of followers) assert.equal(await server.stop(), 0);
      await builder.close();
      await t.cleanup();
    }
  });
});
