import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { get } from 'node:http';
import { join } from 'node:path';
import { tempDataDir, ingest, evidence } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';

// A replaced snapshot's memory is shared by every thread and felt by no
// collector (collector.ts): an idle server used to keep each one until a
// collection that might never come. Now each serving thread collects at its
// first idle moment and the main thread lets go after them.

test('an idle server gives back a replaced snapshot: the serving threads collect it and the main thread lets go', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('before@ybl', 'https://u.example')]);
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  // Every ingest compacted: the test is about the snapshot a swap replaces.
  const server = await startServer(t.dir.root, { args: ['--threads', '2', '--log-level', 'debug', '--compact-vpas', '0'] });
  try {
    // Requests on connections of their own, which the kernel spreads over both threads: each answers from the first snapshot.
    const headers = { authorization: `Bearer ${key}` };
    for (let i = 0; i < 20; i++) assert.equal(await statusOnNewConnection(`${server.base}/v1/verify/upi?upi=before@ybl`, headers), 200);
    const late = join(t.root, 'late.ndjson');
    await writeFile(late, `${JSON.stringify(evidence('after@ybl', 'https://v.example'))}\n`);
    const ingested = await runCli(['ingest', '--data-dir', t.dir.root, late]);
    assert.equal(ingested.code, 0, ingested.stderr);
    for (let i = 0; ; i++) {
      const answer = (await (await fetch(`${server.base}/v1/verify/upi?upi=after@ybl`, { headers })).json()) as { status: string };
      if (answer.status === 'FLAGGED') break;
      assert.ok(i < 600, 'the new snapshot was not served within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const logged = (message: string) =>
      server
        .stderr()
        .split('\n')
        .filter((line) => line.includes(`"${message}"`))
        .map((line) => JSON.parse(line) as { thread?: number });
    // The new verdict was asked for on one connection, so one thread at most answered from the new
    // snapshot. No more requests: a thread whose last answer came from the old one must let go of it all the same.
    for (let i = 0; i < 300 && logged('collected after letting go of a replaced snapshot').length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(logged('collected after letting go of a replaced snapshot').length, 1, 'the main thread let go of the replaced snapshot');
    // An idle thread runs a full collection; one still answering the polls above starts incremental marking instead.
    const threads = new Set(
      [...logged('collected after a snapshot swap'), ...logged('started incremental marking after a snapshot swap')].map((line) => line.thread),
    );
    assert.deepEqual([...threads].sort(), [0, 1], 'each serving thread collected');
    // Loopback clients read /metrics without a token.
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    assert.match(metrics, /^upi_risk_replaced_snapshots_held 0$/m);
  } finally {
    await server.stop();
    await t.cleanup();
  }
});

/** GET `url` on a connection opened for it alone; the status. */
function statusOnNewConnection(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}
