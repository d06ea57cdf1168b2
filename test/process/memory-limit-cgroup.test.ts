import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { memoryCgroupOf, type MemoryCgroup } from '../../src/common/memory-limit.js';
import { RECOMMENDED_GLIBC_TUNABLES } from '../../src/common/malloc-tuning.js';
import { createKey, request } from '../fixtures/edge-server.js';
import { getText, sample, tempDataDir, until } from '../helpers.js';
import { runCli, startServer } from '../server-process.js';

// A server at 1M VPAs in a control group whose memory limit its usual
// compactions exceed (their peak is about 1,060 MB resident, with the
// carried build state beside the new snapshot; lean ones about 840 MB:
// bench/MEASUREMENTS.md, "Compactions under a memory limit"; both about
// 100 MB more since the history of answers keeps answers whole, 964 MB for
// a lean one). Without --max-memory it takes the group's limit, compacts
// lean, and is not killed. Needs root and a memory controller it may make
// a group under.

const LIMIT = 1000 * 1024 * 1024;
const VPAS = 1_000_000;

/** A memory cgroup of this test's own under this process's, limited to `bytes`; null with the reason when none can be made here. */
async function limitedGroup(bytes: number): Promise<{ readonly folder: string; readonly procs: string; readonly remove: () => Promise<void> } | string> {
  if (process.getuid?.() !== 0) return 'needs root to make a control group';
  const own: MemoryCgroup | null = memoryCgroupOf();
  if (own === null) return 'no memory control group here';
  const folder = join(own.folder, `upi-risk-test-${process.pid}`);
  try {
    await mkdir(folder);
    await writeFile(join(folder, own.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'), String(bytes));
  } catch (error) {
    await rmdir(folder).catch(() => {});
    return `cannot make a limited memory group under ${own.folder}: ${(error as Error).message}`;
  }
  return { folder, procs: join(folder, 'cgroup.procs'), remove: () => rmdir(folder).catch(() => {}) };
}

/** The group's out-of-memory kills so far (v1 memory.oom_control, v2 memory.events); 0 where neither says. */
async function oomKills(folder: string): Promise<number> {
  for (const [file, key] of [
    ['memory.oom_control', 'oom_kill'],
    ['memory.events', 'oom_kill'],
  ] as const) {
    const text = await readFile(join(folder, file), 'utf8').catch(() => null);
    const found = text === null ? undefined : new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1];
    if (found !== undefined) return Number(found);
  }
  return 0;
}

test('a server at 1M under a cgroup limit its usual compactions exceed takes the limit, compacts lean twice and is not killed', { timeout: 900_000 }, async (t) => {
  const group = await limitedGroup(LIMIT);
  if (typeof group === 'string') {
    t.skip(group);
    return;
  }
  const data = await tempDataDir();
  try {
    // The data set, built outside the group.
    const evidence = join(data.root, 'evidence.ndjson');
    assert.equal((await runCli(['demo-data', '--vpas', String(VPAS), '--out', evidence])).code, 0);
    assert.equal((await runCli(['ingest', '--data-dir', data.root, evidence])).code, 0);
    assert.equal((await runCli(['build', '--data-dir', data.root])).code, 0);
    const key = await createKey(data.root);

    const server = await startServer(data.root, {
      env: { GLIBC_TUNABLES: RECOMMENDED_GLIBC_TUNABLES.join(':') },
      // Into the group before it has read anything: the limit is the group's from the start.
      onSpawn: (child) => writeFileSync(group.procs, String(child.pid)),
      listenTimeoutMs: 120_000,
    });
    try {
      const log = () => server.stderr().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
      const started = log().find((entry) => entry.msg === 'compactions plan their memory under a limit');
      assert.deepEqual({ limitBytes: started?.limitBytes, from: started?.from }, { limitBytes: LIMIT, from: 'cgroup' });
      await until('the stored evidence is read ahead', 120_000, () => log().some((entry) => entry.msg === 'stored evidence read ahead of ingests'));

      for (const round of [1, 2]) {
        const file = join(data.root, `new-${round}.ndjson`);
        assert.equal((await runCli(['demo-data', '--vpas', '10000', '--seed', String(100 + round), '--out', file])).code, 0);
        const upi = (JSON.parse((await readFile(file, 'utf8')).slice(0, 2000).split('\n')[0]!) as { upi: string }).upi;
        assert.equal((await runCli(['ingest', '--data-dir', data.root, file])).code, 0);
        await until(`round ${round}: the new evidence is served`, 120_000, async () => (await request(server.base, `/v1/verify/upi?upi=${encodeURIComponent(upi)}`, key)).body.status === 'FLAGGED');
        const builds = log().filter((entry) => entry.msg === 'build finished').length;
        const snapshot = (await request(server.base, '/readyz', null)).body.snapshot;
        server.child.kill('SIGUSR2');
        await until(`round ${round}: the compaction ends`, 300_000, () => server.child.exitCode !== null || log().filter((entry) => entry.msg === 'build finished').length > builds);
        assert.equal(server.child.exitCode, null, `round ${round}: the server runs (killed by ${server.child.signalCode})`);
        const finished = log().filter((entry) => entry.msg === 'build finished').at(-1)!;
        assert.equal(finished.lean, true, `round ${round}: lean`);
        await until(`round ${round}: the new snapshot is served`, 60_000, async () => (await request(server.base, '/readyz', null)).body.snapshot !== snapshot);
        assert.equal((await request(server.base, `/v1/verify/upi?upi=${encodeURIComponent(upi)}`, key)).body.status, 'FLAGGED');
        await until(`round ${round}: the stored evidence is read again`, 120_000, () => log().filter((entry) => entry.msg === 'stored evidence read again after a lean build').length === round);
      }
      const metrics = (await getText(`${server.base}/metrics`)).body;
      assert.equal(sample(metrics, 'upi_risk_memory_limit_bytes'), LIMIT);
      assert.equal(sample(metrics, 'upi_risk_lean_compactions'), 2);
      assert.equal(await oomKills(group.folder), 0, 'nothing in the group was killed for memory');
      assert.equal(await server.stop(), 0);
    } finally {
      await server.stop();
    }
  } finally {
    await group.remove();
    await data.cleanup();
  }
});
