import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, lastLine } from '../server-process.js';
import { testClient, withTestSchema } from '../store-fixtures.js';
import { storePool } from '../../src/store/postgres.js';
import { PostgresKeyBackend } from '../../src/store/postgres-key-backend.js';
import { KeyRegistry } from '../../src/access/key-registry.js';
import { hashApiKey } from '../../src/access/api-key.js';

test('keys --store keeps hashes in PostgreSQL: create, list, rotate and revoke, writers taking turns', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    const store = ['--store', location.url, '--store-schema', location.schema];
    assert.equal((await runCli(['migrate', ...store])).code, 0);
    const created = await Promise.all(Array.from({ length: 6 }, (_, i) => runCli(['keys', 'create', ...store, '--name', `k${i}`, '--scopes', 'screen,ingest'])));
    for (const run of created) assert.equal(run.code, 0, run.stderr);
    const keys = created.map((run) => lastLine(run.stdout));

    const listed = await runCli(['keys', 'list', '--json', ...store]);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as { id: string; name: string; scopes: string[]; revoked_at: string | null }[];
    assert.deepEqual(rows.map((r) => r.name).sort(), ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'], 'no concurrent create was lost');
    assert.ok(rows.every((r) => r.scopes.join(',') === 'screen,ingest'));

    const client = await testClient(location);
    try {
      const stored = (await client.query<{ record: { hash: string } }>('SELECT record FROM api_keys')).rows.map((r) => JSON.stringify(r.record));
      for (const key of keys) {
        assert.ok(!stored.some((text) => text.includes(key)), 'no key is stored');
        assert.ok(stored.some((text) => text.includes(hashApiKey(key))), 'its hash is');
      }
    } finally {
      await client.end();
    }

    const id = rows[0]!.id;
    assert.equal((await runCli(['keys', 'rotate', id, ...store])).code, 0);
    assert.equal((await runCli(['keys', 'revoke', id, ...store])).code, 0);
    const after = JSON.parse((await runCli(['keys', 'list', '--json', ...store])).stdout) as { id: string; revoked_at: string | null }[];
    assert.ok(after.find((r) => r.id === id)!.revoked_at !== null);
    const unknown = await runCli(['keys', 'revoke', 'key_000000000000', ...store]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no key with id/);
    const both = await runCli(['keys', 'list', ...store, '--redis', 'redis://127.0.0.1:6379']);
    assert.equal(both.code, 2);
  });
});

test('a key registry on the store sees a change without a reload', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    const store = ['--store', location.url, '--store-schema', location.schema];
    assert.equal((await runCli(['migrate', ...store])).code, 0);
    const pool = storePool(location, 1);
    const registry = new KeyRegistry(new PostgresKeyBackend(pool, location));
    try {
      await registry.load();
      registry.watch();
      assert.equal(registry.size, 0);
      const key = lastLine((await runCli(['keys', 'create', ...store])).stdout);
      const started = Date.now();
      while (registry.size === 0 && Date.now() - started < 5_000) await new Promise((r) => setTimeout(r, 20));
      assert.equal(registry.size, 1);
      assert.equal(registry.records()[0]!.hash, hashApiKey(key));
    } finally {
      registry.close();
      await pool.end();
    }
  });
});
