import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDataDir, ingest, evidence, ndjson, versionsByThread, until } from '../helpers.js';
import { startServer, runCli, lastLine, type RunningServer } from '../server-process.js';

async function versionOf(server: RunningServer): Promise<string> {
  const [version] = [...(await versionsByThread(server.base, 1)).values()];
  assert.ok(version !== undefined);
  return version;
}

async function ingestWithCli(root: string, dataDir: string, name: string, upi: string): Promise<void> {
  const path = join(root, name);
  await writeFile(path, ndjson([evidence(upi, `https://${name}.example`, { evidence_id: name })]));
  const result = await runCli(['ingest', '--data-dir', dataDir, path]);
  assert.equal(result.code, 0, result.stderr);
}

async function kill(server: RunningServer): Promise<void> {
  server.child.kill('SIGKILL');
  if (server.child.exitCode === null && server.child.signalCode === null) await once(server.child, 'exit');
}

test('a data version is never served again for another state: a server killed between ingests continues past its positions', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [evidence('base@ybl', 'https://base.example', { evidence_id: 'b1' })]);
    const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
    const seen = new Map<string, string>();
    /** The answer for every VPA so far under the version that served it: one version, one answer. */
    const record = async (server: RunningServer, upis: readonly string[]) => {
      const response = await fetch(`${server.base}/v1/verify/upi/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ upis }),
      });
      assert.equal(response.status, 200);
      const version = response.headers.get('x-data-version')!;
      const body = await response.text();
      const before = seen.get(version);
      if (before !== undefined) assert.equal(body, before, `${version} named two states`);
      seen.set(version, body);
      return version;
    };
    const upis = ['base@ybl', 'one@ybl', 'two@ybl', 'three@ybl'];

    let server = await startServer(t.dir.root);
    const snapshot = await versionOf(server);
    await ingestWithCli(t.root, t.dir.root, 'one', 'one@ybl');
    await until('one@ybl is served', 10_000, async () => (await versionOf(server)) !== snapshot);
    const first = await record(server, upis);
    assert.match(first, /\+1$/);
    await kill(server);

    // While it is down, more evidence; the restarted server serves the same snapshot and a delta of both files.
    await ingestWithCli(t.root, t.dir.root, 'two', 'two@ybl');
    server = await startServer(t.dir.root);
    const restarted = await record(server, upis);
    assert.ok(restarted.startsWith(`${snapshot}+`), restarted);
    assert.notEqual(restarted, first);
    const position = (version: string) => Number(version.slice(version.indexOf('+') + 1));
    assert.ok(position(restarted) > position(first));

    await ingestWithCli(t.root, t.dir.root, 'three', 'three@ybl');
    await until('three@ybl is served', 10_000, async () => (await versionOf(server)) !== restarted);
    const after = await record(server, upis);
    assert.ok(position(after) > position(restarted));
    await kill(server);

    // A start with nothing new serves the same state under a new name, never an old name for another state.
    server = await startServer(t.dir.root);
    const again = await record(server, upis);
    assert.ok(position(again) > position(after));
    assert.equal(await server.stop(), 0);
    assert.equal(seen.size, 4);
  } finally {
    await t.cleanup();
  }
});
