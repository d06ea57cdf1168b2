import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { KeyAdmin } from '../../src/access/key-admin.js';
import { FileKeyBackend, keyFilePath } from '../../src/access/key-file.js';
import { RedisKeyBackend } from '../../src/access/redis-key-backend.js';
import type { KeyBackend } from '../../src/access/key-record.js';
import { runCli } from '../server-process.js';
import { tempDataDir } from '../helpers.js';

// Key changes made at the same time never undo each other: a key revoked
// while another is created stays revoked, a rotation is not lost to a
// create. Each backend reads, changes and writes as one step: the key file
// in turn within a process and under its lock across processes, Redis on
// a connection of its own per change, whatever else the shared connection
// carries meanwhile.

const SHARED_REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Revoke, rotate and create at once, many times over; every change must be in what the backend holds afterwards. */
async function changeAtOnce(backends: readonly KeyBackend[]): Promise<void> {
  const admins = backends.map((backend) => new KeyAdmin(backend));
  const existing = await Promise.all(Array.from({ length: 6 }, (_, i) => admins[i % admins.length]!.create({ name: `existing-${i}` })));
  const rotated = new Map<string, string>();
  await Promise.all([
    ...existing.slice(0, 3).map(({ record }, i) => admins[i % admins.length]!.revoke(record.id)),
    ...existing.slice(3).map(async ({ record }, i) => rotated.set(record.id, (await admins[(i + 1) % admins.length]!.rotate(record.id)).record.rotated_at!)),
    ...Array.from({ length: 12 }, (_, i) => admins[i % admins.length]!.create({ name: `new-${i}` })),
  ]);
  const held = await backends[0]!.read();
  assert.equal(held.length, 18, 'every key created is there');
  for (const { record } of existing.slice(0, 3)) assert.notEqual(held.find((k) => k.id === record.id)!.revoked_at, null, `${record.name} stays revoked`);
  for (const [id, at] of rotated) assert.equal(held.find((k) => k.id === id)!.rotated_at, at, 'the rotation stands');
}

test('the key file: changes at once within a process keep every change', async () => {
  const t = await tempDataDir();
  try {
    const path = keyFilePath(t.dir);
    await changeAtOnce([new FileKeyBackend(path), new FileKeyBackend(path)]);
  } finally {
    await t.cleanup();
  }
});

test('the key file: CLI processes creating keys at once keep every key', { timeout: 60_000 }, async () => {
  const t = await tempDataDir();
  try {
    const runs = await Promise.all(Array.from({ length: 6 }, (_, i) => runCli(['keys', 'create', '--data-dir', t.dir.root, '--name', `cli-${i}`])));
    for (const run of runs) assert.equal(run.code, 0, run.stderr);
    const names = (await new FileKeyBackend(keyFilePath(t.dir)).read()).map((k) => k.name).sort();
    assert.deepEqual(names, ['cli-0', 'cli-1', 'cli-2', 'cli-3', 'cli-4', 'cli-5']);
  } finally {
    await t.cleanup();
  }
});

test('Redis: changes at once on one shared connection keep every change, beside its other transactions', { timeout: 30_000 }, async () => {
  const prefix = `upi-risk-test-${randomBytes(6).toString('hex')}`;
  const shared = new Redis(SHARED_REDIS);
  let busy = true;
  try {
    // The shared connection's other work meanwhile: transactions of its own, as the rate limits run.
    const other = (async () => {
      while (busy) await shared.multi().incr(`${prefix}:other`).expire(`${prefix}:other`, 60).exec();
    })();
    await changeAtOnce([new RedisKeyBackend(shared, prefix), new RedisKeyBackend(shared, prefix)]);
    busy = false;
    await other;
  } finally {
    busy = false;
    const keys = await shared.keys(`${prefix}:*`);
    if (keys.length > 0) await shared.del(...keys);
    await shared.quit();
  }
});
