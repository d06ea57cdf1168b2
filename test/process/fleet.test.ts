import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { lastLine, runCli, startBuilder, startServer, type BuilderProcess, type RunningServer } from '../server-process.js';
import { evidence, ndjson, sample, tempDataDir, until } from '../helpers.js';
import { freePort, startPrivatePostgres, startRedis } from '../private-services.js';

/**
 * The whole fleet as processes: a PostgreSQL and a Redis of the test's own
 * (so it can stop them), two builders, two followers on two ports. Evidence
 * by CLI and by HTTP, a key revoked, Redis stopped and started again, the
 * active builder killed, a follower restarted, PostgreSQL stopped and
 * started again.
 */

async function lookup(server: RunningServer, key: string, upi: string): Promise<{ status: number; verdict?: string }> {
  const response = await fetch(`${server.base}/v1/verify/upi?upi=${encodeURIComponent(upi)}`, { headers: { authorization: `Bearer ${key}` } }).catch((error: Error) => {
    // A server that no longer answers: say how it ended, with the end of its log.
    const { exitCode, signalCode } = server.child;
    throw new Error(`${upi} not answered (${error.message}; exit ${exitCode ?? '-'}, signal ${signalCode ?? '-'}): ${server.stderr().slice(-3000)}`, { cause: error });
  });
  const body = (await response.json()) as { status?: string };
  return { status: response.status, ...(body.status === undefined ? {} : { verdict: body.status }) };
}

async function ready(server: RunningServer): Promise<{ snapshot: string; data_version: string }> {
  const response = await fetch(`${server.base}/readyz`);
  return (await response.json()) as { snapshot: string; data_version: string };
}

async function metric(server: RunningServer, name: string): Promise<number | undefined> {
  return sample(await (await fetch(`${server.base}/metrics`)).text(), name);
}

/** The log position a data version names (`<snapshot>+<position>`), or 0 for a snapshot alone. */
function positionOf(version: string): number {
  return Number(version.split('+')[1] ?? 0);
}

test('the fleet: two builders, two followers, one PostgreSQL, one Redis, through failures', { timeout: 300_000 }, async () => {
  const postgres = await startPrivatePostgres();
  const redisPort = await freePort();
  let redis = await startRedis(redisPort);
  const t = await tempDataDir();
  const store = ['--store', postgres.url, '--store-schema', 'fleet'];
  const builders: BuilderProcess[] = [];
  const followers: RunningServer[] = [];
  const db = new pg.Client({ connectionString: postgres.url });
  try {
    assert.equal((await runCli(['migrate', ...store])).code, 0);
    const demo = join(t.root, 'demo.ndjson');
    assert.equal((await runCli(['demo-data', '--vpas', '3000', '--out', demo])).code, 0);
    assert.equal((await runCli(['ingest', ...store, demo])).code, 0);
    const created = await runCli(['keys', 'create', ...store, '--name', 'acquirer', '--scopes', 'screen,ingest']);
    assert.equal(created.code, 0, created.stderr);
    const key = lastLine(created.stdout);

    const builderArgs = (n: number) => [...store, '--data-dir', join(t.root, `builder-${n}`), '--poll-ms', '200', '--threads', '1'];
    builders.push(startBuilder(builderArgs(1)), startBuilder(builderArgs(2)));
    await db.connect();
    /** The newest publication's seq, 0 before the first. */
    const publications = async () => Number((await db.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM fleet.snapshots')).rows[0]!.seq ?? 0);
    await until('a first publication', 60_000, async () => (await publications()) > 0);
    assert.equal(builders.filter((b) => b.active()).length, 1, 'one builder is active');

    const followerArgs = [...store, '--redis', `redis://127.0.0.1:${redisPort}`, '--threads', '1'];
    followers.push(await startServer(join(t.root, 'follower-1'), { args: followerArgs }), await startServer(join(t.root, 'follower-2'), { args: followerArgs }));
    const known = (JSON.parse((await readFile(demo, 'utf8')).split('\n')[0]!) as { upi: string }).upi;
    for (const follower of followers) assert.deepEqual(await lookup(follower, key, known), { status: 200, verdict: 'FLAGGED' });

    // Evidence by CLI, then by HTTP on one follower: both serve it (how soon: the bench's fleet section).
    const viaCli = join(t.root, 'cli.ndjson');
    await writeFile(viaCli, ndjson([evidence('by.cli@ybl', 'https://cli.example')]));
    assert.equal((await runCli(['ingest', ...store, viaCli])).code, 0);
    for (const follower of followers) {
      await until('the CLI ingest served', 5_000, async () => (await lookup(follower, key, 'by.cli@ybl')).verdict === 'FLAGGED');
    }
    const posted = await fetch(`${followers[0]!.base}/v1/admin/evidence`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
      body: ndjson([evidence('by.http@ybl', 'https://http.example')]),
    });
    assert.equal(posted.status, 200, await posted.clone().text());
    assert.equal(((await posted.json()) as { added: number }).added, 1);
    assert.equal((await lookup(followers[0]!, key, 'by.http@ybl')).verdict, 'FLAGGED', 'served by the follower that took it when it answers');
    await until('the HTTP ingest served by the other follower', 5_000, async () => (await lookup(followers[1]!, key, 'by.http@ybl')).verdict === 'FLAGGED');

    // A key revoked: refused by both.
    const spare = lastLine((await runCli(['keys', 'create', ...store, '--name', 'spare'])).stdout);
    await until('the spare key accepted by both', 2_000, async () => (await lookup(followers[0]!, spare, known)).status === 200 && (await lookup(followers[1]!, spare, known)).status === 200);
    const listed = JSON.parse((await runCli(['keys', 'list', '--json', ...store])).stdout) as { id: string; name: string }[];
    assert.equal((await runCli(['keys', 'revoke', listed.find((k) => k.name === 'spare')!.id, ...store])).code, 0);
    const revokedMs = await until('the revoked key refused by both', 2_000, async () => (await lookup(followers[0]!, spare, known)).status === 401 && (await lookup(followers[1]!, spare, known)).status === 401);
    assert.ok(revokedMs < 1_000, `refused after ${revokedMs} ms`);

    // Redis gone: quotas fall back to local limits, answers go on; back, it is used again.
    redis.kill('SIGKILL');
    await once(redis, 'exit');
    for (const follower of followers) {
      await until('the Redis outage noticed', 10_000, () => /redis unreachable/.test(follower.stderr()));
      assert.equal((await lookup(follower, key, known)).status, 200);
    }
    redis = await startRedis(redisPort);
    for (const follower of followers) await until('Redis back', 10_000, () => /redis reachable again/.test(follower.stderr()));

    // The active builder killed: the other takes over within 10 s and publishes the next snapshot.
    const active = builders.find((b) => b.active())!;
    const standby = builders.find((b) => b !== active)!;
    active.child.kill('SIGKILL');
    await once(active.child, 'exit');
    const tookOver = await until('the standby active', 10_000, () => standby.active());
    assert.ok(tookOver < 10_000);
    const before = await publications();
    standby.child.kill('SIGUSR2');
    await until('a publication by the new active builder', 60_000, async () => (await publications()) > before);
    const newest = (await db.query<{ id: string }>('SELECT id FROM fleet.snapshots ORDER BY seq DESC LIMIT 1')).rows[0]!.id;
    for (const follower of followers) await until('the new snapshot served', 10_000, async () => (await ready(follower)).snapshot === newest);
    for (const upi of ['by.cli@ybl', 'by.http@ybl', known]) for (const follower of followers) assert.equal((await lookup(follower, key, upi)).verdict, 'FLAGGED', upi);

    // A follower restarted: ready only on the newest snapshot and the log after it, never an older view.
    const servedBefore = await ready(followers[1]!);
    await followers[1]!.stop();
    await writeFile(viaCli, ndjson([evidence('while.down@ybl', 'https://down.example')]));
    assert.equal((await runCli(['ingest', ...store, viaCli])).code, 0);
    followers[1] = await startServer(join(t.root, 'follower-2'), { args: followerArgs });
    const servedAfter = await ready(followers[1]);
    assert.ok(servedAfter.snapshot >= servedBefore.snapshot);
    assert.ok(positionOf(servedAfter.data_version) > positionOf(servedBefore.data_version), `${servedAfter.data_version} after ${servedBefore.data_version}`);
    assert.equal((await lookup(followers[1], key, 'while.down@ybl')).verdict, 'FLAGGED');

    // PostgreSQL stopped: followers go on answering from what they hold, say so, refuse ingest with 503 and catch up when it is back.
    await db.end();
    await postgres.stop();
    for (const follower of followers) {
      assert.equal((await lookup(follower, key, known)).verdict, 'FLAGGED');
      await until('the outage shown in /metrics', 10_000, async () => (await metric(follower, 'upi_risk_store_connected')) === 0);
    }
    const refused = await fetch(`${followers[0]!.base}/v1/admin/evidence`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
      body: ndjson([evidence('during.outage@ybl', 'https://outage.example')]),
    });
    assert.equal(refused.status, 503);
    assert.equal(((await refused.json()) as { error: string }).error, 'service_unavailable');
    await postgres.start();
    for (const follower of followers) await until('the store back in /metrics', 15_000, async () => (await metric(follower, 'upi_risk_store_connected')) === 1);
    await writeFile(viaCli, ndjson([evidence('after.outage@ybl', 'https://after.example')]));
    assert.equal((await runCli(['ingest', ...store, viaCli])).code, 0);
    for (const follower of followers) await until('evidence after the outage served', 5_000, async () => (await lookup(follower, key, 'after.outage@ybl')).verdict === 'FLAGGED');
    for (const follower of followers) {
      assert.equal((follower.stderr().match(/store unreachable/g) ?? []).length, 1, 'the outage is logged once');
      assert.equal((await lookup(follower, key, 'during.outage@ybl')).verdict, 'CLEARED', 'what was refused was not stored');
    }
  } finally {
    await db.end().catch(() => {});
    await Promise.all(followers.map((f) => f.stop()));
    await Promise.all(builders.map((b) => b.stop()));
    redis.kill('SIGKILL');
    await postgres.destroy();
    await t.cleanup();
  }
});
