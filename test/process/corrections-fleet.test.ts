import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ErrorSchema } from '../../src/api/schemas.js';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { migrate } from '../../src/store/migrations.js';
import { evidence, tempDataDir, until } from '../helpers.js';
import { assertSchema } from '../schema-check.js';
import { lastLine, runCli, startServer } from '../server-process.js';
import { PUBLISH_WHEN_ASKED, appendToLog, withTestSchema } from '../store-fixtures.js';

test('fleet: until the store holds corrections, a follower answers every corrections route 503, and retract --store is a usage error', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const store = ['--store', location.url, '--store-schema', location.schema];
    const t = await tempDataDir();
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED });
    try {
      await appendToLog(location, [evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'm1' })]);
      builder.requestBuild();
      await until('a publication', 30_000, () => builder.published !== null);
      const created = await runCli(['keys', 'create', ...store, '--name', 'ops', '--scopes', 'screen,ingest,admin']);
      assert.equal(created.code, 0, created.stderr);
      const key = lastLine(created.stdout);
      const follower = await startServer(join(t.root, 'follower'), { args: [...store, '--threads', '1'] });
      try {
        const calls: readonly [string, string, object | undefined][] = [
          ['POST', '/v1/admin/retractions', { evidence_ids: ['m1'], reason: 'wrong' }],
          ['POST', '/v1/admin/clearances', { upi: 'mule@ybl', reason: 'verified' }],
          ['GET', '/v1/admin/clearances', undefined],
          ['GET', '/v1/admin/clearances/clr_0000000000000000', undefined],
          ['DELETE', '/v1/admin/clearances/clr_0000000000000000', undefined],
        ];
        for (const [method, path, body] of calls) {
          const response = await fetch(`${follower.base}${path}`, {
            method,
            headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          });
          const answer = (await response.json()) as { error: string; message: string };
          assert.equal(response.status, 503, `${method} ${path}`);
          assertSchema(ErrorSchema, answer);
          assert.match(answer.message, /fleet store does not hold corrections yet/);
        }
        const verdict = (await (await fetch(`${follower.base}/v1/verify/upi?upi=mule@ybl`, { headers: { authorization: `Bearer ${key}` } })).json()) as { status: string };
        assert.equal(verdict.status, 'FLAGGED', 'nothing was retracted');
      } finally {
        assert.equal(await follower.stop(), 0);
      }
      const cli = await runCli(['retract', ...store, '--reason', 'wrong', 'm1']);
      assert.equal(cli.code, 2);
      assert.match(cli.stderr, /fleet store does not hold corrections yet/);
    } finally {
      await builder.close();
      await t.cleanup();
    }
  });
});
