import { test, before } from 'node:test';
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { tempDataDir, ingest, evidence, until } from '../helpers.js';
import { freePort, startRedis } from '../private-services.js';
import { startServer, runCli, lastLine, type RunningServer } from '../server-process.js';

// The shared Redis of the machine (started before tests run); each test uses its own key prefix.
const SHARED_REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

// Start the machine's Redis if it is down (as the environment notes say), so the tests talk to a real one.
before(async () => {
  const probe = new Redis(SHARED_REDIS, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  const up = await probe.connect().then(() => probe.ping()).then(() => true, () => false);
  probe.disconnect();
  if (!up && SHARED_REDIS === 'redis://127.0.0.1:6379') {
    execFileSync('redis-server', ['--daemonize', 'yes', '--bind', '127.0.0.1', '--port', '6379', '--save', '', '--appendonly', 'no']);
    const check = new Redis(SHARED_REDIS, { retryStrategy: () => 50, maxRetriesPerRequest: null });
    await check.ping();
    check.disconnect();
  }
});

async function withPrefix<T>(work: (prefix: string) => Promise<T>): Promise<T> {
  const prefix = `upi-risk-test-${randomBytes(6).toString('hex')}`;
  try {
    return await work(prefix);
  } finally {
    const redis = new Redis(SHARED_REDIS);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }
}

async function plansFile(root: string, sustained: number, windowSeconds = 60): Promise<string> {
  const path = join(root, 'plans.json');
  await writeFile(
    path,
    JSON.stringify({
      version: 1,
      plans: { default: { burst: 1000, sustained, windowSeconds } },
      authFailuresPerIp: { points: 1000, windowSeconds: 60 },
    }),
  );
  return path;
}

async function status(server: RunningServer, key: string): Promise<number> {
  const r = await fetch(`${server.base}/v1/verify/upi?upi=a@ybl`, { headers: { authorization: `Bearer ${key}` } });
  await r.arrayBuffer();
  return r.status;
}

test('two servers sharing Redis enforce one quota per key and honour key changes made through the CLI', { timeout: 120_000 }, async () => {
  await withPrefix(async (prefix) => {
    const t = await tempDataDir();
    // Each replica has a data directory of its own (one serve per directory); keys and quotas are shared in Redis.
    const other = await tempDataDir();
    await ingest(t.dir, t.root, [evidence('a@ybl', 'https://u.example')]);
    await ingest(other.dir, other.root, [evidence('a@ybl', 'https://u.example')]);
    const plans = await plansFile(t.root, 6);
    const redisArgs = ['--redis', SHARED_REDIS, '--redis-prefix', prefix];
    const one = await startServer(t.dir.root, { plans, args: redisArgs });
    const two = await startServer(other.dir.root, { plans, args: redisArgs });
    try {
      const created = await runCli(['keys', 'create', '--data-dir', t.dir.root, ...redisArgs]);
      assert.equal(created.code, 0, created.stderr);
      const key = lastLine(created.stdout);
      // Each wait stops at its first 200, so exactly two requests are counted here.
      await until('the key accepted by the first server', 2000, async () => (await status(one, key)) === 200);
      await until('the key accepted by the second server', 2000, async () => (await status(two, key)) === 200);
      // Two requests used above; four more fit the shared quota of six, alternating servers.
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push(await status(i % 2 === 0 ? one : two, key));
      assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429], 'one quota across both servers');

      // The key file is not involved: the key lives in Redis.
      const listed = await runCli(['keys', 'list', '--json', ...redisArgs, '--data-dir', t.dir.root]);
      const [row] = JSON.parse(listed.stdout) as { id: string }[];
      const rotated = await runCli(['keys', 'rotate', row!.id, ...redisArgs, '--data-dir', t.dir.root]);
      const newKey = lastLine(rotated.stdout);
      await until('the rotated key refused by both', 2000, async () => (await status(one, key)) === 401 && (await status(two, key)) === 401);
      const revoked = await runCli(['keys', 'revoke', row!.id, ...redisArgs, '--data-dir', t.dir.root]);
      assert.equal(revoked.code, 0, revoked.stderr);
      await until('the revoked key refused by both', 2000, async () => (await status(one, newKey)) === 401 && (await status(two, newKey)) === 401);
    } finally {
      await one.stop();
      await two.stop();
      await t.cleanup();
      await other.cleanup();
    }
  });
});

test('when Redis goes away the server keeps answering on local limits, and it returns to Redis when Redis is back', { timeout: 120_000 }, async () => {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let redis = await startRedis(port);
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('a@ybl', 'https://u.example')]);
  const plans = await plansFile(t.root, 1000);
  const args = ['--redis', url, '--redis-prefix', 'outage'];
  const created = await runCli(['keys', 'create', '--data-dir', t.dir.root, ...args]);
  const key = lastLine(created.stdout);
  const server = await startServer(t.dir.root, { plans, args });
  try {
    await until('the key accepted', 2000, async () => (await status(server, key)) === 200);
    redis.kill('SIGKILL');
    await once(redis, 'exit');
    // Keys already known stay in force and limits fall back to local ones: still 200, never 500.
    for (let i = 0; i < 5; i++) assert.equal(await status(server, key), 200);
    await until('the outage logged', 5000, () => /redis unreachable/.test(server.output()));
    redis = await startRedis(port);
    // Redis came back empty (no persistence): recreate the key there; the server must reload it from Redis.
    const again = await runCli(['keys', 'create', '--data-dir', t.dir.root, ...args]);
    const newKey = lastLine(again.stdout);
    await until('the key made after the outage accepted', 10_000, async () => (await status(server, newKey)) === 200);
    await until('the recovery logged', 5000, () => /redis reachable again/.test(server.output()));
    assert.equal((server.output().match(/redis unreachable/g) ?? []).length, 1, 'the outage is logged once');
  } finally {
    await server.stop();
    redis.kill('SIGKILL');
    await t.cleanup();
  }
});

test('when Redis stops answering, lookups are answered on local limits without waiting on it', { timeout: 60_000 }, async () => {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const redis = await startRedis(port);
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('a@ybl', 'https://u.example')]);
  const args = ['--redis', url, '--redis-prefix', 'stalled'];
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root, ...args])).stdout);
  const server = await startServer(t.dir.root, { plans: await plansFile(t.root, 1000), args });
  const timed = async () => {
    const started = performance.now();
    const answered = await status(server, key);
    return { answered, ms: performance.now() - started };
  };
  try {
    await until('the key accepted', 2000, async () => (await status(server, key)) === 200);
    // Connected, and silent: the process is stopped, its socket stays open.
    redis.kill('SIGSTOP');
    const first = await timed();
    assert.equal(first.answered, 200);
    assert.ok(first.ms < 2_000, `the first lookup waited ${first.ms.toFixed(0)} ms`);
    await until('the silence logged', 5000, () => /redis does not answer/.test(server.output()));
    // Each thread's client finds the silence by itself, within a ping's interval and timeout (1.5 s).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    for (let i = 0; i < 5; i++) {
      const lookup = await timed();
      assert.equal(lookup.answered, 200);
      assert.ok(lookup.ms < 300, `a lookup during the silence waited ${lookup.ms.toFixed(0)} ms`);
    }
    redis.kill('SIGCONT');
    await until('the recovery logged', 10_000, () => /redis reachable again/.test(server.output()));
    assert.equal(await status(server, key), 200);
  } finally {
    redis.kill('SIGCONT');
    await server.stop();
    redis.kill('SIGKILL');
    await t.cleanup();
  }
});
