import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stat, readFile } from 'node:fs/promises';
import { tempDataDir, until } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';
import { isApiKeyShape } from '../../src/access/api-key.js';
import { keyFilePath } from '../../src/access/key-file.js';

async function statusWith(base: string, key: string): Promise<number> {
  const r = await fetch(`${base}/v1/verify/upi?upi=a@ybl`, { headers: { authorization: `Bearer ${key}` } });
  await r.arrayBuffer();
  return r.status;
}

test('keys created, rotated and revoked through the CLI take effect on a running server without restart', async () => {
  const t = await tempDataDir();
  const server = await startServer(t.dir.root);
  try {
    const created = await runCli(['keys', 'create', '--data-dir', t.dir.root, '--name', 'payments team', '--plan', 'gold']);
    assert.equal(created.code, 0, created.stderr);
    const key = lastLine(created.stdout);
    assert.ok(isApiKeyShape(key), key);
    // Keys take effect without a restart.
    await until('the new key accepted', 5_000, async () => (await statusWith(server.base, key)) === 200);
    assert.match(server.output(), /"msg":"API keys reloaded"/, 'key changes are logged');

    const listed = await runCli(['keys', 'list', '--data-dir', t.dir.root, '--json']);
    const rows = JSON.parse(listed.stdout) as { id: string; name: string; plan: string; scopes: string[]; created_at: string; revoked_at: null }[];
    assert.equal(rows.length, 1);
    assert.deepEqual(Object.keys(rows[0]!).sort(), ['created_at', 'id', 'name', 'plan', 'revoked_at', 'scopes']);
    assert.deepEqual(rows[0]!.scopes, ['screen']);
    assert.equal(rows[0]!.name, 'payments team');
    assert.equal(rows[0]!.plan, 'gold');
    const id = rows[0]!.id;

    const rotated = await runCli(['keys', 'rotate', id, '--data-dir', t.dir.root]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const newKey = lastLine(rotated.stdout);
    assert.notEqual(newKey, key);
    await until('the rotated key in force', 2000, async () => (await statusWith(server.base, key)) === 401 && (await statusWith(server.base, newKey)) === 200);

    const revoked = await runCli(['keys', 'revoke', id, '--data-dir', t.dir.root]);
    assert.equal(revoked.code, 0, revoked.stderr);
    await until('the revoked key refused', 2000, async () => (await statusWith(server.base, newKey)) === 401);

    const table = await runCli(['keys', 'list', '--data-dir', t.dir.root]);
    assert.match(table.stdout, /revoked/);
  } finally {
    await server.stop();
    await t.cleanup();
  }
});

test('the key file holds hashes only, with mode 0600', async () => {
  const t = await tempDataDir();
  try {
    const created = await runCli(['keys', 'create', '--data-dir', t.dir.root]);
    const key = lastLine(created.stdout);
    const path = keyFilePath(t.dir);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    const text = await readFile(path, 'utf8');
    assert.equal(text.includes(key), false);
    assert.equal(text.includes(key.slice('upirisk_'.length, 20)), false);
  } finally {
    await t.cleanup();
  }
});

test('keys command errors are usage errors', async () => {
  const t = await tempDataDir();
  try {
    assert.equal((await runCli(['keys'])).code, 2);
    assert.equal((await runCli(['keys', 'rotate', '--data-dir', t.dir.root])).code, 2);
    assert.equal((await runCli(['keys', 'revoke', 'key_000000000000', '--data-dir', t.dir.root])).code, 2);
    assert.equal((await runCli(['keys', 'create', '--burst', '5', '--data-dir', t.dir.root])).code, 2);
    assert.equal((await runCli(['keys', 'create', '--plan', 'no spaces', '--data-dir', t.dir.root])).code, 2);
  } finally {
    await t.cleanup();
  }
});
