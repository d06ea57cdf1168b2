import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDataDir, ingest, evidence, versionsByThread, sample, ndjson, type EvidenceInput } from '../helpers.js';
import { startServer, runCli, lastLine, type RunningServer } from '../server-process.js';

interface Verdict {
  status: string;
  evidence_count: number;
  first_seen: string | null;
  last_seen: string | null;
  sources: { url: string; captured_at: string }[];
}

/** Ingest `items` with the CLI, as an intelligence team would. */
async function ingestWithCli(root: string, dataDir: string, name: string, items: readonly EvidenceInput[]): Promise<void> {
  const path = join(root, name);
  await writeFile(path, ndjson(items));
  const result = await runCli(['ingest', '--data-dir', dataDir, path]);
  assert.equal(result.code, 0, result.stderr);
}

/** Poll until every serving thread serves a data version `accept` takes; the versions. */
async function waitForVersions(server: RunningServer, threads: number, accept: (version: string) => boolean, what: string): Promise<Map<number, string>> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const versions = await versionsByThread(server.base, threads);
    if ([...versions.values()].every(accept)) return versions;
    if (Date.now() > deadline) throw new Error(`${what}: threads serve ${JSON.stringify([...versions])}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const threads of [1, 2]) {
  test(`with ${threads} serving thread(s), an ingest is served by every one from the delta, and a compaction on SIGUSR2 folds it in without a failed or backward answer`, { timeout: 180_000 }, () =>
    deltaAndCompaction(threads),
  );
}

async function deltaAndCompaction(threads: number): Promise<void> {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('known@ybl', 'https://a.example', { evidence_id: 'k1' })]);
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  const server = await startServer(t.dir.root, { args: ['--threads', String(threads)] });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  try {
    const [first] = [...(await versionsByThread(server.base, threads)).values()];
    assert.ok(first !== undefined && !first.includes('+'), 'an empty delta names the snapshot alone');

    await ingestWithCli(t.root, t.dir.root, 'one.ndjson', [
      evidence('mule@ybl', 'https://b.example', { evidence_id: 'm1' }),
      evidence('known@ybl', 'https://c.example', { evidence_id: 'k2' }),
    ]);
    await waitForVersions(server, threads, (v) => v === `${first}+1`, 'the delta reaches every thread');

    // A batch is answered from one view, which its headers name.
    const batch = await fetch(`${server.base}/v1/verify/upi/batch`, { method: 'POST', headers, body: JSON.stringify({ upis: ['mule@ybl', 'known@ybl', 'nobody@ybl'] }) });
    assert.equal(batch.status, 200);
    assert.equal(batch.headers.get('x-data-version'), `${first}+1`);
    const items = ((await batch.json()) as { results: { status: string; evidence_count: number }[] }).results;
    assert.deepEqual(items.map((i) => [i.status, i.evidence_count]), [['FLAGGED', 1], ['FLAGGED', 2], ['CLEARED', 0]]);

    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    assert.equal(sample(metrics, 'upi_risk_delta_vpas'), 2);
    assert.equal(sample(metrics, 'upi_risk_delta_evidence_items'), 2);
    assert.ok(sample(metrics, 'upi_risk_delta_bytes')! > 0);
    assert.ok(sample(metrics, 'upi_risk_delta_age_seconds')! >= 0);
    assert.ok(sample(metrics, 'upi_risk_seconds_since_compaction')! >= 0);

    // Requests keep flowing across the compaction; each answer must keep what the one before said.
    let stop = false;
    let failures = 0;
    let requests = 0;
    const backwards: string[] = [];
    const load = (async () => {
      const last = new Map<string, Verdict>();
      while (!stop) {
        for (const upi of ['mule@ybl', 'known@ybl']) {
          const r = await fetch(`${server.base}/v1/verify/upi?upi=${upi}`, { headers });
          requests++;
          if (r.status !== 200) {
            failures++;
            continue;
          }
          const v = (await r.json()) as Verdict;
          const before = last.get(upi);
          if (before !== undefined && goesBackwards(before, v)) backwards.push(`${upi}: ${JSON.stringify(before)} then ${JSON.stringify(v)}`);
          last.set(upi, v);
        }
      }
    })();
    server.child.kill('SIGUSR2');
    const compacted = await waitForVersions(server, threads, (v) => v !== first && !v.includes('+'), 'the compacted snapshot reaches every thread');
    // New evidence after the compaction goes to the new snapshot's delta.
    await ingestWithCli(t.root, t.dir.root, 'two.ndjson', [evidence('late@ybl', 'https://d.example', { evidence_id: 'l1' })]);
    const [next] = [...compacted.values()];
    // Positions continue across the compaction: no version names two states (position-reserve.ts).
    const nextDelta = await waitForVersions(server, threads, (v) => v.startsWith(`${next}+`), 'the next delta reaches every thread');
    assert.ok([...nextDelta.values()].every((v) => Number(v.slice(v.indexOf('+') + 1)) > 1), JSON.stringify([...nextDelta]));
    stop = true;
    await load;
    assert.equal(failures, 0, `${failures} of ${requests} requests failed`);
    assert.deepEqual(backwards, []);
    const after = await (await fetch(`${server.base}/metrics`)).text();
    assert.equal(sample(after, 'upi_risk_delta_vpas'), 1);
    const known = (await (await fetch(`${server.base}/v1/verify/upi?upi=known@ybl`, { headers })).json()) as Verdict;
    assert.equal(known.evidence_count, 2);
  } finally {
    assert.equal(await server.stop(), 0);
    await t.cleanup();
  }
}

test('serve refuses a compaction policy out of range', async () => {
  const t = await tempDataDir();
  try {
    for (const args of [['--compact-vpas', '-1'], ['--compact-vpas', '100000001'], ['--compact-minutes', '0'], ['--compact-minutes', 'soon']]) {
      const result = await runCli(['serve', '--data-dir', t.dir.root, '--plain-http', '--port', '0', ...args]);
      assert.notEqual(result.code, 0, args.join(' '));
      assert.match(result.stderr, /--compact-/);
    }
  } finally {
    await t.cleanup();
  }
});

function goesBackwards(before: Verdict, after: Verdict): boolean {
  if (before.status === 'FLAGGED' && after.status !== 'FLAGGED') return true;
  if (after.evidence_count < before.evidence_count) return true;
  if (before.first_seen !== null && after.first_seen! > before.first_seen) return true;
  if (before.last_seen !== null && after.last_seen! < before.last_seen) return true;
  return before.sources.some((s) => !after.sources.some((a) => a.url === s.url && a.captured_at >= s.captured_at));
}
