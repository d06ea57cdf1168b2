import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDataDir, ingest, evidence } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';

/**
 * Ingest while the server answers, until the new verdict is served; the
 * server's build log (waited for when `build` says one comes) and its
 * carried-bytes gauge after.
 */
async function ingestUnderRequests(
  serverArgs: readonly string[],
  build: boolean,
): Promise<{ builds: Record<string, unknown>[]; merges: number; carriedBytes: number }> {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('before@ybl', 'https://u.example')]);
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  const server = await startServer(t.dir.root, { args: serverArgs });
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
    assert.ok(versions.size >= 2, 'the data version changed');
    assert.ok(elapsed < 30_000);

    // The file is written after the snapshot is served; the build is logged then.
    const logged = (message: string) =>
      server
        .stderr()
        .split('\n')
        .filter((line) => line.includes(`"${message}"`))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    let builds = logged('build finished');
    for (let wait = 0; build && builds.length === 0 && wait < 300; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      builds = logged('build finished');
    }
    const merges = logged('evidence merged into the delta').length;
    // Loopback clients read /metrics without a token.
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    const carried = /^upi_risk_build_carried_bytes (\d+)$/m.exec(metrics);
    assert.ok(carried !== null, 'upi_risk_build_carried_bytes is reported');
    return { builds, merges, carriedBytes: Number(carried[1]) };
  } finally {
    await server.stop();
    await t.cleanup();
  }
}

test('evidence ingested while the server runs is served from the live delta, without a build or a failed request', { timeout: 120_000 }, async () => {
  const { builds, merges, carriedBytes } = await ingestUnderRequests([], false);
  assert.equal(builds.length, 0);
  assert.equal(merges, 1);
  // The evidence ids are kept, so the next ingest reads only its own file.
  assert.ok(carriedBytes > 0);
});

test('serve --full-rebuilds reads every file on every rebuild and keeps nothing between them', { timeout: 120_000 }, async () => {
  const { builds, merges, carriedBytes } = await ingestUnderRequests(['--full-rebuilds'], true);
  assert.equal(merges, 0, 'no live delta without the evidence kept');
  assert.equal(builds.length, 1);
  assert.equal(builds[0]!.reusedChunks, 0);
  assert.equal(builds[0]!.chunks, 2);
  assert.equal(carriedBytes, 0);
});

async function writeEvidence(root: string): Promise<string> {
  const { writeFile } = await import('node:fs/promises');
  // eslint-disable-next-line @typescript-eslint/unbound-method -- path.join does not use `this`
  const { join } = await import('node:path');
  const path = join(root, 'late.ndjson');
  await writeFile(path, `${JSON.stringify(evidence('after@ybl', 'https://v.example'))}\n`);
  return path;
}
