import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDataDir, ingest, evidence } from './helpers.js';
import { startServer, runCli, lastLine } from './server-process.js';

test('evidence ingested while the server runs is served within seconds, with no failed request during the swap', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('before@ybl', 'https://u.example')]);
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  const server = await startServer(t.dir.root);
  try {
    const headers = { authorization: `Bearer ${key}` };
    const versions = new Set<string>();
    let failures = 0;
    let requests = 0;
    let seen = false;
    // Keep requests flowing across the swap; every one must succeed.
    const load = (async () => {
      while (!seen) {
        const r = await fetch(`${server.base}/v1/verify/upi?upi=after@ybl`, { headers });
        const body = (await r.json()) as { status: string };
        requests++;
        if (r.status !== 200) failures++;
        versions.add(r.headers.get('x-data-version')!);
        if (body.status === 'FLAGGED') seen = true;
      }
    })();
    const started = Date.now();
    const ingested = await runCli(['ingest', '--data-dir', t.dir.root, await writeEvidence(t.root)]);
    assert.equal(ingested.code, 0, ingested.stderr);
    await Promise.race([load, new Promise((_, reject) => setTimeout(() => reject(new Error('not served within 30 s')), 30_000))]);
    const elapsed = Date.now() - started;
    assert.equal(failures, 0, `${failures} of ${requests} requests failed`);
    assert.ok(versions.size >= 2, 'the snapshot version changed');
    assert.ok(elapsed < 30_000);
  } finally {
    await server.stop();
    await t.cleanup();
  }
});

async function writeEvidence(root: string): Promise<string> {
  const { writeFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const path = join(root, 'late.ndjson');
  await writeFile(path, `${JSON.stringify(evidence('after@ybl', 'https://v.example'))}\n`);
  return path;
}
