/**
 * A follower's download of a publication (downloadSnapshot) at a given
 * size, on its own: a file of random bytes (the download does not read
 * what a snapshot holds) is published into a schema of the run's own, then
 * downloaded `--runs` times into a fresh directory each, on one pooled
 * connection as a follower downloads, each with its SHA-256 check and its
 * flush to disk. The published rows are read once before the timed runs,
 * so every run reads them from PostgreSQL's memory or the page cache, as
 * a follower does right after a publication.
 *
 *   node dist/bench/snapshot-download.bench.js [--mb 1850] [--runs 3] [--store URL] [--json FILE]
 *
 * 1,850 MB is the size of the 10M-VPA snapshot (bench/MEASUREMENTS.md,
 * "Fleet mode at 10M"), 179 MB the 1M one's.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { dataDir } from '../src/common/data-dir.js';
import { migrate } from '../src/store/migrations.js';
import { connectStore, storePool } from '../src/store/postgres.js';
import { downloadSnapshot, publishSnapshot } from '../src/store/snapshot-publications.js';
import { round1, wholeNumberOption, writeReport } from './support/report.js';

const { values: args } = parseArgs({
  options: {
    mb: { type: 'string', default: '1850' },
    runs: { type: 'string', default: '3' },
    store: { type: 'string', default: process.env.UPI_RISK_STORE ?? 'postgres://postgres@127.0.0.1:5432/test' },
    json: { type: 'string' },
  },
  strict: true,
});
const bytes = wholeNumberOption('mb', args.mb) * 1e6;
const runs = wholeNumberOption('runs', args.runs);
const log = (line: string) => process.stderr.write(`${line}\n`);

const location = { url: args.store, schema: `bench_download_${randomBytes(4).toString('hex')}` };
const scratch = await mkdtemp(join(tmpdir(), 'upi-risk-download-'));
await migrate(location);
const pool = storePool(location, 1);
try {
  const source = join(scratch, 'published.bin');
  const file = await open(source, 'w');
  const piece = randomBytes(8 << 20);
  for (let written = 0; written < bytes; written += piece.length) await file.write(piece, 0, Math.min(piece.length, bytes - written));
  await file.close();
  log(`snapshot-download: publishing ${round1(bytes / 1e6)} MB in schema ${location.schema}`);
  const client = await connectStore(location);
  const publication = await publishSnapshot(client, location, { id: '20260101T000000000Z-000001', position: 0, vpas: 0, path: source, clusterIds: new Uint8Array(4) });
  await client.end();
  await rm(source);
  // Read once, untimed: PostgreSQL's buffers and the page cache as right after a publication.
  await rm(await downloadSnapshot(pool, location, publication, dataDir(join(scratch, 'warm'))));
  const seconds: number[] = [];
  for (let run = 0; run < runs; run++) {
    const dir = dataDir(join(scratch, `run-${run}`));
    const started = performance.now();
    const path = await downloadSnapshot(pool, location, publication, dir);
    seconds.push((performance.now() - started) / 1000);
    if ((await stat(path)).size !== bytes) throw new Error('the download has the wrong size');
    await rm(dir.root, { recursive: true });
    log(`  run ${run + 1}: ${seconds.at(-1)!.toFixed(2)} s, ${round1(bytes / 1e6 / seconds.at(-1)!)} MB/s`);
  }
  const report = { date: new Date().toISOString(), node: process.version, bytes, chunks: publication.chunks, seconds: seconds.map((s) => Math.round(s * 1000) / 1000) };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  if (args.json !== undefined) writeReport(args.json, report);
} finally {
  await pool.end();
  const client = await connectStore(location);
  await client.query(`DROP SCHEMA IF EXISTS "${location.schema}" CASCADE`);
  await client.end();
  await rm(scratch, { recursive: true, force: true });
}
