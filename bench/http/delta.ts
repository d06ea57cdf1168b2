/**
 * The delta section of `npm run bench`: the live delta (docs/design.md,
 * "The live delta") measured on the real server, plain HTTP, with
 * compactions only when the bench asks for them.
 *
 * 1. Hot path: two servers started alike on copies of the data set (hard
 *    links: the same files), one left with an empty delta and one given the
 *    large file (about 100,000 VPAs) by an ingest, and the bare ceiling
 *    (both with --build-idle-seconds 0: they build nothing):
 *    wrk peaks of single lookups and batches in alternated rounds, with the
 *    CPU each server spent per request.
 * 2. On a third copy, one server for the rest:
 *    - freshness of small ingests (upi-risk ingest, as a process) on the
 *      idle server: from the CLI process exiting until every serving thread
 *      answers FLAGGED for a VPA the file adds;
 *    - the same under open-loop single lookups at `rate`;
 *    - compactions (SIGUSR2) under that load with ingests going on, while a
 *      checker asks every thread about every VPA ingested so far and some
 *      known ones, and counts answers that go backwards;
 *    - the large file ingested: the delta's bytes per evidence item and the
 *      server's resident memory, then small ingests over that delta.
 * The copies are removed at the end; the data set itself is not changed.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import type { RunningServer } from '../../test/server-process.js';
import { medianBy, round1, round3 } from '../support/report.js';
import { processCpuSeconds } from '../support/process-cpu.js';
import { DeltaEvidence, SMALL_FILE, type LargeFile } from './delta-evidence.js';
import { flaggedByEveryThread, freshnessOf, ingestCli, loggedMs, type Freshness } from './freshness.js';
import { startOpenLoop, type OpenLoopResult, type RunningOpenLoop, type Target, type WrkResult } from './load-tools.js';
import {
  bodyBytesOf,
  cloneDataDir,
  metricsOf as metricsOfServer,
  pollUntil,
  portOf,
  readyOf,
  residentMiB,
  rotatedPeakRounds,
  servedSnapshotWritten,
  sleep,
  startBare,
  startService,
  targetFor,
  waitForGauge,
  type BareServer,
  type LoadOptions,
} from './scenarios.js';
import { ThreadConnections, type Answer } from './thread-connections.js';
import { writeWorkload, type Workload } from './workload.js';

export interface DeltaOptions extends LoadOptions {
  /** The bench data set's data directory (var/bench/vpas-N/data): copied, never changed. */
  readonly dataDir: string;
  /** Where the copies and files go (removed afterwards). */
  readonly workDir: string;
  /** The snapshot of the data set, for the evidence files and the request lists. */
  readonly view: SnapshotView;
  readonly token: string;
  readonly hitRatio: number;
  /** Small ingests in each series (idle, under load, over the large delta) and at least as many around the compactions. */
  readonly ingests: number;
  readonly compactions: number;
  /** VPAs of the large file. */
  readonly largeVpas: number;
  /** Single lookups a second of the load, and where that figure came from; null: half this section's empty-delta single peak. */
  readonly rate: { readonly perSecond: number; readonly from: string } | null;
  /** Single lookups a second around the compactions; null: `rate`. */
  readonly compactionRate: number | null;
}

/** One round of the hot path: the empty-delta and the large-delta service (in alternating order), then the ceiling. */
export interface HotPathRound {
  readonly empty: WrkResult;
  readonly delta: WrkResult;
  readonly ceiling: WrkResult;
  /** Whose run came first in the round. */
  readonly first: 'empty' | 'delta';
  /** delta peak / empty peak in this round. */
  readonly ratio: number;
}

export interface HotPathScenario {
  readonly scenario: 'single' | 'batch';
  readonly bodyBytes: number;
  readonly rounds: readonly HotPathRound[];
  /** Median over the rounds of delta / empty peak; lowest and highest. */
  readonly ratio: number;
  readonly ratioRange: readonly [number, number];
  /** Median over the rounds of each one's peak / the ceiling's. */
  readonly emptyToCeiling: number;
  readonly deltaToCeiling: number;
  /** Median server CPU per request, µs (null where /proc could not tell). */
  readonly cpuUs: { readonly empty: number | null; readonly delta: number | null; readonly ceiling: number | null };
  /** Median over the rounds of delta / empty CPU per request. */
  readonly cpuRatio: number | null;
}

export interface HotPathResult {
  /** VPAs in each server's delta, from /readyz. */
  readonly emptyDeltaVpas: number;
  readonly deltaVpas: number;
  /** Share of the lookups that name a VPA of the large delta. */
  readonly deltaLookupShare: number;
  /**
   * Resident memory of each server once loaded, idle, the large file served
   * by the one, their background threads gone, before any load, MiB.
   */
  readonly emptyRssMiB: number;
  readonly deltaRssMiB: number;
  readonly scenarios: readonly HotPathScenario[];
}

export interface CompactionRecord {
  /** From SIGUSR2 until every serving thread answered from a new snapshot, ms. */
  readonly ms: number;
  /** The build's own duration, from the server's log, ms. */
  readonly buildMs: number | null;
  /** How long the file of the snapshot before it took to be written before the signal, s (ingests went on). */
  readonly waitedForFileS: number;
  /** Ingests since the compaction before (or the first of them), each at most once a second. */
  readonly ingestsDuring: number;
}

/**
 * One window of the load around the compactions: what the server answered
 * and the CPU it and the load generator used. A server answering less than
 * the rate while the generator uses nearly a core of its own is the
 * generator falling behind; while the generator has CPU to spare, it is the
 * server.
 */
export interface LoadWindow {
  /** From the first compaction's signal, s. */
  readonly atS: number;
  readonly seconds: number;
  /** Single lookups the server answered, per second. */
  readonly answeredPerS: number;
  /** CPU per second of wall time: the server process (all threads), the load generator. */
  readonly serverCpu: number;
  readonly generatorCpu: number;
}

export interface CheckerResult {
  /** VPAs asked about at the end: every one ingested plus the known ones. */
  readonly vpas: number;
  readonly requests: number;
  /** Answers other than 200. */
  readonly failed: number;
  /** Answers behind what the same thread had answered before for the VPA. */
  readonly backward: number;
  readonly examples: readonly string[];
}

export interface DeltaResult {
  readonly serverThreads: number;
  readonly smallFile: typeof SMALL_FILE;
  readonly large: { readonly vpas: number; readonly newVpas: number; readonly knownVpas: number; readonly items: number };
  readonly rate: number;
  readonly rateFrom: string;
  /** Single lookups a second around the compactions (absent in reports from before it could differ from `rate`). */
  readonly compactionRate?: number;
  readonly hotPath: HotPathResult;
  /** From the main server listening until it had read the stored evidence (upi_risk_build_carried_bytes > 0), s. */
  readonly readAheadS: number;
  readonly idle: Freshness;
  readonly underLoad: Freshness;
  readonly underLoadLoad: OpenLoopResult;
  readonly compactions: {
    readonly records: readonly CompactionRecord[];
    readonly ingests: number;
    readonly freshness: Freshness;
    readonly load: OpenLoopResult;
    readonly checker: CheckerResult;
    /** Freshness polls answered other than 200 during it. */
    readonly pollFailures: number;
    /** Load generator errors and non-2xx, checker and poll answers other than 200. */
    readonly failed: number;
    /** The server's highest resident memory, sampled every second from the first compaction's start to the last one's file, MiB. */
    readonly rssPeakMiB?: number;
    /** Who kept up with the load, window by window (LoadWindow): absent in reports made before it was sampled. */
    readonly windows?: readonly LoadWindow[];
  };
  readonly memory: {
    /** The main server once it had read the stored evidence, idle, empty delta, MiB. */
    readonly loadedRssMiB: number;
    /** After the compactions, idle, just before the large ingest, MiB. */
    readonly beforeLargeRssMiB: number;
    /** With the large delta, idle, MiB. */
    readonly withLargeRssMiB: number;
    /** From the large file's CLI exiting until every thread answered FLAGGED for its last new VPA, ms. */
    readonly largeFreshnessMs: number;
    /** The server's merge of the large file into the delta (its log), ms. */
    readonly largeMergeMs: number | null;
    readonly deltaVpas: number;
    readonly deltaEvidenceItems: number;
    readonly deltaBytes: number;
    readonly bytesPerItem: number;
  };
  /** Small ingests over the large delta, idle. */
  readonly overLarge: Freshness;
}

/** The /metrics token of the section's servers (and the corrections section's). */
export const METRICS_TOKEN = 'bench-metrics';
/** How often the load around the compactions is sampled (LoadWindow), ms. */
const LOAD_WINDOW_MS = 5000;
/** Around the compactions, ingests start at most this often, ms. */
const COMPACTION_INGEST_EVERY_MS = 1000;
/** Known VPAs the checker asks about besides the ingested ones. */
const CHECKED_KNOWN = 100;
/** Share of the known VPAs among lookups drawn from those the large file brings evidence for. */
const DELTA_SHARE_OF_KNOWN = 0.5;

export async function runDelta(o: DeltaOptions): Promise<DeltaResult> {
  const { log } = o;
  await rm(o.workDir, { recursive: true, force: true });
  await mkdir(o.workDir, { recursive: true });
  try {
    const tag = Date.now().toString(36);
    const evidence = new DeltaEvidence(o.view, tag);
    const large = await evidence.writeLarge(join(o.workDir, 'large.ndjson'), o.largeVpas);
    log(`delta: large file of ${large.newVpas.length} new and ${large.knownVpas.length} known VPAs, ${large.lines} items`);
    const workloadDir = join(o.workDir, 'workload');
    await mkdir(workloadDir, { recursive: true });
    const workload = await writeWorkload(o.view, workloadDir, {
      hitRatio: o.hitRatio,
      // Known VPAs the large file brings evidence for: FLAGGED on both services, from the delta on the one that holds it,
      // so both write as many flagged answers and what differs is where they come from.
      delta: { vpas: large.knownVpas, share: DELTA_SHARE_OF_KNOWN },
    });
    const hotPath = await measureHotPath(o, workload, large);
    const rate = o.rate ?? {
      perSecond: Math.round((medianBy(hotPath.scenarios[0]!.rounds, (r) => r.ratio).empty.requestsPerSecond) / 2),
      from: "half this section's single-lookup peak of the empty-delta service",
    };
    log(`delta: load of ${rate.perSecond} single lookups a second (${rate.from})`);
    const main = await cloneDataDir(o.dataDir, join(o.workDir, 'main'));
    const rest = await measureMainServer(o, main, workload, evidence, large, rate.perSecond);
    return {
      serverThreads: o.serverThreads,
      smallFile: SMALL_FILE,
      large: { vpas: large.newVpas.length + large.knownVpas.length, newVpas: large.newVpas.length, knownVpas: large.knownVpas.length, items: large.lines },
      rate: rate.perSecond,
      rateFrom: rate.from,
      compactionRate: o.compactionRate ?? rate.perSecond,
      hotPath,
      ...rest,
    };
  } finally {
    await rm(o.workDir, { recursive: true, force: true });
  }
}

/** The flags every server of the section (and of the corrections section) runs with: default serving threads, compactions only on request. */
export function serveArgs(extra: readonly string[] = []): string[] {
  return ['--compact-vpas', '100000000', '--compact-minutes', '10080', '--metrics-token', METRICS_TOKEN, '--poll-ms', '1000', ...extra];
}

/** The server's /metrics, read with the token the section's servers run with. */
function metricsOf(server: RunningServer): () => Promise<string> {
  return metricsOfServer(server, METRICS_TOKEN);
}

/** The windows in a line: the slowest the server answered, and who used the CPU then. */
export function describeWindows(windows: readonly LoadWindow[], rate: number): string {
  if (windows.length === 0) return 'no load windows sampled';
  const slowest = windows.reduce((a, b) => (b.answeredPerS < a.answeredPerS ? b : a));
  const behind = windows.filter((w) => w.answeredPerS < rate * 0.9);
  const busiest = Math.max(...windows.map((w) => w.generatorCpu));
  return (
    `${behind.length} of ${windows.length} windows of ${LOAD_WINDOW_MS / 1000} s answered under 90 % of the rate; ` +
    `slowest ${slowest.answeredPerS}/s at ${slowest.atS} s (server CPU ${slowest.serverCpu}, generator ${slowest.generatorCpu}); ` +
    `the generator's busiest window ${busiest} of a core`
  );
}

/** Answers of the single-lookup route the server has counted, every status. */
function verifyAnswers(text: string): number {
  let sum = 0;
  for (const match of text.matchAll(/^upi_risk_http_requests_total\{([^}]*)\} (\S+)$/gm)) {
    if (match[1]!.includes('route="verify"')) sum += Number(match[2]);
  }
  return sum;
}

/** Sample LoadWindows every LOAD_WINDOW_MS until `stop()`, which returns them. */
function sampleLoad(metrics: () => Promise<string>, serverPid: number, generatorPid: number): { stop(): LoadWindow[] } {
  const windows: LoadWindow[] = [];
  const origin = performance.now();
  const read = async () => {
    const [text, server, generator] = await Promise.all([metrics().catch(() => null), processCpuSeconds(serverPid), processCpuSeconds(generatorPid)]);
    return { at: performance.now(), answered: text === null ? null : verifyAnswers(text), server, generator };
  };
  let last: Awaited<ReturnType<typeof read>> | null = null;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void read()
      .then((now) => {
        const before = last;
        last = now;
        if (before === null || before.answered === null || now.answered === null || before.server === null || now.server === null) return;
        if (before.generator === null || now.generator === null) return;
        const seconds = (now.at - before.at) / 1000;
        windows.push({
          atS: round1((before.at - origin) / 1000),
          seconds: round1(seconds),
          answeredPerS: Math.round((now.answered - before.answered) / seconds),
          serverCpu: round3((now.server - before.server) / seconds),
          generatorCpu: round3((now.generator - before.generator) / seconds),
        });
      })
      .finally(() => (busy = false));
  }, LOAD_WINDOW_MS);
  void read().then((first) => (last = first));
  return {
    stop: () => {
      clearInterval(timer);
      return windows;
    },
  };
}

/** The unlabelled gauge `name` of a /metrics text. */
export function gauge(text: string, name: string): number {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (match === null) throw new Error(`the server reports no ${name}`);
  return Number(match[1]);
}

async function measureHotPath(o: DeltaOptions, workload: Workload, large: LargeFile): Promise<HotPathResult> {
  const { log } = o;
  const emptyDir = await cloneDataDir(o.dataDir, join(o.workDir, 'empty'));
  const deltaDir = await cloneDataDir(o.dataDir, join(o.workDir, 'delta'));
  log('delta: hot path, the service with an empty delta and with the large one, and the ceiling');
  // These two build nothing: their background threads go a second after their last task (--build-idle-seconds 0),
  // so their resident memory is what serving them takes, and at 10M both fit beside the bench.
  const hotArgs = serveArgs(['--build-idle-seconds', '0']);
  const empty = await startService(emptyDir, false, o.serverThreads, hotArgs);
  let delta: RunningServer | null = null;
  try {
    delta = await startService(deltaDir, false, o.serverThreads, hotArgs);
    // Both have read the stored evidence; then the large file goes into the one's delta, ingested as usual.
    await waitForGauge(metricsOf(empty), 'upi_risk_build_carried_bytes', (v) => v > 0, 'the stored evidence was not read');
    await waitForGauge(metricsOf(delta), 'upi_risk_build_carried_bytes', (v) => v > 0, 'the stored evidence was not read');
    await ingestCli(['--data-dir', deltaDir], large.path);
    const deltaServer = delta;
    await pollUntil(async () => (await readyOf(deltaServer)).delta_vpas > 0, 50, 'the large file was not served within 600 s');
    const emptyDeltaVpas = (await readyOf(empty)).delta_vpas;
    const deltaVpas = (await readyOf(delta)).delta_vpas;
    await waitForGauge(metricsOf(empty), 'upi_risk_build_threads', (v) => v === 0, 'the build threads did not exit');
    await waitForGauge(metricsOf(delta), 'upi_risk_build_threads', (v) => v === 0, 'the build threads did not exit');
    // The quick thread (merges) goes a second after its last task, as the build threads do.
    await sleep(3000);
    const emptyRssMiB = await residentMiB(empty.child.pid!);
    const deltaRssMiB = await residentMiB(delta.child.pid!);
    log(`  delta VPAs ${emptyDeltaVpas} and ${deltaVpas}; resident ${emptyRssMiB} and ${deltaRssMiB} MiB`);
    const wrkOptions = { seconds: o.seconds, connections: o.connections, threads: o.wrkThreads };
    const scenarios: HotPathScenario[] = [];
    for (const scenario of ['single', 'batch'] as const) {
      const bodyBytes = bodyBytesOf(scenario, workload);
      const bare: BareServer = await startBare(bodyBytes, o.dataDir, false, o.serverThreads);
      try {
        const targets = {
          empty: targetFor(scenario, workload, portOf(empty), false, o.token),
          delta: targetFor(scenario, workload, portOf(delta), false, o.token),
          ceiling: targetFor(scenario, workload, bare.port, false, o.token),
        };
        // The two services take turns at going first, so a host slowing down or speeding up favours neither.
        const rounds: HotPathRound[] = [];
        await rotatedPeakRounds(
          [
            { name: 'empty', target: targets.empty, pid: empty.child.pid! },
            { name: 'delta', target: targets.delta, pid: delta.child.pid! },
          ],
          { name: 'ceiling', target: targets.ceiling, pid: bare.pid },
          { ...wrkOptions, rounds: o.rounds },
          (round, { order, runs }) => {
            const r: HotPathRound = {
              empty: runs.empty!,
              delta: runs.delta!,
              ceiling: runs.ceiling!,
              first: order[0] === 'delta' ? 'delta' : 'empty',
              ratio: round3(runs.delta!.requestsPerSecond / runs.empty!.requestsPerSecond),
            };
            rounds.push(r);
            log(
              `  ${scenario} round ${round}: empty delta ${r.empty.requestsPerSecond} req/s (${r.empty.serverCpuUsPerRequest} µs), ` +
                `large delta ${r.delta.requestsPerSecond} req/s (${r.delta.serverCpuUsPerRequest} µs), ceiling ${r.ceiling.requestsPerSecond} req/s ` +
                `(${r.ceiling.serverCpuUsPerRequest} µs): ${(r.ratio * 100).toFixed(1)}%; failed ${r.empty.errors + r.empty.non2xx + r.delta.errors + r.delta.non2xx}`,
            );
          },
        );
        scenarios.push(hotPathScenario(scenario, bodyBytes, rounds));
      } finally {
        await bare.stop();
      }
    }
    // Of the lookups, the known share times the share of those drawn from the large file.
    return { emptyDeltaVpas, deltaVpas, deltaLookupShare: round3(o.hitRatio * DELTA_SHARE_OF_KNOWN), emptyRssMiB, deltaRssMiB, scenarios };
  } finally {
    await Promise.allSettled([empty.stop(), delta?.stop()]);
  }
}

function hotPathScenario(scenario: 'single' | 'batch', bodyBytes: number, rounds: readonly HotPathRound[]): HotPathScenario {
  const median = (values: readonly (number | null)[]): number | null => {
    const known = values.filter((v): v is number => v !== null);
    return known.length === 0 ? null : medianBy(known, (v) => v);
  };
  const ratios = rounds.map((r) => r.ratio);
  const cpuRatios = rounds.map((r) =>
    r.delta.serverCpuUsPerRequest === null || r.empty.serverCpuUsPerRequest === null ? null : r.delta.serverCpuUsPerRequest / r.empty.serverCpuUsPerRequest,
  );
  const cpuRatio = median(cpuRatios);
  return {
    scenario,
    bodyBytes,
    rounds,
    ratio: medianBy(rounds, (r) => r.ratio).ratio,
    ratioRange: [Math.min(...ratios), Math.max(...ratios)],
    emptyToCeiling: round3(median(rounds.map((r) => r.empty.requestsPerSecond / r.ceiling.requestsPerSecond))!),
    deltaToCeiling: round3(median(rounds.map((r) => r.delta.requestsPerSecond / r.ceiling.requestsPerSecond))!),
    cpuUs: {
      empty: median(rounds.map((r) => r.empty.serverCpuUsPerRequest)),
      delta: median(rounds.map((r) => r.delta.serverCpuUsPerRequest)),
      ceiling: median(rounds.map((r) => r.ceiling.serverCpuUsPerRequest)),
    },
    cpuRatio: cpuRatio === null ? null : round3(cpuRatio),
  };
}

/** What the most advanced answer for a VPA on one thread held: an answer below it has gone backwards. */
interface Furthest {
  flagged: boolean;
  evidenceCount: number;
  firstSeen: number;
  lastSeen: number;
  readonly sources: Map<string, number>;
}

interface VerdictBody {
  status: string;
  evidence_count: number;
  first_seen: string | null;
  last_seen: string | null;
  sources: { url: string; captured_at: string }[];
}

/**
 * Asks every serving thread, over and over, about every VPA ingested so far
 * and some known ones, one request at a time per thread, and counts the
 * answers that are behind the furthest that thread gave for the VPA:
 * FLAGGED then CLEARED, evidence_count down, first_seen later, last_seen
 * earlier, a source url gone or its captured_at earlier.
 */
class Checker {
  readonly #connections: ThreadConnections;
  readonly #token: string;
  readonly #vpas: string[];
  readonly #furthest: Map<string, Furthest>[];
  #requests = 0;
  #failed = 0;
  #backward = 0;
  readonly #examples: string[] = [];
  #running = false;
  #loops: Promise<void>[] = [];

  constructor(connections: ThreadConnections, token: string, known: readonly string[]) {
    this.#connections = connections;
    this.#token = token;
    this.#vpas = [...known];
    this.#furthest = Array.from({ length: connections.threads }, () => new Map<string, Furthest>());
  }

  /** VPAs to ask about from now on (once every thread has served them). */
  add(vpas: readonly string[]): void {
    this.#vpas.push(...vpas);
  }

  start(): void {
    this.#running = true;
    this.#loops = Array.from({ length: this.#connections.threads }, (_, thread) => this.#loop(thread));
  }

  async stop(): Promise<CheckerResult> {
    this.#running = false;
    await Promise.all(this.#loops);
    return { vpas: new Set(this.#vpas).size, requests: this.#requests, failed: this.#failed, backward: this.#backward, examples: this.#examples };
  }

  async #loop(thread: number): Promise<void> {
    while (this.#running) {
      const count = this.#vpas.length;
      if (count === 0) await sleep(10);
      for (let i = 0; i < count && this.#running; i++) {
        await this.#check(thread, this.#vpas[i]!);
        // A light load beside the generator's: about a request a millisecond per thread.
        await sleep(1);
      }
    }
  }

  async #check(thread: number, upi: string): Promise<void> {
    let answer: Answer;
    try {
      answer = await this.#connections.get(thread, `/v1/verify/upi?upi=${encodeURIComponent(upi)}`, this.#token);
    } catch (error) {
      // The server closed the connection under the request, again and again: a failed request.
      answer = { status: 0, body: String(error) };
    }
    this.#requests++;
    if (answer.status !== 200) {
      this.#failed++;
      if (this.#examples.length < 10) this.#examples.push(`thread ${thread}, ${upi}: status ${answer.status} ${answer.body.slice(0, 200)}`);
      return;
    }
    const v = JSON.parse(answer.body) as VerdictBody;
    const flagged = v.status === 'FLAGGED';
    const firstSeen = v.first_seen === null ? Number.POSITIVE_INFINITY : Date.parse(v.first_seen);
    const lastSeen = v.last_seen === null ? Number.NEGATIVE_INFINITY : Date.parse(v.last_seen);
    const sources = new Map(v.sources.map((s) => [s.url, Date.parse(s.captured_at)]));
    const furthest = this.#furthest[thread]!.get(upi);
    if (furthest === undefined) {
      this.#furthest[thread]!.set(upi, { flagged, evidenceCount: v.evidence_count, firstSeen, lastSeen, sources });
      return;
    }
    const reasons: string[] = [];
    if (furthest.flagged && !flagged) reasons.push('FLAGGED then CLEARED');
    if (v.evidence_count < furthest.evidenceCount) reasons.push(`evidence_count ${furthest.evidenceCount} then ${v.evidence_count}`);
    if (firstSeen > furthest.firstSeen) reasons.push(`first_seen later (${v.first_seen})`);
    if (lastSeen < furthest.lastSeen) reasons.push(`last_seen earlier (${v.last_seen})`);
    for (const [url, captured] of furthest.sources) {
      const now = sources.get(url);
      if (now === undefined) reasons.push(`source ${url} gone`);
      else if (now < captured) reasons.push(`source ${url} captured_at earlier`);
    }
    if (reasons.length > 0) {
      this.#backward++;
      if (this.#examples.length < 10) this.#examples.push(`thread ${thread}, ${upi}: ${reasons.join('; ')}`);
    }
    furthest.flagged ||= flagged;
    furthest.evidenceCount = Math.max(furthest.evidenceCount, v.evidence_count);
    furthest.firstSeen = Math.min(furthest.firstSeen, firstSeen);
    furthest.lastSeen = Math.max(furthest.lastSeen, lastSeen);
    for (const [url, captured] of sources) furthest.sources.set(url, Math.max(furthest.sources.get(url) ?? Number.NEGATIVE_INFINITY, captured));
  }
}

async function measureMainServer(
  o: DeltaOptions,
  dataDir: string,
  workload: Workload,
  evidence: DeltaEvidence,
  large: LargeFile,
  rate: number,
): Promise<Omit<DeltaResult, 'serverThreads' | 'smallFile' | 'large' | 'rate' | 'rateFrom' | 'compactionRate' | 'hotPath'>> {
  const { log } = o;
  // At info, the server logs each merge and build with its duration.
  const server = await startService(dataDir, false, o.serverThreads, serveArgs(['--log-level', 'info']));
  const pid = server.child.pid!;
  const metrics = metricsOf(server);
  let connections: ThreadConnections | null = null;
  let checkerConnections: ThreadConnections | null = null;
  let checker: Checker | null = null;
  const loads: RunningOpenLoop[] = [];
  // A server that exits ends the section at once, with its last words, rather than after every poll's 600 s.
  let exited: string | null = null;
  server.child.once('exit', (code, signal) => (exited = `status ${code}, signal ${signal}`));
  const alive = () => {
    if (exited !== null) throw new Error(`the server exited (${exited}); the end of its log:\n${server.output().split('\n').slice(-80).join('\n')}`);
  };
  // Resident memory, every second: its peak around the compactions.
  let rssPeakMiB = 0;
  const sampling = setInterval(() => {
    void residentMiB(pid).then((mib) => (rssPeakMiB = Math.max(rssPeakMiB, mib)));
  }, 1000);
  try {
    const readAheadS = await waitForGauge(metrics, 'upi_risk_build_carried_bytes', (v) => v > 0, 'the stored evidence was not read');
    await sleep(2000);
    const loadedRssMiB = await residentMiB(pid);
    connections = await ThreadConnections.open(portOf(server), o.serverThreads);
    const threads = connections;
    let pollFailures = 0;
    let files = 0;

    /** Until every serving thread answers FLAGGED for `upi`: ms from `since`. */
    const servedByEvery = (upi: string, since: number): Promise<number> =>
      flaggedByEveryThread(threads, o.token, upi, since, { alive, failed: () => pollFailures++ });

    /** One small file ingested: its freshness, ms; its VPAs go to `served` once every thread serves them. */
    const ingestSmall = async (served?: (vpas: readonly string[]) => void): Promise<number> => {
      const file = await evidence.writeSmall(join(o.workDir, `small-${files++}.ndjson`));
      const exitedAt = await ingestCli(['--data-dir', dataDir], file.path);
      const ms = await servedByEvery(file.newVpa, exitedAt);
      served?.(file.vpas);
      await rm(file.path, { force: true });
      return ms;
    };
    const ingestedVpas: string[] = [];
    const series = async (label: string): Promise<Freshness> => {
      const from = server.stderr().length;
      const samples: number[] = [];
      for (let i = 0; i < o.ingests; i++) samples.push(await ingestSmall((vpas) => ingestedVpas.push(...vpas)));
      const result = freshnessOf(samples, loggedMs(server, from, 'evidence merged into the delta'));
      log(`  ${label}: freshness p50 ${result.p50} ms, p99 ${result.p99} ms, max ${result.max} ms (merge p50 ${result.mergeP50} ms, max ${result.mergeMax} ms)`);
      return result;
    };
    const target: Target = targetFor('single', workload, portOf(server), false, o.token);
    const load = (perSecond: number) => {
      const run = startOpenLoop(target, { rate: perSecond, seconds: 3600, warmupSeconds: 1, connections: o.connections });
      loads.push(run);
      return run;
    };

    log(`delta: ${o.ingests} small ingests, idle`);
    const idle = await series('idle');

    log(`delta: ${o.ingests} small ingests under ${rate} single lookups a second`);
    const underLoadRun = load(rate);
    await sleep(2000);
    const underLoad = await series('under load');
    underLoadRun.stop();
    const underLoadLoad = await underLoadRun.result;
    log(`  load: ${underLoadLoad.sent} sent, ${underLoadLoad.errors} errors, ${underLoadLoad.non2xx} non-2xx, p99 ${underLoadLoad.p99} ms`);

    const compactionRate = o.compactionRate ?? rate;
    log(`delta: ${o.compactions} compactions (SIGUSR2) under ${compactionRate} single lookups a second, ingests going on, answers checked`);
    const compactionRun = load(compactionRate);
    await sleep(2000);
    // The checker has connections of its own, so that the freshness polls never queue behind it.
    checkerConnections = await ThreadConnections.open(portOf(server), o.serverThreads);
    const checking = new Checker(checkerConnections, o.token, evidence.knownVpas(CHECKED_KNOWN));
    checker = checking;
    checking.add(ingestedVpas);
    checking.start();
    rssPeakMiB = await residentMiB(pid);
    const logFrom = server.stderr().length;
    const pollFailuresBefore = pollFailures;
    const samples: number[] = [];
    let ingests = 0;
    const pacedIngest = async () => {
      const started = performance.now();
      alive();
      samples.push(await ingestSmall((vpas) => checking.add(vpas)));
      ingests++;
      const left = COMPACTION_INGEST_EVERY_MS - (performance.now() - started);
      if (left > 0) await sleep(left);
    };
    /** Ingest, one file after another, until `wait` settles; its value. */
    const ingestingUntil = async <T>(wait: Promise<T>): Promise<T> => {
      let settled = false;
      const watched = wait.finally(() => (settled = true));
      // Rejections are taken up below, once the ingest under way has finished.
      watched.catch(() => {});
      while (!settled) await pacedIngest();
      return watched;
    };
    const snapshotsServed = async () => (await threads.every('/readyz')).map((a) => (JSON.parse(a.body) as { snapshot: string }).snapshot);
    const records: Omit<CompactionRecord, 'buildMs'>[] = [];
    const loadSampler = sampleLoad(metrics, pid, compactionRun.pid);
    for (let c = 0; c < o.compactions; c++) {
      const ingestsBefore = ingests;
      // A compaction asked for while the last one still writes its file would be that one.
      const waitedForFileS = await ingestingUntil(servedSnapshotWritten(server, dataDir));
      const before = await snapshotsServed();
      const signalled = performance.now();
      process.kill(pid, 'SIGUSR2');
      const ms = await ingestingUntil(
        pollUntil(
          // A connection closed under the request (an overloaded server) only means: not known yet.
          async () => (await snapshotsServed().catch(() => before)).every((id, i) => id !== before[i]),
          50,
          'a compaction was not served within 600 s',
        ).then(
          () => Math.round(performance.now() - signalled),
        ),
      );
      records.push({ ms, waitedForFileS, ingestsDuring: ingests - ingestsBefore });
      log(`  compaction ${c + 1}: served by every thread ${ms} ms after the signal, ${ingests - ingestsBefore} ingests since the one before`);
    }
    while (ingests < o.ingests) await pacedIngest();
    await ingestingUntil(servedSnapshotWritten(server, dataDir));
    const checked = await checking.stop();
    const windows = loadSampler.stop();
    const compactionRssPeakMiB = rssPeakMiB;
    const buildMs = loggedMs(server, logFrom, 'build finished');
    compactionRun.stop();
    const compactionLoad = await compactionRun.result;
    const compactionFreshness = freshnessOf(samples, loggedMs(server, logFrom, 'evidence merged into the delta'));
    const compactionPollFailures = pollFailures - pollFailuresBefore;
    const failed = compactionLoad.errors + compactionLoad.non2xx + checked.failed + compactionPollFailures;
    log(
      `  ${ingests} ingests: freshness p50 ${compactionFreshness.p50} ms, p99 ${compactionFreshness.p99} ms, max ${compactionFreshness.max} ms; ` +
        `load ${compactionLoad.sent} sent, ${compactionLoad.errors} errors, ${compactionLoad.non2xx} non-2xx; checker ${checked.requests} requests, ` +
        `${checked.failed} failed, ${checked.backward} backward; polls failed ${compactionPollFailures}`,
    );
    log(`  load generator: ${compactionLoad.cpuSeconds} s of CPU, at most ${compactionLoad.maxOutstanding} requests awaited; ${describeWindows(windows, compactionRate)}`);

    log(`delta: the large file (${large.lines} items), then ${o.ingests} small ingests over it`);
    await servedSnapshotWritten(server, dataDir);
    await waitForGauge(metrics, 'upi_risk_replaced_snapshots_held', (v) => v === 0, 'the replaced snapshot was not given back');
    await sleep(2000);
    const beforeLargeRssMiB = await residentMiB(pid);
    const largeLogFrom = server.stderr().length;
    const largeExitedAt = await ingestCli(['--data-dir', dataDir], large.path);
    const largeFreshnessMs = round1(await servedByEvery(large.newVpa, largeExitedAt));
    await sleep(2000);
    const text = await metrics();
    const deltaVpas = gauge(text, 'upi_risk_delta_vpas');
    const deltaEvidenceItems = gauge(text, 'upi_risk_delta_evidence_items');
    const deltaBytes = gauge(text, 'upi_risk_delta_bytes');
    const withLargeRssMiB = await residentMiB(pid);
    const largeMergeMs = loggedMs(server, largeLogFrom, 'evidence merged into the delta')[0] ?? null;
    log(
      `  served ${largeFreshnessMs} ms after the CLI exited; delta ${deltaVpas} VPAs, ${deltaEvidenceItems} items, ${deltaBytes} bytes ` +
        `(${round1(deltaBytes / deltaEvidenceItems)} per item); resident ${beforeLargeRssMiB} then ${withLargeRssMiB} MiB`,
    );
    const overLarge = await series('over the large delta');
    return {
      readAheadS,
      idle,
      underLoad,
      underLoadLoad,
      compactions: {
        records: records.map((r, i) => ({ ...r, buildMs: buildMs[i] ?? null })),
        ingests,
        freshness: compactionFreshness,
        load: compactionLoad,
        checker: checked,
        pollFailures: compactionPollFailures,
        failed,
        rssPeakMiB: compactionRssPeakMiB,
        windows,
      },
      memory: {
        loadedRssMiB,
        beforeLargeRssMiB,
        withLargeRssMiB,
        largeFreshnessMs,
        largeMergeMs,
        deltaVpas,
        deltaEvidenceItems,
        deltaBytes,
        bytesPerItem: round1(deltaBytes / deltaEvidenceItems),
      },
      overLarge,
    };
  } finally {
    clearInterval(sampling);
    for (const run of loads) run.stop();
    await Promise.allSettled([checker?.stop(), ...loads.map((run) => run.result)]);
    connections?.close();
    checkerConnections?.close();
    await server.stop();
    // Its log, kept beside the data set (the work directory goes at the end): each merge and build with where its time went.
    await writeFile(join(o.workDir, '..', 'delta-main-server.log'), server.stderr());
  }
}
