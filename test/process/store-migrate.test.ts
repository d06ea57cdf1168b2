import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../server-process.js';
import { testClient, withTestSchema } from '../store-fixtures.js';
import { tempDataDir, ndjson, evidence } from '../helpers.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { knownMigrations } from '../../src/store/migrations.js';

test('migrate creates the schema once, from several processes at once, and again is a no-op', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    const args = ['migrate', '--store', location.url, '--store-schema', location.schema];
    const runs = await Promise.all([runCli(args), runCli(args), runCli(args)]);
    for (const run of runs) assert.equal(run.code, 0, run.stderr);
    // Between them, every migration was applied exactly once.
    const applied = runs.flatMap((run) => /applied migration\(s\) ([\d, ]+)/.exec(run.stdout)?.[1]!.split(', ').map(Number) ?? []);
    const known = await knownMigrations();
    assert.deepEqual(applied.sort((a, b) => a - b), known.map((m) => m.version), runs.map((r) => r.stdout).join(''));
    const again = await runCli(args);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`at version ${known.length}: already up to date`));
    const client = await testClient(location);
    try {
      assert.deepEqual((await client.query('SELECT version, name FROM schema_migrations ORDER BY version')).rows, [
        { version: 1, name: 'evidence_log' },
        { version: 2, name: 'api_keys' },
        { version: 3, name: 'snapshots' },
        { version: 4, name: 'console' },
        { version: 5, name: 'watchlists' },
        { version: 6, name: 'corrections' },
        { version: 7, name: 'disputes' },
        { version: 8, name: 'evidence_by_upi_position' },
        { version: 9, name: 'mirror_versions' },
        { version: 10, name: 'served_versions' },
        { version: 11, name: 'report_idempotency_keys' },
        { version: 12, name: 'answer_history' },
        { version: 13, name: 'answer_prunes' },
      ]);
    } finally {
      await client.end();
    }
  });
});

test('every role refuses a schema missing, behind or ahead of its release, with ERR_STORE_SCHEMA', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    const t = await tempDataDir();
    const file = join(t.root, 'e.ndjson');
    await writeFile(file, ndjson([evidence('a@ybl', 'https://a.example')]));
    const store = ['--store', location.url, '--store-schema', location.schema];
    const before = await runCli(['ingest', ...store, file]);
    assert.notEqual(before.code, 0);
    assert.match(before.stderr, /ERR_STORE_SCHEMA/);
    assert.match(before.stderr, /upi-risk migrate/);

    assert.equal((await runCli(['migrate', ...store])).code, 0);
    const client = await testClient(location);
    try {
      await client.query("INSERT INTO schema_migrations (version, name) VALUES (99, 'from_the_future')");
    } finally {
      await client.end();
    }
    for (const args of [['ingest', ...store, file], ['migrate', ...store]]) {
      const refused = await runCli(args);
      assert.notEqual(refused.code, 0, args[0]);
      assert.match(refused.stderr, /ERR_STORE_SCHEMA/, args[0]);
      assert.match(refused.stderr, /newer than this release knows/, args[0]);
    }
    await t.cleanup();
  });
});

test('a store that cannot be reached, or a bad store option, fails clearly', { timeout: 60_000 }, async () => {
  const unreachable = await runCli(['migrate', '--store', 'postgres://postgres@127.0.0.1:1/test']);
  assert.notEqual(unreachable.code, 0);
  assert.match(unreachable.stderr, /ERR_STORE\b/);
  for (const args of [
    ['migrate'],
    ['migrate', '--store', 'mysql://localhost/x'],
    ['migrate', '--store', 'postgres://postgres@127.0.0.1/test', '--store-schema', 'Bad-Name'],
    ['ingest', '--store-schema', 'x', 'file.ndjson'],
  ]) {
    const result = await runCli(args);
    assert.equal(result.code, 2, args.join(' '));
    assert.match(result.stderr, /ERR_CONFIG/, args.join(' '));
  }
});
