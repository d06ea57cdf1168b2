import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDataDir, ingest, evidence, ndjson, until } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';

const DAY = 86_400_000;

function capturedDaysAgo(days: number): string {
  return new Date(Date.now() - days * DAY).toISOString();
}

async function statusOf(base: string, key: string, upi: string): Promise<{ status: string; evidence_count: number }> {
  const response = await fetch(`${base}/v1/verify/upi?upi=${encodeURIComponent(upi)}`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(response.status, 200);
  return (await response.json()) as { status: string; evidence_count: number };
}

test('serve --evidence-max-age-days leaves out old evidence, live and in builds; serving without it counts it again', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [
      evidence('old@ybl', 'https://old.example', { evidence_id: 'o1', captured_at: capturedDaysAgo(400) }),
      evidence('fresh@ybl', 'https://new.example', { evidence_id: 'f1', captured_at: capturedDaysAgo(1) }),
      evidence('fresh@ybl', 'https://old.example', { evidence_id: 'f2', captured_at: capturedDaysAgo(500) }),
    ]);
    const built = await runCli(['build', '--data-dir', t.dir.root, '--evidence-max-age-days', '365']);
    assert.equal(built.code, 0, built.stderr);
    assert.match(built.stdout, /1 flagged VPAs.* 1 evidence items/);
    const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);

    const expiring = await startServer(t.dir.root, { args: ['--evidence-max-age-days', '365'] });
    try {
      assert.equal((await statusOf(expiring.base, key, 'old@ybl')).status, 'CLEARED');
      assert.deepEqual(await statusOf(expiring.base, key, 'fresh@ybl').then((v) => [v.status, v.evidence_count]), ['FLAGGED', 1]);
      // Evidence that arrives already expired is stored and changes nothing; fresh evidence flags at once.
      const file = join(t.root, 'late.ndjson');
      await writeFile(file, ndjson([
        evidence('late@ybl', 'https://old.example', { evidence_id: 'l1', captured_at: capturedDaysAgo(366) }),
        evidence('new@ybl', 'https://new.example', { evidence_id: 'n1', captured_at: capturedDaysAgo(0) }),
      ]));
      const ingested = await runCli(['ingest', '--data-dir', t.dir.root, file]);
      assert.equal(ingested.code, 0, ingested.stderr);
      await until('the new evidence is served', 10_000, async () => (await statusOf(expiring.base, key, 'new@ybl')).status === 'FLAGGED');
      assert.equal((await statusOf(expiring.base, key, 'late@ybl')).status, 'CLEARED');
    } finally {
      assert.equal(await expiring.stop(), 0);
    }

    // Without the limit the snapshot served counts by another rule: a compaction counts everything again.
    const keeping = await startServer(t.dir.root);
    try {
      await until('the old evidence counts again', 60_000, async () => (await statusOf(keeping.base, key, 'old@ybl')).status === 'FLAGGED');
      assert.equal((await statusOf(keeping.base, key, 'late@ybl')).status, 'FLAGGED');
      assert.equal((await statusOf(keeping.base, key, 'fresh@ybl')).evidence_count, 2);
    } finally {
      assert.equal(await keeping.stop(), 0);
    }
  } finally {
    await t.cleanup();
  }
});

test('--evidence-max-age-days takes 1 to 36500 days, and only where this process builds', async () => {
  for (const value of ['0', '36501', '1.5', 'year']) {
    const result = await runCli(['serve', '--data-dir', '/nonexistent', '--evidence-max-age-days', value]);
    assert.equal(result.code, 2, `${value}: ${result.stderr}`);
    assert.match(result.stderr, /--evidence-max-age-days must be/);
  }
  const follower = await runCli(['serve', '--store', 'postgres://127.0.0.1:1/none', '--evidence-max-age-days', '30']);
  assert.equal(follower.code, 2, follower.stderr);
  assert.match(follower.stderr, /--evidence-max-age-days is for the embedded mode/);
  const build = await runCli(['build', '--data-dir', '/nonexistent', '--evidence-max-age-days', '-3']);
  assert.equal(build.code, 2, build.stderr);
});
