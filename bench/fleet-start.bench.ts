/**
 * The fleet's start at scale, alone: the first three steps of the fleet
 * section (bench/http/fleet.ts) without its serving measurements.
 *
 * 1. Demo evidence of N VPAs (seed 42, as engine-scale's), generated once
 *    into var/bench/fleet-start-N/evidence, ingested with
 *    `upi-risk ingest --store` into a schema of the run's own.
 * 2. A builder, timed from its start to its first publication: the lease,
 *    the first mirror of the log into its directory, the build, the
 *    publication.
 * 3. `--followers` followers (serve --store), one after the other, each
 *    timed from its start until it listens, with the publication's
 *    download (and its SHA-256), its load and the log replay.
 *
 *   node dist/bench/fleet-start.bench.js [--vpas 1000000] [--followers 3] [--store URL] [--json FILE]
 *
 * The schema and the work directory are removed at the end; the evidence
 * file is kept for the next run.
 */
import { randomBytes } from 'node:crypto';
import { access, mkdir, rm } from 'node:fs/promises';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { useServiceAllocatorSettings } from './support/allocator.js';
import { writeDemoData } from '../src/demo/generator.js';
import { runCli, type BuilderProcess, type RunningServer } from '../test/server-process.js';
import { measureBuilders, measureIngest, requireStoreReachable, startFollowers } from './http/fleet.js';
import { wholeNumberOption, writeReport } from './support/report.js';

const { values: args } = parseArgs({
  options: {
    vpas: { type: 'string', default: '1000000' },
    followers: { type: 'string', default: '3' },
    store: { type: 'string', default: process.env.UPI_RISK_STORE ?? 'postgres://postgres@127.0.0.1:5432/test' },
    json: { type: 'string' },
  },
  strict: true,
});
const vpas = wholeNumberOption('vpas', args.vpas);
const followerCount = wholeNumberOption('followers', args.followers);
const log = (line: string) => process.stderr.write(`${line}\n`);

useServiceAllocatorSettings();
await requireStoreReachable(args.store);

const root = join('var', 'bench', `fleet-start-${vpas}`);
const evidenceFile = join(root, 'evidence', 'demo.ndjson');
if (!(await access(evidenceFile).then(() => true, () => false))) {
  log(`fleet-start: generating demo evidence of ${vpas} VPAs into ${evidenceFile}`);
  await writeDemoData({ vpas, seed: 42 }, evidenceFile);
}

const workDir = join(root, 'run');
const schema = `bench_fleet_start_${randomBytes(4).toString('hex')}`;
const store = ['--store', args.store, '--store-schema', schema];
const db = new pg.Client({ connectionString: args.store });
const builders: BuilderProcess[] = [];
const servers: RunningServer[] = [];
await db.connect();
try {
  await rm(workDir, { recursive: true, force: true });
  await mkdir(workDir, { recursive: true });
  const postgres = (await db.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
  const migrated = await runCli(['migrate', ...store]);
  if (migrated.code !== 0) throw new Error(`migrate failed:\n${migrated.stderr}`);
  const o = { log, dataDir: root, workDir, serverThreads: availableParallelism() };
  const ingest = await measureIngest(o, store, db, schema);
  const { builder, snapshotId } = await measureBuilders(o, store, builders);
  const { readyS, startParts } = await startFollowers(o, store, followerCount, snapshotId, servers);
  const report = {
    date: new Date().toISOString(),
    machine: { cores: availableParallelism(), cpu: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
    postgres,
    vpas,
    ingest,
    builder,
    followers: readyS.map((s, i) => ({ readyS: s, ...startParts[i]! })),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (args.json !== undefined) writeReport(args.json, report);
} finally {
  await Promise.allSettled([...servers.map((s) => s.stop()), ...builders.map((b) => b.stop())]);
  await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((error: unknown) => log(`fleet-start: schema ${schema} not dropped: ${String(error)}`));
  await db.end().catch(() => {});
  await rm(workDir, { recursive: true, force: true });
}
