/**
 * The fleet section of `npm run bench`: the fleet mode (docs/deployment.md)
 * as processes around one PostgreSQL database, in a schema of the run's own
 * that is dropped at the end, plain HTTP.
 *
 * 1. Ingest: `upi-risk ingest --store` of the data set's evidence files,
 *    timed as a process: evidence lines a second into the log.
 * 2. Builders: one `upi-risk builder`, timed from its start until its first
 *    publication (lease, mirror of the log, build, publish), then a second
 *    one, which stands by.
 * 3. Followers: two `serve --store`, one after the other, each timed from
 *    its start until it listens (it listens once it serves the newest
 *    publication and the log after it), and their resident memory once
 *    ready and idle, against 1.3 × the snapshot's size plus 300 MB.
 * 4. Throughput: wrk peaks of single lookups of the first follower and of
 *    an embedded server (`serve --data-dir`) on a copy of the data set, in
 *    rounds that alternate which goes first, each round ending with the
 *    bare ceiling.
 * 5. Freshness of small ingests (`upi-risk ingest --store` as a process,
 *    the next once the last is served): from the CLI exiting until every
 *    serving thread of both followers answers FLAGGED, idle, then with the
 *    first follower under open-loop single lookups at half its peak from 4.
 *
 * Followers count quotas locally (no --redis), as the embedded server does,
 * so the two answer a lookup with the same work around it. Builders publish
 * only when first active (--publish-minutes at its highest; the small
 * ingests stay far below --publish-items), so no publication falls inside
 * a measurement. The data set is only read; the copy and the builders' and
 * followers' directories are removed at the end.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import { redactStoreUrl } from '../../src/store/postgres.js';
import { runCli, startBuilder, type BuilderProcess, type RunningServer } from '../../test/server-process.js';
import { round1, round3 } from '../support/report.js';
import { DeltaEvidence, SMALL_FILE } from './delta-evidence.js';
import { flaggedByEveryThread, freshnessOf, ingestCli, logEntries, loggedMs, type Freshness } from './freshness.js';
import { startOpenLoop, type OpenLoopResult, type RunningOpenLoop } from './load-tools.js';
import {
  cloneDataDir,
  createBenchKey,
  metricsOf,
  pollUntil,
  portOf,
  readyOf,
  residentBytes,
  residentMiB,
  rotatedPeakRounds,
  roundMedians,
  sleep,
  startBare,
  startService,
  targetFor,
  waitForGauge,
  type BareServer,
  type LoadOptions,
  type RotatedRound,
} from './scenarios.js';
import { ThreadConnections } from './thread-connections.js';
import { writeWorkload, type Workload } from './workload.js';

export interface FleetOptions extends LoadOptions {
  /** The bench data set's data directory (var/bench/vpas-N/data): read, and copied for the embedded server, never changed. */
  readonly dataDir: string;
  /** Where the builders', followers' and embedded server's directories and the files go (removed afterwards). */
  readonly workDir: string;
  /** The snapshot of the data set, for the small files and the request lists. */
  readonly view: SnapshotView;
  /** The PostgreSQL database; the section makes a schema of its own there and drops it at the end. */
  readonly storeUrl: string;
  readonly hitRatio: number;
  /** Small ingests in each freshness series. */
  readonly ingests: number;
  /** Single lookups a second during the series under load (--swap-rate); by default half the follower's peak. */
  readonly rate?: number;
}

export interface FleetIngest {
  readonly files: number;
  readonly lines: number;
  readonly bytes: number;
  /** From spawning `upi-risk ingest --store` until it exited, s. */
  readonly seconds: number;
  readonly linesPerSecond: number;
  /** Items the log took (its head afterwards) and lines skipped as evidence ids it held already. */
  readonly added: number;
  readonly duplicates: number;
  /** The evidence table with its indexes and TOAST afterwards (pg_total_relation_size), bytes, and per item taken. */
  readonly logBytes: number;
  readonly logBytesPerItem: number;
}

export interface FleetBuilder {
  /** Build threads (`builder --threads`): its default, every core. */
  readonly threads: number;
  /** From spawning the first builder until its log said the publication had committed, s. */
  readonly firstPublicationS: number;
  /** From spawning it until it held the lease, s (its log's clock against this process's). */
  readonly leaseS: number;
  /** The build and the publication's write, from its log, ms. */
  readonly buildMs: number;
  readonly publishMs: number;
  /** The rest of the pass between the lease and the publication: reading the log into its directory, mostly, s. */
  readonly mirrorS: number;
  readonly snapshotBytes: number;
  readonly vpas: number;
  /** The log position the publication covers. */
  readonly position: number;
  /** The active builder's resident memory a few seconds after it published, MiB. */
  readonly rssMiB: number;
  /** Whether, with the second builder running for a few of its polls, the first alone held the lease. */
  readonly oneActive: boolean;
}

/** Where a follower's start went, from its log: the publication's download (with its checksum), its load, the log after it. */
export interface FollowerStart {
  readonly downloadMs: number;
  readonly loadMs: number;
  readonly replayMs: number;
}

export interface FleetFollower extends FollowerStart {
  /** From spawning `serve --store` until it printed where it listens (ready), s. */
  readonly readyS: number;
  /** Resident memory once ready and idle (both followers up, a few seconds after), bytes. */
  readonly rssBytes: number;
  /** Resident memory at the end, after the throughput rounds and the freshness series, bytes. */
  readonly rssEndBytes: number;
}

export interface FleetThroughput {
  readonly bodyBytes: number;
  readonly rounds: readonly RotatedRound[];
  /** Medians over the rounds of each one's peak / the ceiling's in the same round, and of follower / embedded. */
  readonly followerToCeiling: number;
  readonly embeddedToCeiling: number;
  readonly followerToEmbedded: number;
  /** The lowest and highest round's follower / embedded. */
  readonly followerToEmbeddedRange: readonly [number, number];
  /** Median peaks over the rounds, req/s. */
  readonly followerPeak: number;
  readonly embeddedPeak: number;
  readonly ceilingPeak: number;
  /** Median server CPU per request, µs (null where /proc could not tell). */
  readonly cpuUs: { readonly follower: number | null; readonly embedded: number | null; readonly ceiling: number | null };
  /** The embedded server once it had read its stored evidence, idle, build threads gone, MiB. */
  readonly embeddedRssMiB: number;
}

export interface FleetResult {
  readonly serverThreads: number;
  /** The schema the run used (dropped at the end). */
  readonly schema: string;
  readonly postgres: string;
  readonly ingest: FleetIngest;
  readonly builder: FleetBuilder;
  readonly followers: readonly FleetFollower[];
  /** 1.3 × the snapshot's size + 300 MB, bytes: the most a follower's resident memory should be. */
  readonly rssTargetBytes: number;
  readonly throughput: FleetThroughput;
  readonly smallFile: typeof SMALL_FILE;
  readonly idle: Freshness;
  /** Single lookups a second on the first follower during the series under load, and where that figure came from. */
  readonly rate: number;
  readonly rateFrom: string;
  readonly underLoad: Freshness;
  readonly underLoadLoad: OpenLoopResult;
  /** Freshness polls answered other than 200, over both series. */
  readonly pollFailures: number;
}

/** `builder --publish-minutes` at its highest: the first publication is the only one. */
const PUBLISH_MINUTES = String(7 * 24 * 60);
const METRICS_TOKEN = 'bench-metrics';
/** How long a role may take to publish or to listen at the sizes the suite runs, ms. */
const START_LIMIT_MS = 3_600_000;

export async function runFleet(o: FleetOptions): Promise<FleetResult> {
  const { log } = o;
  const schema = `bench_fleet_${randomBytes(4).toString('hex')}`;
  const store = ['--store', o.storeUrl, '--store-schema', schema];
  const db = new pg.Client({ connectionString: o.storeUrl });
  const builders: BuilderProcess[] = [];
  const servers: RunningServer[] = [];
  await db.connect();
  try {
    await rm(o.workDir, { recursive: true, force: true });
    await mkdir(o.workDir, { recursive: true });
    const postgres = (await db.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    await cli(['migrate', ...store], 'migrate');
    const token = await createBenchKey(store, ['--scopes', 'screen,ingest']);
    log(`fleet: schema ${schema} in PostgreSQL ${postgres}`);

    const ingest = await measureIngest(o, store, db, schema);
    const { builder, snapshotId } = await measureBuilders(o, store, builders);

    const { followers, readyS, startParts } = await startFollowers(o, store, 2, snapshotId, servers);
    // Idle: a merge thread would go 5 s after its last task.
    await sleep(6000);
    const rssBytes = await Promise.all(followers.map((f) => residentBytes(f.child.pid!)));
    const rssTargetBytes = Math.round(1.3 * builder.snapshotBytes + 300e6);
    log(`  resident ${rssBytes.map((b) => `${round1(b / 1e6)} MB`).join(' and ')}; target at most ${round1(rssTargetBytes / 1e6)} MB`);

    const workloadDir = join(o.workDir, 'workload');
    await mkdir(workloadDir, { recursive: true });
    const workload = await writeWorkload(o.view, workloadDir, { hitRatio: o.hitRatio });
    const throughput = await measureThroughput(o, followers[0]!, token, workload);

    const evidence = new DeltaEvidence(o.view, Date.now().toString(36));
    const connections = await Promise.all(followers.map((f) => ThreadConnections.open(portOf(f), o.serverThreads)));
    let pollFailures = 0;
    let files = 0;
    let load: RunningOpenLoop | null = null;
    try {
      const alive = (follower: RunningServer) => () => {
        if (follower.child.exitCode !== null || follower.child.signalCode !== null) {
          throw new Error(`a follower exited; the end of its log:\n${follower.output().split('\n').slice(-80).join('\n')}`);
        }
      };
      const series = async (label: string): Promise<Freshness> => {
        const from = followers.map((f) => f.stderr().length);
        const samples: number[] = [];
        for (let i = 0; i < o.ingests; i++) {
          const file = await evidence.writeSmall(join(o.workDir, `small-${files++}.ndjson`));
          const exitedAt = await ingestCli(store, file.path);
          const perFollower = await Promise.all(
            connections.map((c, f) => flaggedByEveryThread(c, token, file.newVpa, exitedAt, { alive: alive(followers[f]!), failed: () => pollFailures++ })),
          );
          samples.push(Math.max(...perFollower));
          await rm(file.path, { force: true });
        }
        const merges = followers.flatMap((f, i) => loggedMs(f, from[i]!, 'evidence merged into the delta'));
        const result = freshnessOf(samples, merges);
        log(`  ${label}: freshness p50 ${result.p50} ms, p99 ${result.p99} ms, max ${result.max} ms (merges p50 ${result.mergeP50} ms, max ${result.mergeMax} ms)`);
        return result;
      };

      log(`fleet: ${o.ingests} small ingests, idle, until both followers serve each`);
      const idle = await series('idle');

      const rate = o.rate ?? Math.round(throughput.followerPeak / 2);
      const rateFrom = o.rate === undefined ? 'half its peak' : '--swap-rate';
      log(`fleet: ${o.ingests} small ingests under ${rate} single lookups a second on the first follower`);
      const running = startOpenLoop(targetFor('single', workload, portOf(followers[0]!), false, token), {
        rate,
        seconds: 3600,
        warmupSeconds: 1,
        connections: o.connections,
      });
      load = running;
      await sleep(2000);
      const underLoad = await series('under load');
      running.stop();
      const underLoadLoad = await running.result;
      log(`  load: ${underLoadLoad.sent} sent, ${underLoadLoad.errors} errors, ${underLoadLoad.non2xx} non-2xx, p99 ${underLoadLoad.p99} ms`);

      const rssEndBytes = await Promise.all(followers.map((f) => residentBytes(f.child.pid!)));
      return {
        serverThreads: o.serverThreads,
        schema,
        postgres,
        ingest,
        builder,
        followers: followers.map((_, i) => ({ readyS: readyS[i]!, ...startParts[i]!, rssBytes: rssBytes[i]!, rssEndBytes: rssEndBytes[i]! })),
        rssTargetBytes,
        throughput,
        smallFile: SMALL_FILE,
        idle,
        rate,
        rateFrom,
        underLoad,
        underLoadLoad,
        pollFailures,
      };
    } finally {
      load?.stop();
      await load?.result.catch(() => {});
      for (const c of connections) c.close();
    }
  } finally {
    await Promise.allSettled([...servers.map((s) => s.stop()), ...builders.map((b) => b.stop())]);
    await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((error: unknown) => log(`fleet: schema ${schema} not dropped: ${String(error)}`));
    await db.end().catch(() => {});
    await rm(o.workDir, { recursive: true, force: true });
  }
}

/** Fail at once, saying what to do, when the database `section` needs cannot be reached: before hours of other sections. */
export async function requireStoreReachable(storeUrl: string, section = 'the fleet section'): Promise<void> {
  const db = new pg.Client({ connectionString: storeUrl, connectionTimeoutMillis: 5_000 });
  try {
    await db.connect();
    await db.query('SELECT 1');
  } catch (error) {
    throw new Error(`${section} needs PostgreSQL, and ${redactStoreUrl(storeUrl)} answered: ${(error as Error).message}; give --store URL, or leave the section out (--only)`);
  } finally {
    await db.end().catch(() => {});
  }
}

/** Follower `n` (`serve --store`), in a directory of its own under the work directory, once it listens. */
export function startFollower(o: Pick<FleetOptions, 'workDir' | 'serverThreads'>, store: readonly string[], n: number): Promise<RunningServer> {
  return startService(
    join(o.workDir, `follower-${n}`),
    false,
    o.serverThreads,
    // At info, a follower logs each merge into its delta with its duration; the poll behind LISTEN/NOTIFY at its default.
    [...store, '--poll-ms', '1000', '--log-level', 'info'],
    START_LIMIT_MS,
  );
}

/**
 * `count` followers (serve --store) started one after the other, each
 * timed from its spawn until it listens, with the download, load and log
 * replay its log reports; each is checked to serve `snapshotId` and left
 * running in `servers`.
 */
export async function startFollowers(
  o: Pick<FleetOptions, 'log' | 'workDir' | 'serverThreads'>,
  store: readonly string[],
  count: number,
  snapshotId: string,
  servers: RunningServer[],
): Promise<{ followers: RunningServer[]; readyS: number[]; startParts: FollowerStart[] }> {
  o.log(`fleet: ${count} followers (serve --store), one after the other`);
  const followers: RunningServer[] = [];
  const readyS: number[] = [];
  const startParts: FollowerStart[] = [];
  for (let n = 1; n <= count; n++) {
    const started = performance.now();
    const follower = await startFollower(o, store, n);
    readyS.push(round3((performance.now() - started) / 1000));
    servers.push(follower);
    followers.push(follower);
    const served = (await readyOf(follower)).snapshot;
    if (served !== snapshotId) throw new Error(`follower ${n} serves snapshot ${served}, not the publication ${snapshotId}`);
    const entry = logEntries(follower.stderr(), 'following the store')[0] ?? {};
    startParts.push({ downloadMs: Number(entry.downloadMs ?? NaN), loadMs: Number(entry.loadMs ?? NaN), replayMs: Number(entry.replayMs ?? NaN) });
    o.log(`  follower ${n}: listening ${readyS.at(-1)} s after it was started, serving ${served}; download ${entry.downloadMs} ms, load ${entry.loadMs} ms, log replay ${entry.replayMs} ms`);
  }
  return { followers, readyS, startParts };
}

/** Run the CLI with `args`; its standard output, or an error with its standard error when it failed. */
export async function cli(args: readonly string[], what: string): Promise<string> {
  const result = await runCli(args);
  if (result.code !== 0) throw new Error(`${what} failed (status ${result.code}):\n${result.stderr}`);
  return result.stdout;
}

/** Newline bytes of `file`: its lines. */
async function countLines(file: string): Promise<number> {
  let lines = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++;
  }
  return lines;
}

export async function measureIngest(o: Pick<FleetOptions, 'dataDir' | 'log'>, store: readonly string[], db: pg.Client, schema: string): Promise<FleetIngest> {
  const dir = join(o.dataDir, 'evidence');
  const files = (await readdir(dir))
    .filter((name) => name.endsWith('.ndjson'))
    .sort()
    .map((name) => join(dir, name));
  let lines = 0;
  let bytes = 0;
  for (const file of files) {
    lines += await countLines(file);
    bytes += (await stat(file)).size;
  }
  o.log(`fleet: ingest --store of ${files.length} evidence file(s), ${lines} lines, ${round1(bytes / 1e6)} MB`);
  const started = performance.now();
  const exitedAt = await ingestCli(store, ...files);
  const seconds = round3((exitedAt - started) / 1000);
  const added = Number((await db.query<{ position: string }>(`SELECT position FROM "${schema}".log_head`)).rows[0]!.position);
  const logBytes = Number((await db.query<{ bytes: string }>(`SELECT pg_total_relation_size('"${schema}".evidence') AS bytes`)).rows[0]!.bytes);
  const result: FleetIngest = {
    files: files.length,
    lines,
    bytes,
    seconds,
    linesPerSecond: Math.round(lines / seconds),
    added,
    duplicates: lines - added,
    logBytes,
    logBytesPerItem: round1(logBytes / added),
  };
  o.log(`  ${seconds} s: ${result.linesPerSecond} lines/s; ${added} items in the log, ${round1(logBytes / 1e6)} MB with its indexes (${result.logBytesPerItem} B per item)`);
  return result;
}

/** The first builder started and timed to its first publication, then the second, standing by; both left running in `builders`. */
export async function measureBuilders(o: Pick<FleetOptions, 'workDir' | 'log'>, store: readonly string[], builders: BuilderProcess[]): Promise<{ builder: FleetBuilder; snapshotId: string }> {
  const args = (n: number) => [...store, '--data-dir', join(o.workDir, `builder-${n}`), '--publish-minutes', PUBLISH_MINUTES];
  o.log('fleet: the first builder, until its first publication');
  const spawnedAt = Date.now();
  const started = performance.now();
  const first = startBuilder(args(1));
  builders.push(first);
  const exitedCheck = (builder: BuilderProcess) => {
    if (builder.child.exitCode !== null || builder.child.signalCode !== null) {
      throw new Error(`a builder exited (status ${builder.child.exitCode}, signal ${builder.child.signalCode}); the end of its log:\n${builder.stderr().split('\n').slice(-40).join('\n')}`);
    }
  };
  const publishedEntry = () => logEntries(first.stderr(), 'snapshot published')[0];
  await pollUntil(
    async () => {
      exitedCheck(first);
      return publishedEntry() !== undefined;
    },
    50,
    'the first builder did not publish within an hour',
    START_LIMIT_MS,
  );
  const firstPublicationS = round3((performance.now() - started) / 1000);
  const published = publishedEntry()!;
  const leased = logEntries(first.stderr(), 'builder lease taken: this builder is active')[0];
  if (leased === undefined) throw new Error(`the first builder published without logging that it took the lease:\n${first.stderr()}`);
  const leaseTime = Number(leased.time);
  const leaseS = round3((leaseTime - spawnedAt) / 1000);
  const buildMs = Number(published.buildMs);
  const publishMs = Number(published.publishMs);
  const mirrorS = round3((Number(published.time) - leaseTime - buildMs - publishMs) / 1000);
  o.log(
    `  published ${firstPublicationS} s after it was started (lease ${leaseS} s, mirror ${mirrorS} s, build ${buildMs} ms, publish ${publishMs} ms): ` +
      `snapshot ${published.snapshot}, ${round1(Number(published.bytes) / 1e6)} MB, ${published.vpas} VPAs`,
  );
  o.log('fleet: the second builder, standing by');
  const second = startBuilder(args(2));
  builders.push(second);
  // A standby tries for the lease every 2 s (its --poll-ms default): a few tries.
  await sleep(7000);
  exitedCheck(second);
  const oneActive = first.active() && !second.active();
  const rssMiB = await residentMiB(first.child.pid!);
  o.log(`  ${oneActive ? 'the first alone is active' : 'NOT the first alone active'}; the active builder resident ${rssMiB} MiB`);
  const builder: FleetBuilder = {
    // builder --threads' default.
    threads: availableParallelism(),
    firstPublicationS,
    leaseS,
    buildMs,
    publishMs,
    mirrorS,
    snapshotBytes: Number(published.bytes),
    vpas: Number(published.vpas),
    position: Number(published.position),
    rssMiB,
    oneActive,
  };
  return { builder, snapshotId: String(published.snapshot) };
}

/** The follower against an embedded server on a copy of the data set, single lookups, rounds alternating which goes first, then the ceiling. */
async function measureThroughput(o: FleetOptions, follower: RunningServer, token: string, workload: Workload): Promise<FleetThroughput> {
  const { log } = o;
  log('fleet: single-lookup peaks of the first follower and of an embedded server on the same data, and the ceiling');
  const embeddedDir = await cloneDataDir(o.dataDir, join(o.workDir, 'embedded'));
  const embeddedToken = await createBenchKey(['--data-dir', embeddedDir]);
  // It builds nothing: its build threads go a second after reading its stored evidence.
  const embedded = await startService(embeddedDir, false, o.serverThreads, ['--build-idle-seconds', '0', '--metrics-token', METRICS_TOKEN]);
  let bare: BareServer | null = null;
  try {
    const metrics = metricsOf(embedded, METRICS_TOKEN);
    await waitForGauge(metrics, 'upi_risk_build_carried_bytes', (v) => v > 0, 'the stored evidence was not read');
    await waitForGauge(metrics, 'upi_risk_build_threads', (v) => v === 0, 'the build threads did not exit');
    await sleep(3000);
    const embeddedRssMiB = await residentMiB(embedded.child.pid!);
    log(`  embedded server resident ${embeddedRssMiB} MiB, idle`);
    bare = await startBare(workload.singleBytes, o.dataDir, false, o.serverThreads);
    const rounds = await rotatedPeakRounds(
      [
        { name: 'follower', target: targetFor('single', workload, portOf(follower), false, token), pid: follower.child.pid! },
        { name: 'embedded', target: targetFor('single', workload, portOf(embedded), false, embeddedToken), pid: embedded.child.pid! },
      ],
      { name: 'ceiling', target: targetFor('single', workload, bare.port, false, token), pid: bare.pid },
      { seconds: o.seconds, connections: o.connections, threads: o.wrkThreads, rounds: o.rounds },
      (round, { order, runs }) =>
        log(
          `  round ${round} (${order.join(' first, then ')}): ` +
            Object.entries(runs)
              .map(([name, r]) => `${name} ${r.requestsPerSecond} req/s (${r.serverCpuUsPerRequest} µs, ${r.errors + r.non2xx} failed)`)
              .join(', ') +
            `: follower / embedded ${((runs.follower!.requestsPerSecond / runs.embedded!.requestsPerSecond) * 100).toFixed(1)}%`,
        ),
    );
    const m = roundMedians(rounds);
    return {
      bodyBytes: workload.singleBytes,
      rounds,
      followerToCeiling: m.toCeiling('follower'),
      embeddedToCeiling: m.toCeiling('embedded'),
      followerToEmbedded: m.ratio('follower', 'embedded'),
      followerToEmbeddedRange: m.ratioRange('follower', 'embedded'),
      followerPeak: m.peak('follower'),
      embeddedPeak: m.peak('embedded'),
      ceilingPeak: m.peak('ceiling'),
      cpuUs: { follower: m.cpuUs('follower'), embedded: m.cpuUs('embedded'), ceiling: m.cpuUs('ceiling') },
      embeddedRssMiB,
    };
  } finally {
    await Promise.allSettled([bare?.stop(), embedded.stop()]);
  }
}
