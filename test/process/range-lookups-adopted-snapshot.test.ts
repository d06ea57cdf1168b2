import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDataDir, ingest, evidence, ndjson, until } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';

const sha = (upi: string) => createHash('sha256').update(upi.toLowerCase()).digest('hex');

test('a snapshot another process built is hashed before it is served: range lookups answer throughout its swap', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, Array.from({ length: 2_000 }, (_, i) => evidence(`payee.${i}@ybl`, `https://fraud.example/${i % 50}`, { evidence_id: `e${i}` })));
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  const server = await startServer(t.dir.root, { args: ['--threads', '2'] });
  const headers = { authorization: `Bearer ${key}` };
  const snapshotServed = async () => ((await (await fetch(`${server.base}/readyz`)).json()) as { snapshot: string }).snapshot;
  try {
    await until('the first snapshot hashed', 30_000, async () => (await fetch(`${server.base}/v1/verify/upi/range/00000`, { headers })).status === 200);
    const before = await snapshotServed();
    const fresh = 'built.elsewhere@ybl';
    const path = join(t.root, 'fresh.ndjson');
    await writeFile(path, ndjson([evidence(fresh, 'https://fraud.example/new', { evidence_id: 'fresh-1' })]));
    assert.equal((await runCli(['ingest', '--data-dir', t.dir.root, path])).code, 0);

    // Range lookups from before the build until the new snapshot has served a while.
    const statuses = new Map<number, number>();
    let swappedAt: number | null = null;
    const probing = (async () => {
      while (swappedAt === null || Date.now() - swappedAt < 1_000) {
        const prefix = Math.floor(Math.random() * 2 ** 20)
          .toString(16)
          .padStart(5, '0');
        const response = await fetch(`${server.base}/v1/verify/upi/range/${prefix}`, { headers });
        await response.arrayBuffer();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      }
    })();
    const built = await runCli(['build', '--data-dir', t.dir.root]);
    assert.equal(built.code, 0, built.stderr);
    await until('the snapshot built elsewhere is served', 60_000, async () => (await snapshotServed()) !== before);
    swappedAt = Date.now();
    await probing;
    assert.deepEqual([...statuses.keys()], [200], `answers by status: ${JSON.stringify([...statuses])}`);
    // Hashed, then served: in that order in the log, however short the hashing.
    const after = await snapshotServed();
    const lines = server
      .stderr()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; snapshot?: string });
    const hashed = lines.findIndex((l) => l.msg === 'VPA hash ranges made before the snapshot is served' && l.snapshot === after);
    const swapped = lines.findIndex((l) => l.msg === 'snapshot swapped' && l.snapshot === after);
    assert.ok(hashed >= 0 && swapped > hashed, `hashed at line ${hashed}, swapped at line ${swapped}`);
    const found = await fetch(`${server.base}/v1/verify/upi/range/${sha(fresh).slice(0, 5)}`, { headers });
    const body = (await found.json()) as { data_version: string; entries: { suffix: string }[] };
    assert.ok(!body.data_version.startsWith(before), 'from the new snapshot');
    assert.ok(body.entries.some((e) => e.suffix === sha(fresh).slice(5)));
  } finally {
    await server.stop();
    await t.cleanup();
  }
});
