import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MirrorSignatureError, UpiRiskClient, UpiRiskMirror, confidenceBand } from '@upi-risk/client';
import { tempDataDir, evidence, ndjson, until } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';

const VPAS = 100_000;

/**
 * The proof at 100k: a mirror synced to a version agrees with the
 * service serving that version for every flagged VPA and a sample of
 * others, and range lookups agree too; then a diff carries new evidence.
 */
test('@upi-risk/client against a server at 100k VPAs: the mirror agrees with the service for every flagged VPA, private lookups too, and a diff brings new evidence', { timeout: 600_000 }, async () => {
  const t = await tempDataDir();
  const demo = join(t.root, 'demo.ndjson');
  assert.equal((await runCli(['demo-data', '--vpas', String(VPAS), '--seed', '7', '--out', demo])).code, 0);
  assert.equal((await runCli(['ingest', '--data-dir', t.dir.root, demo])).code, 0);
  const flagged = [...new Set((await readFile(demo, 'utf8')).split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { upi: string }).upi))];
  const apiKey = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root, '--burst', '10000000', '--sustained', '1000000000', '--window', '60'])).stdout);
  const publicKey = lastLine((await runCli(['mirror-key', 'create', '--data-dir', t.dir.root])).stdout);
  const server = await startServer(t.dir.root, { args: ['--threads', '2', '--mirror-seconds', '1'] });
  const client = new UpiRiskClient({ baseUrl: server.base, apiKey });
  try {
    const mirror = new UpiRiskMirror({ baseUrl: server.base, apiKey, publicKey });
    await until('the first mirror version', 60_000, async () => (await fetch(`${server.base}/v1/mirror/manifest`, { headers: { authorization: `Bearer ${apiKey}` } })).status === 200);
    const first = await mirror.sync();
    assert.equal(first.applied, 'full');
    assert.equal(mirror.version, first.version);

    // Every flagged VPA, and as many never named, against batch answers of the same data version.
    const unflagged = Array.from({ length: 2000 }, (_, i) => `not.flagged.${i}@ybl`);
    const asked = [...flagged, ...unflagged];
    let mismatches = 0;
    for (let i = 0; i < asked.length; i += 100) {
      const batch = await client.verifyBatch(asked.slice(i, i + 100));
      for (const { verdict: item } of batch.results) {
        const found = mirror.check(item.upi);
        const expected = item.status === 'CLEARED' ? { match: false } : { match: true, risk_category: item.risk_category, confidence_band: confidenceBand(item) };
        if (JSON.stringify(found) !== JSON.stringify(expected)) mismatches++;
      }
    }
    assert.equal(mismatches, 0);
    for (const upi of unflagged) assert.equal(mirror.check(upi).match, false);

    // Private range lookups agree with single lookups.
    for (const upi of [...flagged.slice(0, 200), ...unflagged.slice(0, 50)]) {
      const [privately, { verdict: plainly }] = await Promise.all([client.verifyPrivately(upi), client.verify(upi)]);
      assert.deepEqual(
        [privately.status, privately.risk_category, privately.confidence, privately.cluster_id],
        [plainly.status, plainly.risk_category, plainly.confidence, plainly.cluster_id],
        upi,
      );
    }

    // New evidence reaches the mirror through a diff; a miss never leaves the caller, a hit asks the service.
    const path = join(t.root, 'later.ndjson');
    await writeFile(path, ndjson([evidence('brand.new.mule@ybl', 'https://fraud.example/new', { evidence_id: 'new-1' })]));
    assert.equal((await runCli(['ingest', '--data-dir', t.dir.root, path])).code, 0);
    let applied = '';
    await until('a mirror version with the new VPA', 60_000, async () => {
      const result = await mirror.sync();
      if (result.applied !== 'none') applied = result.applied;
      return result.version > first.version && mirror.check('brand.new.mule@ybl').match;
    });
    assert.equal(applied, 'diff', 'reached by a diff, not the full file');
    const hit = await mirror.verify('brand.new.mule@ybl');
    assert.equal(hit.verdict.status, 'FLAGGED');
    assert.equal(hit.answeredBy, 'service');
    const miss = await mirror.verify('someone.honest@ybl');
    assert.equal(miss.verdict.status, 'CLEARED');
    assert.equal(miss.answeredBy, 'mirror');

    // Pinned to another key, the same manifests are refused.
    const other = await runCli(['mirror-key', 'create', '--data-dir', join(t.root, 'elsewhere')]);
    const stranger = new UpiRiskMirror({ baseUrl: server.base, apiKey, publicKey: lastLine(other.stdout) });
    await assert.rejects(stranger.sync(), MirrorSignatureError);
  } finally {
    await server.stop();
    await t.cleanup();
  }
});
