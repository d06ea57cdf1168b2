import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { migrate } from '../../src/store/migrations.js';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { appendToLog, PUBLISH_WHEN_ASKED, withTestSchema } from '../store-fixtures.js';
import { evidence, ndjson, tempDataDir, until } from '../helpers.js';
import { callWithKey as call, lastLine, runCli, startServer, type RunningServer } from '../server-process.js';
import { startReceiver } from '../webhook-receiver.js';

test('fleet: watchlists kept in the store, screened and delivered by one follower, taken over when it dies', { timeout: 180_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const store = ['--store', location.url, '--store-schema', location.schema];
    const t = await tempDataDir();
    const receiver = await startReceiver();
    const followers: RunningServer[] = [];
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED });
    try {
      await appendToLog(location, [evidence('known@ybl', 'https://t.me/known')]);
      builder.requestBuild();
      await until('a publication', 30_000, () => builder.published !== null);
      const key = lastLine((await runCli(['keys', 'create', ...store, '--name', 'bank', '--scopes', 'screen,ingest'])).stdout);
      const other = lastLine((await runCli(['keys', 'create', ...store, '--name', 'other bank'])).stdout);
      const args = [...store, '--threads', '1', '--webhook-allow', '127.0.0.1', '--webhook-first-retry-seconds', '1'];
      for (const n of [1, 2]) followers.push(await startServer(join(t.root, `follower-${n}`), { args }));
      const [a, b] = followers as [RunningServer, RunningServer];

      // Made on one follower, filled on the other: both follow the store's journal.
      const created = await call(a, '/v1/watchlists', key, 'POST', { name: 'merchants', webhook_url: receiver.url });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = String(created.body.id);
      // Each answer shows what the other follower acknowledged before it.
      assert.equal((await call(b, `/v1/watchlists/${id}`, key)).status, 200);
      assert.equal((await call(b, `/v1/watchlists/${id}/vpas`, key, 'PUT', { upis: ['first@ybl', 'second@ybl', 'known@ybl'] })).status, 200);
      assert.equal((await call(a, `/v1/watchlists/${id}`, key)).body.vpa_count, 3);
      assert.equal((await call(b, `/v1/watchlists/${id}`, other)).status, 404, "another key's");

      const leader = () => followers.find((f) => f.stderr().includes('watchlist lease taken'));
      await until('one follower holds the watchlist lease', 10_000, () => leader() !== undefined);
      assert.equal(followers.filter((f) => f.stderr().includes('watchlist lease taken')).length, 1);

      // Evidence through one follower: one event, from the leader alone.
      const sent = await fetch(`${b.base}/v1/admin/evidence`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' }, body: ndjson([evidence('first@ybl', 'https://pay.example/first')]) });
      assert.equal(sent.status, 200);
      const of = (upi: string) => receiver.received.filter((r) => (JSON.parse(r.body) as { upi: string }).upi === upi);
      await until('the event arrives', 5_000, () => of('first@ybl').length === 1);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      assert.equal(of('first@ybl').length, 1, 'delivered once, not once per follower');
      const events = (await call(a, `/v1/watchlists/${id}/events`, key)).body.events as { upi: string; delivery: { state: string } }[];
      await until('the delivery is recorded on every follower', 5_000, async () =>
        ((await call(a, `/v1/watchlists/${id}/events`, key)).body.events as { delivery: { state: string } }[])[0]?.delivery.state === 'delivered',
      );
      assert.equal(events[0]?.upi, 'first@ybl');

      // The leader dies: the other takes the lease over and delivers what comes next.
      const dead = leader()!;
      const survivor = followers.find((f) => f !== dead)!;
      dead.child.kill('SIGKILL');
      await new Promise((resolve) => dead.child.once('exit', resolve));
      const again = await fetch(`${survivor.base}/v1/admin/evidence`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' }, body: ndjson([evidence('second@ybl', 'https://pay.example/second')]) });
      assert.equal(again.status, 200);
      await until('the survivor delivers', 20_000, () => of('second@ybl').length >= 1);
      assert.ok(survivor.stderr().includes('watchlist lease taken'));
    } finally {
      for (const follower of followers) await follower.stop();
      await builder.close();
      await receiver.close();
      await t.cleanup();
    }
  });
});
