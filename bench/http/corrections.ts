/**
 * The corrections section of `npm run bench`: retractions and clearances
 * (docs/api.md, "Corrections") measured on real servers, plain HTTP, the
 * data set only read (every server runs on a hard-linked copy, or on a
 * PostgreSQL schema of the run's own, dropped at the end).
 *
 * 1. Lookup cost: two servers started alike on copies of the data set
 *    (compactions only on request, --build-idle-seconds 0), and the bare
 *    ceiling. Single-lookup wrk peaks in rounds that alternate which of the
 *    two goes first, each round ending with the ceiling: before any
 *    correction; once one of them has taken `bulkClearances` clearances
 *    (one request each, 32 in flight, as a caller correcting many VPAs
 *    sends them) and `bulkRetractions` retracted items (one item
 *    each of as many other VPAs, 1,000 ids a request), still in its live
 *    delta; and once both have compacted (POST /v1/admin/compaction), the
 *    corrections then in the snapshot. Half the known VPAs looked up are
 *    corrected ones. Reported: with / without corrections on the same
 *    server, each phase against the ceiling of its rounds, and against the
 *    uncorrected server in the same rounds.
 * 2. Served latency, embedded: on a third copy, `operations` retractions
 *    (one evidence id each of a FLAGGED VPA) and as many clearances (of
 *    FLAGGED VPAs), alternating, idle, then under open-loop single lookups
 *    at `rate` (correction-latency.ts).
 * 3. Served latency across two followers: `upi-risk ingest --store` of the
 *    data set, a builder's first publication, two followers; each
 *    correction sent to the first, and timed until every serving thread of
 *    the second answers the change, idle, then with the second under the
 *    load at `rate`.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { MAX_RETRACTION_IDS } from '../../src/api/admin-schemas.js';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import type { BuilderProcess, RunningServer } from '../../test/server-process.js';
import { round1, round3 } from '../support/report.js';
import { clear, postJson, retract, servedSeries, type Desk, type ServedSeries, type Watched } from './correction-latency.js';
import { pickTargets, type CorrectionTargets, type SeriesTargets } from './correction-targets.js';
import { METRICS_TOKEN, gauge, serveArgs } from './delta.js';
import { cli, measureBuilders, measureIngest, startFollower, type FleetBuilder, type FleetIngest } from './fleet.js';
import { freshnessOf, logEntries, type Freshness } from './freshness.js';
import { startOpenLoop, type OpenLoopResult, type RunningOpenLoop } from './load-tools.js';
import {
  cloneDataDir,
  createBenchKey,
  metricsOf,
  pollUntil,
  portOf,
  readyOf,
  residentMiB,
  rotatedPeakRounds,
  roundMedians,
  servedSnapshotWritten,
  sleep,
  startBare,
  startService,
  targetFor,
  waitForGauge,
  type LoadOptions,
  type RotatedRound,
} from './scenarios.js';
import { ThreadConnections } from './thread-connections.js';
import { writeWorkload, type Workload } from './workload.js';

export interface CorrectionsOptions extends LoadOptions {
  /** The bench data set's data directory (var/bench/vpas-N/data): copied, never changed. */
  readonly dataDir: string;
  /** Where the copies and the fleet's directories go (removed afterwards). */
  readonly workDir: string;
  /** The snapshot of the data set: the VPAs corrected and the request lists. */
  readonly view: SnapshotView;
  /** The fleet's PostgreSQL database; a schema of the run's own is made there and dropped at the end. */
  readonly storeUrl: string;
  readonly hitRatio: number;
  /** Retractions, and as many clearances, in each served-latency series. */
  readonly operations: number;
  readonly bulkClearances: number;
  readonly bulkRetractions: number;
  /** Single lookups a second of the load, and where that figure came from; null: half this section's single-lookup peak before corrections. */
  readonly rate: { readonly perSecond: number; readonly from: string } | null;
  /** The parts measured; without 'lookups', `rate` must be given. */
  readonly parts: ReadonlySet<CorrectionPart>;
}

/** One phase of the lookup cost: rounds of the corrected server and the other, then the ceiling. */
export interface LookupPhase {
  readonly phase: 'none' | 'delta' | 'compacted';
  /** VPAs in the corrected server's live delta, from /readyz, and its bytes (upi_risk_delta_bytes). */
  readonly deltaVpas: number;
  readonly deltaBytes: number;
  /** What the corrected server keeps for its next build (upi_risk_build_carried_bytes). */
  readonly carriedBytes: number;
  /** Resident memory of the corrected server and the other at the phase's start, idle, MiB. */
  readonly rssMiB: { readonly corrected: number; readonly other: number };
  readonly rounds: readonly RotatedRound[];
  /** Median peaks over the rounds, req/s. */
  readonly correctedPeak: number;
  readonly otherPeak: number;
  readonly ceilingPeak: number;
  /** Medians over the rounds of corrected / other, and of each one's peak / the ceiling's. */
  readonly correctedToOther: number;
  readonly correctedToOtherRange: readonly [number, number];
  readonly correctedToCeiling: number;
  readonly otherToCeiling: number;
  /** Median server CPU per request, µs (null where /proc could not tell). */
  readonly cpuUs: { readonly corrected: number | null; readonly other: number | null; readonly ceiling: number | null };
}

/** A phase with corrections against the one before them. */
export interface LookupRatios {
  /** The corrected server's median peak, over its own before the corrections. */
  readonly sameServer: number;
  /** Its peak to the ceiling, over the same before the corrections. */
  readonly sameServerToCeiling: number;
  /** Corrected / other in the phase, over the same before the corrections. */
  readonly againstOther: number;
}

export interface LookupCost {
  readonly bodyBytes: number;
  /** Share of the lookups that name a corrected VPA. */
  readonly correctedLookupShare: number;
  readonly clearances: number;
  readonly retractedItems: number;
  /** Applying them over HTTP, BULK_IN_FLIGHT requests at a time: the whole, s, and each request's answer time, ms. */
  readonly clearingS: number;
  readonly clearanceAnswers: Freshness;
  readonly retractingS: number;
  readonly retractionAnswers: Freshness;
  /** From POST /v1/admin/compaction until every serving thread of the corrected server answered from the new snapshot, s. */
  readonly compactionS: number;
  readonly phases: readonly LookupPhase[];
  readonly delta: LookupRatios;
  readonly compacted: LookupRatios;
}

export interface ServedResult {
  readonly idle: ServedSeries;
  readonly underLoad: ServedSeries;
  readonly load: OpenLoopResult;
}

export interface FleetServedResult extends ServedResult {
  readonly schema: string;
  readonly postgres: string;
  readonly ingest: FleetIngest;
  readonly builder: FleetBuilder;
}

export interface CorrectionsResult {
  readonly serverThreads: number;
  readonly operations: number;
  readonly rate: number;
  readonly rateFrom: string;
  /** Each part is null when the run left it out (CorrectionsOptions.parts). */
  readonly lookupCost: LookupCost | null;
  readonly embedded: ServedResult | null;
  readonly fleet: FleetServedResult | null;
}

/** The parts of the section, each measured on its own servers. */
export const CORRECTION_PARTS = ['lookups', 'embedded', 'fleet'] as const;
export type CorrectionPart = (typeof CORRECTION_PARTS)[number];

/** Share of the known VPAs among lookups drawn from the corrected ones. */
const CORRECTED_SHARE_OF_KNOWN = 0.5;
/** Clearances between two progress lines. */
const PROGRESS_EVERY = 1000;
/** Bulk corrections in flight at once, as a caller correcting many VPAs would send them: the server serves those recorded together in one serve. */
const BULK_IN_FLIGHT = 32;

/** `send` for each of `items`, BULK_IN_FLIGHT at a time: each one's result, in the order of `items`; `progress` hears the count done after each. */
async function eachInFlight<T>(items: readonly T[], send: (item: T) => Promise<number>, progress: (done: number) => void = () => {}): Promise<number[]> {
  const results = new Array<number>(items.length);
  let next = 0;
  let done = 0;
  const sender = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) {
      results[i] = await send(items[i]!);
      progress(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(BULK_IN_FLIGHT, items.length) }, sender));
  return results;
}

export async function runCorrections(o: CorrectionsOptions): Promise<CorrectionsResult> {
  const { log } = o;
  await rm(o.workDir, { recursive: true, force: true });
  await mkdir(o.workDir, { recursive: true });
  try {
    log(`corrections: ${o.bulkClearances} VPAs to clear and ${o.bulkRetractions} items to retract, and 2 series of ${o.operations} of each, from the data set`);
    const targets = await pickTargets(o.view, join(o.dataDir, 'evidence'), {
      series: 2,
      perSeries: o.operations,
      bulkClearances: o.bulkClearances,
      bulkRetractions: o.bulkRetractions,
    });
    // The key goes into a copy every server's copy is made from: the data set itself stays as it is.
    const base = await cloneDataDir(o.dataDir, join(o.workDir, 'base'));
    const token = await createBenchKey(['--data-dir', base], ['--scopes', 'screen,ingest,admin']);
    const workloadDir = join(o.workDir, 'workload');
    await mkdir(workloadDir, { recursive: true });
    const corrected = [...targets.bulkClearances, ...targets.bulkRetractions.map((r) => r.upi)];
    const workload = await writeWorkload(o.view, workloadDir, { hitRatio: o.hitRatio, delta: { vpas: corrected, share: CORRECTED_SHARE_OF_KNOWN } });
    const lookupCost = o.parts.has('lookups') ? await measureLookupCost(o, base, workload, token, targets) : null;
    const rate =
      o.rate ??
      (lookupCost === null
        ? null
        : { perSecond: Math.round(lookupCost.phases[0]!.otherPeak / 2), from: "half this section's single-lookup peak before corrections" });
    if (rate === null) throw new Error('corrections: without its lookup part the section needs --swap-rate for its load');
    log(`corrections: load of ${rate.perSecond} single lookups a second (${rate.from})`);
    const embedded = o.parts.has('embedded') ? await measureEmbedded(o, base, workload, token, targets.series, rate.perSecond) : null;
    const fleet = o.parts.has('fleet') ? await measureFleet(o, workload, targets.series, rate.perSecond) : null;
    return { serverThreads: o.serverThreads, operations: o.operations, rate: rate.perSecond, rateFrom: rate.from, lookupCost, embedded, fleet };
  } finally {
    await rm(o.workDir, { recursive: true, force: true });
  }
}

/**
 * Keep a server's log beside the data set as `corrections-<name>-server.log`
 * (the work directory goes at the end), and say how many requests it
 * answered 500 for an exception (the route kit's "request failed"), with
 * the first of them.
 */
async function keepLog(o: CorrectionsOptions, name: string, stderr: string): Promise<void> {
  const path = join(o.workDir, '..', `corrections-${name}-server.log`);
  await writeFile(path, stderr).catch((error: unknown) => o.log(`  ${name}: log not kept: ${String(error)}`));
  const failed = logEntries(stderr, 'request failed');
  o.log(`  ${name}: ${failed.length} "request failed" lines in its log (${path})`);
  for (const entry of failed.slice(0, 3)) o.log(`    ${JSON.stringify(entry)}`);
}

/** Once `server` has read its stored evidence and its build threads have gone (--build-idle-seconds 0), idle. */
async function settled(server: RunningServer): Promise<void> {
  const metrics = metricsOf(server, METRICS_TOKEN);
  await waitForGauge(metrics, 'upi_risk_build_carried_bytes', (v) => v > 0, 'the stored evidence was not read');
  await waitForGauge(metrics, 'upi_risk_build_threads', (v) => v === 0, 'the build threads did not exit');
  // The quick thread (merges) goes a second after its last task, as the build threads do.
  await sleep(3000);
}

async function measureLookupCost(o: CorrectionsOptions, base: string, workload: Workload, token: string, targets: CorrectionTargets): Promise<LookupCost> {
  const { log } = o;
  log('corrections: lookup cost, a server given the corrections and one without, and the ceiling');
  const args = serveArgs(['--build-idle-seconds', '0']);
  const dirs = { corrected: join(o.workDir, 'corrected'), other: join(o.workDir, 'other') };
  const corrected = await startService(await cloneDataDir(base, dirs.corrected), false, o.serverThreads, args);
  let other: RunningServer | null = null;
  let bare: Awaited<ReturnType<typeof startBare>> | null = null;
  try {
    other = await startService(await cloneDataDir(base, dirs.other), false, o.serverThreads, args);
    const servers = { corrected, other };
    await settled(corrected);
    await settled(other);
    bare = await startBare(workload.singleBytes, o.dataDir, false, o.serverThreads);
    const ceiling = { name: 'ceiling', target: targetFor('single', workload, bare.port, false, token), pid: bare.pid };
    const phase = async (name: LookupPhase['phase']): Promise<LookupPhase> => {
      const deltaVpas = (await readyOf(corrected)).delta_vpas;
      const text = await metricsOf(corrected, METRICS_TOKEN)();
      const memory = { deltaBytes: gauge(text, 'upi_risk_delta_bytes'), carriedBytes: gauge(text, 'upi_risk_build_carried_bytes') };
      const rssMiB = { corrected: await residentMiB(corrected.child.pid!), other: await residentMiB(servers.other.child.pid!) };
      log(
        `  ${name}: corrected server's delta ${deltaVpas} VPAs, ${memory.deltaBytes} bytes; carried ${memory.carriedBytes} bytes; ` +
          `resident ${rssMiB.corrected} and ${rssMiB.other} MiB`,
      );
      const rounds = await rotatedPeakRounds(
        (['corrected', 'other'] as const).map((key) => ({ name: key, target: targetFor('single', workload, portOf(servers[key]), false, token), pid: servers[key].child.pid! })),
        ceiling,
        { seconds: o.seconds, connections: o.connections, threads: o.wrkThreads, rounds: o.rounds },
        (round, { order, runs }) =>
          log(
            `  ${name} round ${round} (${order.join(' first, then ')}): ` +
              Object.entries(runs)
                .map(([who, r]) => `${who} ${r.requestsPerSecond} req/s (${r.serverCpuUsPerRequest} µs, ${r.errors + r.non2xx} failed)`)
                .join(', ') +
              `: corrected / other ${((runs.corrected!.requestsPerSecond / runs.other!.requestsPerSecond) * 100).toFixed(1)}%`,
          ),
      );
      return { ...lookupPhase(name, rounds), deltaVpas, ...memory, rssMiB };
    };

    const none = await phase('none');
    const desk: Desk = { base: corrected.base, token };
    log(`corrections: ${targets.bulkRetractions.length} items retracted, ${MAX_RETRACTION_IDS} a request, ${BULK_IN_FLIGHT} requests in flight`);
    const batches: string[][] = [];
    for (let at = 0; at < targets.bulkRetractions.length; at += MAX_RETRACTION_IDS) {
      batches.push(targets.bulkRetractions.slice(at, at + MAX_RETRACTION_IDS).map((r) => r.evidenceId));
    }
    let started = performance.now();
    const retractionMs = await eachInFlight(batches, (ids) => retract(desk, ids));
    const retractingS = round3((performance.now() - started) / 1000);
    log(`  ${retractingS} s`);
    log(`corrections: ${targets.bulkClearances.length} clearances, one a request, ${BULK_IN_FLIGHT} requests in flight`);
    started = performance.now();
    const clearanceMs = await eachInFlight(targets.bulkClearances, (upi) => clear(desk, upi), (done) => {
      if (done % PROGRESS_EVERY === 0) log(`  ${done} in ${round1((performance.now() - started) / 1000)} s`);
    });
    const clearingS = round3((performance.now() - started) / 1000);
    await settled(corrected);
    const delta = await phase('delta');

    log('corrections: both servers compacted (POST /v1/admin/compaction), one after the other');
    const compactionS = await compact(corrected, dirs.corrected, token, o.serverThreads);
    log(`  the corrected server served its new snapshot ${compactionS} s after the request`);
    await compact(other, dirs.other, token, o.serverThreads);
    await settled(corrected);
    await settled(other);
    const compacted = await phase('compacted');
    return {
      bodyBytes: workload.singleBytes,
      correctedLookupShare: round3(o.hitRatio * CORRECTED_SHARE_OF_KNOWN),
      clearances: targets.bulkClearances.length,
      retractedItems: targets.bulkRetractions.length,
      clearingS,
      clearanceAnswers: freshnessOf(clearanceMs, []),
      retractingS,
      retractionAnswers: freshnessOf(retractionMs, []),
      compactionS,
      phases: [none, delta, compacted],
      delta: ratiosOf(delta, none),
      compacted: ratiosOf(compacted, none),
    };
  } finally {
    await Promise.allSettled([corrected.stop(), other?.stop(), bare?.stop()]);
    await keepLog(o, 'lookup-corrected', corrected.stderr());
    if (other !== null) await keepLog(o, 'lookup-other', other.stderr());
  }
}

/**
 * Ask `server` (on `dataDir`) to compact; once every serving thread answers
 * from the new snapshot, how long that took, s; it resolves once the
 * snapshot's file is written and the one before let go.
 */
async function compact(server: RunningServer, dataDir: string, token: string, threads: number): Promise<number> {
  const connections = await ThreadConnections.open(portOf(server), threads);
  try {
    const snapshots = async () => (await connections.every('/readyz')).map((a) => (JSON.parse(a.body) as { snapshot: string }).snapshot);
    const before = await snapshots();
    const asked = performance.now();
    const answer = await postJson({ base: server.base, token }, '/v1/admin/compaction', {});
    if (answer.status !== 202) throw new Error(`POST /v1/admin/compaction answered ${answer.status}: ${answer.text}`);
    await pollUntil(async () => (await snapshots()).every((id, i) => id !== before[i]), 50, 'a compaction was not served within 600 s');
    const s = round3((performance.now() - asked) / 1000);
    await servedSnapshotWritten(server, dataDir);
    await waitForGauge(metricsOf(server, METRICS_TOKEN), 'upi_risk_replaced_snapshots_held', (v) => v === 0, 'the replaced snapshot was not given back');
    return s;
  } finally {
    connections.close();
  }
}

/** A phase's figures from its rounds. */
function lookupPhase(phase: LookupPhase['phase'], rounds: readonly RotatedRound[]): Omit<LookupPhase, 'deltaVpas' | 'deltaBytes' | 'carriedBytes' | 'rssMiB'> {
  const m = roundMedians(rounds);
  return {
    phase,
    rounds,
    correctedPeak: m.peak('corrected'),
    otherPeak: m.peak('other'),
    ceilingPeak: m.peak('ceiling'),
    correctedToOther: m.ratio('corrected', 'other'),
    correctedToOtherRange: m.ratioRange('corrected', 'other'),
    correctedToCeiling: m.toCeiling('corrected'),
    otherToCeiling: m.toCeiling('other'),
    cpuUs: { corrected: m.cpuUs('corrected'), other: m.cpuUs('other'), ceiling: m.cpuUs('ceiling') },
  };
}

function ratiosOf(phase: LookupPhase, none: LookupPhase): LookupRatios {
  return {
    sameServer: round3(phase.correctedPeak / none.correctedPeak),
    sameServerToCeiling: round3(phase.correctedToCeiling / none.correctedToCeiling),
    againstOther: round3(phase.correctedToOther / none.correctedToOther),
  };
}

/** The two series on one server, idle then under the load: corrections sent to `desk`, answers watched on `watched`. */
async function servedOn(
  o: CorrectionsOptions,
  desk: Desk,
  watched: Watched,
  series: readonly SeriesTargets[],
  load: () => RunningOpenLoop,
  label: string,
): Promise<ServedResult> {
  o.log(`corrections: ${label}, ${o.operations} retractions and ${o.operations} clearances, idle`);
  const idle = await servedSeries(desk, watched, series[0]!, 'idle', o.log);
  o.log(`corrections: ${label}, the same under load`);
  const running = load();
  try {
    await sleep(2000);
    const underLoad = await servedSeries(desk, watched, series[1]!, 'under load', o.log);
    running.stop();
    const result = await running.result;
    o.log(`  load: ${result.sent} sent, ${result.errors} errors, ${result.non2xx} non-2xx, p99 ${result.p99} ms`);
    return { idle, underLoad, load: result };
  } finally {
    running.stop();
    await running.result.catch(() => {});
  }
}

function aliveCheck(...servers: RunningServer[]): () => void {
  return () => {
    for (const server of servers) {
      if (server.child.exitCode !== null || server.child.signalCode !== null) {
        throw new Error(`a server exited; the end of its log:\n${server.output().split('\n').slice(-80).join('\n')}`);
      }
    }
  };
}

async function measureEmbedded(o: CorrectionsOptions, base: string, workload: Workload, token: string, series: readonly SeriesTargets[], rate: number): Promise<ServedResult> {
  // At info, the server logs each change it serves with its duration.
  const server = await startService(await cloneDataDir(base, join(o.workDir, 'served')), false, o.serverThreads, serveArgs(['--log-level', 'info']));
  let connections: ThreadConnections | null = null;
  try {
    await waitForGauge(metricsOf(server, METRICS_TOKEN), 'upi_risk_build_carried_bytes', (v) => v > 0, 'the stored evidence was not read');
    await sleep(2000);
    connections = await ThreadConnections.open(portOf(server), o.serverThreads);
    const watched: Watched = { server, connections, token, logMessage: 'corrections served', alive: aliveCheck(server) };
    const target = targetFor('single', workload, portOf(server), false, token);
    const load = () => startOpenLoop(target, { rate, seconds: 3600, warmupSeconds: 1, connections: o.connections });
    return await servedOn(o, { base: server.base, token }, watched, series, load, 'embedded server');
  } finally {
    connections?.close();
    await server.stop();
    await keepLog(o, 'embedded', server.stderr());
  }
}

async function measureFleet(o: CorrectionsOptions, workload: Workload, series: readonly SeriesTargets[], rate: number): Promise<FleetServedResult> {
  const { log } = o;
  const schema = `bench_corrections_${randomBytes(4).toString('hex')}`;
  const store = ['--store', o.storeUrl, '--store-schema', schema];
  const workDir = join(o.workDir, 'fleet');
  const db = new pg.Client({ connectionString: o.storeUrl });
  const builders: BuilderProcess[] = [];
  const followers: RunningServer[] = [];
  let connections: ThreadConnections | null = null;
  await db.connect();
  try {
    await mkdir(workDir, { recursive: true });
    const postgres = (await db.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    await cli(['migrate', ...store], 'migrate');
    const token = await createBenchKey(store, ['--scopes', 'screen,ingest,admin']);
    log(`corrections: the fleet, schema ${schema} in PostgreSQL ${postgres}`);
    const ingest = await measureIngest({ dataDir: o.dataDir, log }, store, db, schema);
    const { builder } = await measureBuilders({ workDir, log }, store, builders);
    for (const n of [1, 2]) followers.push(await startFollower({ workDir, serverThreads: o.serverThreads }, store, n));
    const [first, second] = followers as [RunningServer, RunningServer];
    // Idle: a merge thread would go 5 s after its last task.
    await sleep(6000);
    connections = await ThreadConnections.open(portOf(second), o.serverThreads);
    // A follower logs the log records it serves, corrections among them, as merges into its delta.
    const watched: Watched = { server: second, connections, token, logMessage: 'evidence merged into the delta', alive: aliveCheck(first, second) };
    const target = targetFor('single', workload, portOf(second), false, token);
    const load = () => startOpenLoop(target, { rate, seconds: 3600, warmupSeconds: 1, connections: o.connections });
    const served = await servedOn(o, { base: first.base, token }, watched, series, load, 'sent to the first follower, watched on the second');
    return { ...served, schema, postgres, ingest, builder };
  } finally {
    connections?.close();
    await Promise.allSettled([...followers.map((f) => f.stop()), ...builders.map((b) => b.stop())]);
    for (const [i, follower] of followers.entries()) await keepLog(o, `follower-${i + 1}`, follower.stderr());
    for (const [i, builder] of builders.entries()) await keepLog(o, `builder-${i + 1}`, builder.stderr());
    await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((error: unknown) => log(`corrections: schema ${schema} not dropped: ${String(error)}`));
    await db.end().catch(() => {});
  }
}
