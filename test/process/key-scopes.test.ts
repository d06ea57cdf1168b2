import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDataDir, ingest, evidence } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';

test('a key is used only within its scopes: another endpoint answers 403 forbidden, charged to its quota', { timeout: 60_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('known@ybl', 'https://a.example')]);
  const create = async (...args: string[]) => {
    const created = await runCli(['keys', 'create', '--data-dir', t.dir.root, ...args]);
    assert.equal(created.code, 0, created.stderr);
    return lastLine(created.stdout);
  };
  const screen = await create();
  const ingestOnly = await create('--scopes', 'ingest');
  const both = await create('--scopes', 'ingest,screen');
  const server = await startServer(t.dir.root);
  try {
    const lookup = (key: string) => fetch(`${server.base}/v1/verify/upi?upi=known@ybl`, { headers: { authorization: `Bearer ${key}` } });
    const send = (key: string) =>
      fetch(`${server.base}/v1/admin/evidence`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
        body: `${JSON.stringify(evidence('sent@ybl', 'https://b.example'))}\n`,
      });
    assert.equal((await lookup(screen)).status, 200);
    assert.equal((await lookup(both)).status, 200);
    const refused = await lookup(ingestOnly);
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as { error: string }).error, 'forbidden');
    assert.ok(refused.headers.get('x-ratelimit-remaining') !== null, 'a refused scope is still charged and reported');
    const batch = await fetch(`${server.base}/v1/verify/upi/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingestOnly}`, 'content-type': 'application/json' },
      body: JSON.stringify({ upis: ['known@ybl'] }),
    });
    assert.equal(batch.status, 403);
    assert.equal((await fetch(`${server.base}/v1/verify/upi/cluster/MC-1`, { headers: { authorization: `Bearer ${ingestOnly}` } })).status, 403);
    const sentByScreen = await send(screen);
    assert.equal(sentByScreen.status, 403);
    assert.equal(((await sentByScreen.json()) as { error: string }).error, 'forbidden');
    assert.equal((await send(ingestOnly)).status, 200);
    assert.equal((await send(both)).status, 200);
  } finally {
    assert.equal(await server.stop(), 0);
  }

  const listed = await runCli(['keys', 'list', '--json', '--data-dir', t.dir.root]);
  assert.equal(listed.code, 0, listed.stderr);
  const scopes = (JSON.parse(listed.stdout) as { scopes: string[] }[]).map((k) => k.scopes.join(','));
  assert.deepEqual(scopes, ['screen', 'ingest', 'screen,ingest']);
  const table = await runCli(['keys', 'list', '--data-dir', t.dir.root]);
  assert.match(table.stdout, /SCOPES/);
  for (const bad of ['', 'screen,delete', 'SCREEN']) {
    const result = await runCli(['keys', 'create', '--data-dir', t.dir.root, '--scopes', bad]);
    assert.equal(result.code, 2, `--scopes ${JSON.stringify(bad)}`);
    assert.match(result.stderr, /ERR_CONFIG/);
  }
  await t.cleanup();
});
