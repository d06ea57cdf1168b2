/**
 * The HTTP measurements of `npm run bench`: the real server process and the
 * bare uWebSockets.js ceiling, on as many threads (--server-threads), loaded the same way in the
 * same run, scenario by scenario; then a snapshot swap under load.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { copyFile, link, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { dataDir as openDataDir } from '../../src/common/data-dir.js';
import { SNAPSHOT_EXTENSION, listSnapshots } from '../../src/engine/snapshot-files.js';
import { defaultBuildThreads } from '../../src/service/snapshot-service.js';
import { runCli, startServer, type RunningServer } from '../../test/server-process.js';
import { runOpenLoop, runPaced, runWrk, type OpenLoopResult, type PacedResult, type Target, type WrkResult } from './load-tools.js';
import type { Workload } from './workload.js';
import { medianBy, round3 } from '../support/report.js';

/** The bare server's script (bare-server.ts), the ceiling every HTTP figure is measured against. */
export const BARE_SERVER = fileURLToPath(new URL('./bare-server.js', import.meta.url));

export type Scenario = 'single' | 'batch' | 'cluster' | 'range';
export const SCENARIOS: readonly Scenario[] = ['single', 'batch', 'cluster', 'range'];

/** How the HTTP sections load servers: the suite's options. */
export interface LoadOptions {
  /** Length of each measurement. */
  readonly seconds: number;
  /** Peak rounds per scenario: the services and the ceiling one after the other, `rounds` times. */
  readonly rounds: number;
  readonly connections: number;
  /** wrk threads. */
  readonly wrkThreads: number;
  /** Serving threads of the real servers, and of the ceiling. */
  readonly serverThreads: number;
  readonly log: (line: string) => void;
}

export interface HttpOptions extends LoadOptions {
  readonly dataDir: string;
  readonly workload: Workload;
  readonly tls: boolean;
  /** The scenarios to run, in SCENARIOS order (default all). */
  readonly scenarios?: readonly Scenario[];
}

export interface LatencyRow {
  readonly share: number;
  readonly rate: number;
  readonly service: OpenLoopResult;
  readonly ceiling: OpenLoopResult;
  /** The same rate from wrk paced by think time, a generator that sleeps between sends (load-tools.ts, runPaced). */
  readonly paced: { readonly service: PacedResult; readonly ceiling: PacedResult };
}

/** One peak round: the service, then the ceiling, each measured right after the other. */
export interface PeakRound {
  readonly service: WrkResult;
  readonly ceiling: WrkResult;
  /** The ceiling writing the service's headers, measured after the two (single lookups only). */
  readonly ceilingWithHeaders: WrkResult | null;
  /** service / ceiling in this round. */
  readonly ratio: number;
}

export interface ScenarioResult {
  readonly scenario: Scenario;
  readonly bodyBytes: number;
  /** The service's run in the round with the median ratio. */
  readonly service: WrkResult;
  /** The ceiling's run in that round. */
  readonly ceiling: WrkResult;
  /**
   * service peak / ceiling peak: the median of the rounds' ratios. Each
   * round's two runs are seconds apart, so a machine that slows down or
   * speeds up over the minutes of a run moves both.
   */
  readonly ratio: number;
  /** The lowest and highest of the rounds' ratios. */
  readonly ratioRange: readonly [low: number, high: number];
  /** The ceiling writing the service's headers, in the round with the median ratio (single lookups only). */
  readonly ceilingWithHeaders: WrkResult | null;
  readonly rounds: readonly PeakRound[];
  readonly latency: readonly LatencyRow[];
}

export interface HttpResult {
  readonly tls: boolean;
  readonly serverThreads: number;
  /** Resident memory of the server process once serving, MiB. */
  readonly serverRssMiB: number;
  readonly scenarios: readonly ScenarioResult[];
}

/** Open-loop rates as shares of the measured peak, per scenario. */
const LATENCY_SHARES: Readonly<Record<Scenario, readonly number[]>> = {
  single: [0.25, 0.5, 0.75],
  batch: [0.25, 0.5, 0.75],
  cluster: [0.25, 0.5, 0.75],
  range: [0.25, 0.5, 0.75],
};

/**
 * A key for the bench, in the key store `where` names (`--data-dir DIR`, or
 * `--store URL --store-schema S`), with `extra` options of `keys create`.
 */
export async function createBenchKey(where: readonly string[], extra: readonly string[] = []): Promise<string> {
  // Limits far above anything the bench sends: quotas are charged on every request, never refused.
  const created = await runCli(['keys', 'create', ...where, '--name', 'bench', '--burst', '10000000', '--sustained', '1000000000', '--window', '60', ...extra]);
  if (created.code !== 0) throw new Error(`keys create failed:\n${created.stderr}`);
  const key = created.stdout.trim().split('\n').at(-1)!;
  return key;
}

/**
 * Servers, the service and the ceiling alike, run in sessions of their own,
 * as a service manager starts a server, and apart from the load generators,
 * which stay in this process's session. With Linux's autogroup scheduling
 * (on by default) the CPU is shared between sessions first: one session
 * holding the server's threads and wrk shares it thread by thread instead,
 * and on this 2-core machine that cost the service a fifth of its rate
 * (single lookups at 1M: 70-77k req/s at 12.6-14.0 µs of server CPU per
 * request, against 88-97k at 10.4-11.5 µs in a session of its own).
 */
export async function startService(
  dataDir: string,
  tls: boolean,
  threads: number,
  extra: readonly string[] = [],
  listenTimeoutMs?: number,
): Promise<RunningServer> {
  return startServer(dataDir, {
    tls,
    ownSession: true,
    onSpawn: stopWithThisProcess,
    args: ['--threads', String(threads), '--log-level', 'warn', ...extra],
    ...(listenTimeoutMs === undefined ? {} : { listenTimeoutMs }),
  });
}

/**
 * A server in a session of its own misses the Ctrl-C and the hang-up its
 * terminal sends to the bench: the bench stops it on SIGINT, SIGTERM and
 * SIGHUP itself, from the moment it is spawned, then exits.
 */
const ownSessionServers = new Set<ChildProcess>();
let stoppingOnSignals = false;

function stopWithThisProcess(child: ChildProcess): void {
  if (!stoppingOnSignals) {
    stoppingOnSignals = true;
    for (const [signal, status] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
      process.once(signal, () => {
        for (const server of ownSessionServers) server.kill('SIGKILL');
        process.exit(status);
      });
    }
  }
  ownSessionServers.add(child);
  child.once('exit', () => ownSessionServers.delete(child));
}

export interface BareServer {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startBare(bodyBytes: number, dataDir: string, tls: boolean, threads: number, serviceHeaders = false): Promise<BareServer> {
  const args = [BARE_SERVER, '--body-bytes', String(bodyBytes), '--threads', String(threads)];
  if (serviceHeaders) args.push('--service-headers');
  // The certificate the service generated for itself, so both negotiate the same way.
  if (tls) args.push('--tls-cert', join(dataDir, 'tls', 'localhost-cert.pem'), '--tls-key', join(dataDir, 'tls', 'localhost-key.pem'));
  // In a session of its own, as the service (startService).
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  stopWithThisProcess(child);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const match = /listening (\d+)/.exec(out);
      if (match !== null) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return { port, pid: child.pid!, stop: () => stopChild(child) };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGKILL');
  await once(child, 'exit');
}

function cpuText(run: WrkResult): string {
  return run.serverCpuUsPerRequest === null ? 'server CPU unknown' : `server CPU ${run.serverCpuUsPerRequest} µs per request`;
}

export function portOf(server: RunningServer): number {
  return Number(new URL(server.base).port);
}

export async function residentMiB(pid: number): Promise<number> {
  const bytes = await residentBytes(pid);
  return bytes < 0 ? -1 : Math.round(bytes / 2 ** 20);
}

/** A process's resident memory (VmRSS), bytes; -1 when /proc cannot tell. */
export function residentBytes(pid: number): Promise<number> {
  return readFile(`/proc/${pid}/status`, 'utf8').then(
    (text) => Number(/VmRSS:\s+(\d+) kB/.exec(text)?.[1] ?? 0) * 1024,
    () => -1,
  );
}

export function targetFor(scenario: Scenario, workload: Workload, port: number, tls: boolean, token: string): Target {
  switch (scenario) {
    case 'single':
      return { port, tls, token, linesFile: workload.singleFile, method: 'GET', path: '' };
    case 'batch':
      return { port, tls, token, linesFile: workload.batchFile, method: 'POST', path: '/v1/verify/upi/batch' };
    case 'cluster':
      return { port, tls, token, linesFile: workload.clusterFile, method: 'GET', path: '' };
    case 'range':
      return { port, tls, token, linesFile: workload.rangeFile, method: 'GET', path: '' };
  }
}

export function bodyBytesOf(scenario: Scenario, workload: Workload): number {
  return { single: workload.singleBytes, batch: workload.batchBytes, cluster: workload.clusterBytes, range: workload.rangeBytes }[scenario];
}

/** A server loaded in peak rounds: its name, where the load goes, and the process whose CPU per request is read. */
export interface PeakContender {
  readonly name: string;
  readonly target: Target;
  readonly pid: number;
}

/** One of rotatedPeakRounds' rounds: each run by name (the ceiling's under its own), and the contenders' order. */
export interface RotatedRound {
  readonly order: readonly string[];
  readonly runs: Readonly<Record<string, WrkResult>>;
}

/**
 * wrk peaks in `rounds` rounds: the contenders one after another, in an
 * order that rotates from round to round (so a host slowing down or
 * speeding up favours none), then the ceiling, each run with the CPU its
 * process spent per request. Each is warmed first by a run as long as a
 * measurement (at least 2 s). `onRound` hears of each round as it ends.
 */
export async function rotatedPeakRounds(
  contenders: readonly PeakContender[],
  ceiling: PeakContender,
  options: { readonly seconds: number; readonly connections: number; readonly threads: number; readonly rounds: number },
  onRound: (round: number, result: RotatedRound) => void = () => {},
): Promise<RotatedRound[]> {
  const wrkOptions = { seconds: options.seconds, connections: options.connections, threads: options.threads };
  for (const server of [...contenders, ceiling]) await runWrk(server.target, { ...wrkOptions, seconds: Math.max(2, options.seconds) });
  const rounds: RotatedRound[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!);
    const runs: Record<string, WrkResult> = {};
    for (const server of [...order, ceiling]) runs[server.name] = await runWrk(server.target, { ...wrkOptions, serverPid: server.pid });
    const result: RotatedRound = { order: order.map((server) => server.name), runs };
    rounds.push(result);
    onRound(round + 1, result);
  }
  return rounds;
}

/** Medians over rotatedPeakRounds' rounds, by run name (the ceiling's named `ceiling`). */
export interface RoundMedians {
  /** Median peak, req/s. */
  peak(name: string): number;
  /** Median of each round's peak / the ceiling's. */
  toCeiling(name: string): number;
  /** Median of each round's `a` peak / `b` peak. */
  ratio(a: string, b: string): number;
  /** Lowest and highest round's `a` / `b`. */
  ratioRange(a: string, b: string): readonly [number, number];
  /** Median server CPU per request, µs (null where /proc could not tell). */
  cpuUs(name: string): number | null;
}

export function roundMedians(rounds: readonly RotatedRound[], ceiling = 'ceiling'): RoundMedians {
  const median = (values: readonly number[]) => medianBy(values, (v) => v);
  const rates = (name: string) => rounds.map((r) => r.runs[name]!.requestsPerSecond);
  const ratios = (a: string, b: string) => rounds.map((r) => r.runs[a]!.requestsPerSecond / r.runs[b]!.requestsPerSecond);
  return {
    peak: (name) => median(rates(name)),
    toCeiling: (name) => round3(median(ratios(name, ceiling))),
    ratio: (a, b) => round3(median(ratios(a, b))),
    ratioRange: (a, b) => [round3(Math.min(...ratios(a, b))), round3(Math.max(...ratios(a, b)))],
    cpuUs: (name) => {
      const known = rounds.map((r) => r.runs[name]!.serverCpuUsPerRequest).filter((v): v is number => v !== null);
      return known.length === 0 ? null : median(known);
    },
  };
}

/** The status of a GET with the bench key, over plain HTTP or TLS (the bench's certificate is self-signed). */
function statusOf(url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = (url.startsWith('https:') ? httpsGet : httpGet)(url, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
  });
}

/** Peak and latency of every scenario, service then ceiling, in one TLS mode. */
export async function runHttp(options: HttpOptions, token: string): Promise<HttpResult> {
  const { workload, tls, log } = options;
  const server = await startService(options.dataDir, tls, options.serverThreads);
  const scenarios: ScenarioResult[] = [];
  let serverRssMiB = -1;
  try {
    // Range lookups answer 503 until the snapshot's VPAs are hashed, seconds after the start.
    await pollUntil(async () => (await statusOf(`${server.base}/v1/verify/upi/range/00000`, token)) === 200, 100, 'range lookups were not ready', 120_000);
    const wrkOptions = { seconds: options.seconds, connections: options.connections, threads: options.wrkThreads };
    const warmupSeconds = Math.max(2, options.seconds);
    const loopOptions = { seconds: options.seconds, warmupSeconds: 2, connections: options.connections };
    for (const scenario of SCENARIOS.filter((s) => options.scenarios?.includes(s) ?? true)) {
      const bodyBytes = bodyBytesOf(scenario, workload);
      const bare = await startBare(bodyBytes, options.dataDir, tls, options.serverThreads);
      let withHeaders: BareServer | null = null;
      try {
        // Single lookups are also measured against the ceiling writing the service's headers.
        if (scenario === 'single') withHeaders = await startBare(bodyBytes, options.dataDir, tls, options.serverThreads, true);
        const serviceTarget = targetFor(scenario, workload, portOf(server), tls, token);
        const bareTarget = targetFor(scenario, workload, bare.port, tls, token);
        const headersTarget = withHeaders === null ? null : targetFor(scenario, workload, withHeaders.port, tls, token);
        // A run first warms each server (JIT, heap sizes, caches, connections)
        // before anything is recorded. It lasts as long as a measurement: a
        // freshly started service took 10-20 s of load to reach its steady
        // rate (single lookups at 1M: 62-78k req/s in the first 10 s, 85-101k
        // after), where the ceiling needs next to nothing.
        await runWrk(serviceTarget, { ...wrkOptions, seconds: warmupSeconds });
        await runWrk(bareTarget, { ...wrkOptions, seconds: warmupSeconds });
        if (headersTarget !== null) await runWrk(headersTarget, { ...wrkOptions, seconds: warmupSeconds });
        const rounds: PeakRound[] = [];
        for (let round = 1; round <= options.rounds; round++) {
          const service = await runWrk(serviceTarget, { ...wrkOptions, serverPid: server.child.pid! });
          const ceiling = await runWrk(bareTarget, { ...wrkOptions, serverPid: bare.pid });
          const ceilingWithHeaders = headersTarget === null ? null : await runWrk(headersTarget, { ...wrkOptions, serverPid: withHeaders!.pid });
          const ratio = round3(service.requestsPerSecond / ceiling.requestsPerSecond);
          rounds.push({ service, ceiling, ceilingWithHeaders, ratio });
          const headers = ceilingWithHeaders === null ? '' : `, ceiling with the service's headers ${ceilingWithHeaders.requestsPerSecond} req/s`;
          log(
            `  ${scenario} round ${round}: service ${service.requestsPerSecond} req/s (${service.non2xx} non-2xx, ${service.errors} errors, ${cpuText(service)}), ` +
              `ceiling ${ceiling.requestsPerSecond} req/s (${cpuText(ceiling)})${headers}: ${(ratio * 100).toFixed(1)}%`,
          );
        }
        const middle = medianBy(rounds, (r) => r.ratio);
        const latency: LatencyRow[] = [];
        for (const share of LATENCY_SHARES[scenario]) {
          const rate = Math.max(1, Math.round(middle.service.requestsPerSecond * share));
          const onService = await runOpenLoop(serviceTarget, { ...loopOptions, rate });
          const onCeiling = await runOpenLoop(bareTarget, { ...loopOptions, rate });
          const paced = { service: await runPaced(serviceTarget, { rate, seconds: options.seconds }), ceiling: await runPaced(bareTarget, { rate, seconds: options.seconds }) };
          log(
            `  ${scenario} at ${share * 100}% (${rate}/s): p99 ${onService.p99} ms vs ceiling ${onCeiling.p99} ms; ` +
              `paced (${paced.service.achievedRate}/s): p99 ${paced.service.p99} ms vs ceiling ${paced.ceiling.p99} ms`,
          );
          latency.push({ share, rate, service: onService, ceiling: onCeiling, paced });
        }
        const ratios = rounds.map((r) => r.ratio);
        scenarios.push({
          scenario,
          bodyBytes,
          service: middle.service,
          ceiling: middle.ceiling,
          ceilingWithHeaders: middle.ceilingWithHeaders,
          ratio: middle.ratio,
          ratioRange: [Math.min(...ratios), Math.max(...ratios)],
          rounds,
          latency,
        });
      } finally {
        await Promise.allSettled([bare.stop(), withHeaders?.stop()]);
      }
    }
    serverRssMiB = await residentMiB(server.child.pid!);
  } finally {
    await server.stop();
  }
  return { tls, serverThreads: options.serverThreads, serverRssMiB, scenarios };
}

export interface SwapResult {
  /**
   * Longest event-loop delay of the serving threads over the window with
   * the swap, ms: from before the ingest until the replaced snapshot has
   * been given back (the collections that frees it fall inside), plus a
   * second.
   */
  readonly stallMs: number;
  /** The same over an equally long window of the same load without a rebuild or a swap, ms. */
  readonly baselineStallMs: number;
  /** How long the window with the swap lasted, s (the baseline's lasts as long). */
  readonly windowS: number;
  /** How long the swap itself held a serving thread (upi_risk_snapshot_swap_seconds), ms. */
  readonly swapMs: number;
  /**
   * From the server listening until it had read the stored evidence ahead
   * of rebuilds, s. Nothing is measured before that: the read-ahead is a
   * one-off of every start, and a window overlapping it would charge its
   * work to the swap or to the baseline.
   */
  readonly readAheadS: number;
  /** From `upi-risk ingest` returning to the new verdict being served, under the load (the server's third rebuild), s. */
  readonly freshnessS: number;
  /** The same with no load, for the server's first two rebuilds (made before the one under load). */
  readonly idleFreshnessS: readonly [first: number, next: number];
  /**
   * Each ingest above is made once the build before it has written its
   * file: a snapshot is served before that, and a build started meanwhile
   * waits for the write. How long the bench waited for that before each of
   * the three ingests, s: what an ingest arriving right after the previous
   * verdict was served would add to its freshness.
   */
  readonly previousWriteS?: readonly [first: number, next: number, underLoad: number];
  /**
   * How much of each of the three rebuilds' snapshots was laid out in the
   * memory of a replaced snapshot (upi_risk_last_build_reused_bytes), MiB;
   * null where the server does not report it.
   */
  readonly reusedMiB?: readonly [first: number | null, next: number | null, underLoad: number | null];
  /**
   * The server's resident memory after each of the three rebuilds, MiB:
   * once its file is written and the snapshot it replaced let go (or handed
   * to the next build), with the build threads still alive unless
   * `buildIdleSeconds` is 0 (then once they have exited). The third is read
   * after the window without a rebuild.
   */
  readonly residentMiB?: readonly [first: number, next: number, underLoad: number];
  /** The server's `--build-idle-seconds`; absent: its default. */
  readonly buildIdleSeconds?: number;
  /** The server's background build threads: its `--build-threads`, or the default on this machine (absent in reports from before it was recorded). */
  readonly buildThreads?: number;
  /** Open-loop load running through the swap. */
  readonly load: OpenLoopResult;
  /** Requests that failed or answered other than 2xx during it. */
  readonly failed: number;
}

/**
 * New evidence lands while the server answers single lookups at `rate`: the
 * server rebuilds in the background and swaps. Measures the stall, the
 * failed requests and the freshness. Uses the server's default poll interval.
 */
export async function runSwap(
  options: HttpOptions,
  token: string,
  rate: number,
  workDir: string,
  loadSeconds: number,
  serve: { readonly buildIdleSeconds?: number; readonly buildThreads?: number } = {},
): Promise<SwapResult> {
  const { buildIdleSeconds } = serve;
  const buildThreads = serve.buildThreads ?? defaultBuildThreads();
  // Every ingest compacted: this section measures the build and swap an ingest caused before the live delta.
  const serveArgs = ['--poll-ms', '1000', '--metrics-token', 'bench-metrics', '--build-threads', String(buildThreads), '--compact-vpas', '0'];
  if (buildIdleSeconds !== undefined) serveArgs.push('--build-idle-seconds', String(buildIdleSeconds));
  const server = await startService(options.dataDir, false, options.serverThreads, serveArgs);
  try {
    const target = targetFor('single', options.workload, portOf(server), false, token);
    // Every scrape restarts each thread's longest-stall figure (metrics.ts), polls included: each one
    // is folded into the window's maximum here, or a poll would throw away the stall it saw.
    let windowStallMs = 0;
    let lastSwapMs = -1;
    const metrics = async (): Promise<string> => {
      const response = await fetch(`${server.base}/metrics`, { headers: { authorization: 'Bearer bench-metrics' } });
      if (!response.ok) throw new Error(`/metrics answered ${response.status}: ${await response.text()}`);
      const text = await response.text();
      // Serving threads only (numbered): the main thread builds and loads, and answers no request.
      const servingMax = (name: string): number => {
        const values = [...text.matchAll(new RegExp(`^${name}\\{thread="\\d+"\\} (\\S+)$`, 'gm'))].map((m) => Number(m[1]) * 1000);
        return values.length === 0 ? -1 : Math.max(...values);
      };
      const stallMs = servingMax('upi_risk_event_loop_delay_max_seconds');
      if (stallMs < 0) throw new Error('the server reports no upi_risk_event_loop_delay_max_seconds of a serving thread');
      windowStallMs = Math.max(windowStallMs, stallMs);
      lastSwapMs = servingMax('upi_risk_snapshot_swap_seconds');
      return text;
    };
    /** Close the stall window and open the next: the serving threads' longest stall over it and the last swap's hold, ms (-1 when not reported). */
    const scrape = async (): Promise<{ stallMs: number; swapMs: number }> => {
      await metrics();
      const closed = { stallMs: windowStallMs, swapMs: lastSwapMs };
      windowStallMs = 0;
      return closed;
    };
    const readAheadS = await waitForGauge(metrics, 'upi_risk_build_carried_bytes', (value) => value > 0, 'the stored evidence was not read ahead');

    // Two ingests with no load first: the process's first rebuild (its build
    // threads start with no working memory) and a second. The swap under load
    // is then the third, as in a service that has been ingesting.
    /** Once the last build has finished (its file is written), how much of its snapshot was in reused memory, MiB. */
    const lastBuildReusedMiB = async (): Promise<number | null> => {
      await servedSnapshotWritten(server, options.dataDir);
      const match = /^upi_risk_last_build_reused_bytes (\S+)$/m.exec(await metrics());
      return match === null ? null : round3(Number(match[1]) / 2 ** 20);
    };
    /** Once the last build is done with what it replaced (and, kept for no time, with its threads), the server's resident memory, MiB. */
    const settledResidentMiB = async (): Promise<number> => {
      await waitForGauge(metrics, 'upi_risk_replaced_snapshots_held', (value) => value === 0, 'the replaced snapshot was not given back');
      if (buildIdleSeconds === 0) {
        await waitForGauge(metrics, 'upi_risk_build_threads', (value) => value === 0, 'the build threads did not exit');
        // The pool lets go of a thread when it asks it to stop; its memory goes as it exits, a moment later.
        await sleep(1000);
      }
      return residentMiB(server.child.pid!);
    };
    const first = await ingestAndWait(server, options.dataDir, workDir, token);
    const firstReusedMiB = await lastBuildReusedMiB();
    const firstResidentMiB = await settledResidentMiB();
    const next = await ingestAndWait(server, options.dataDir, workDir, token);
    const nextReusedMiB = await lastBuildReusedMiB();
    const nextResidentMiB = await settledResidentMiB();

    // The swap: from before the ingest until the replaced snapshot is given back.
    const loadRun = runOpenLoop(target, { rate, seconds: loadSeconds, warmupSeconds: 1, connections: options.connections });
    await sleep(2000);
    await scrape();
    const opened = performance.now();
    const underLoad = await ingestAndWait(server, options.dataDir, workDir, token);
    await waitForGauge(metrics, 'upi_risk_replaced_snapshots_held', (value) => value === 0, 'the replaced snapshot was not given back');
    await sleep(1000);
    const { stallMs, swapMs } = await scrape();
    const windowS = (performance.now() - opened) / 1000;
    const load = await loadRun;
    // The load must have run through the whole window, or its end would pass for calm.
    if (windowS + 3 > loadSeconds) throw new Error(`the window with the swap (${round3(windowS)} s) outlasted the load (${loadSeconds} s)`);

    // Baseline: the same load for as long, and the same watching, with no rebuild.
    const baselineRun = runOpenLoop(target, { rate, seconds: Math.ceil(windowS) + 2, warmupSeconds: 1, connections: options.connections });
    await sleep(1500);
    await scrape();
    await watchAsDuringTheSwap(server, options.dataDir, token, metrics, windowS * 1000);
    const baselineStallMs = (await scrape()).stallMs;
    await baselineRun;
    const underLoadReusedMiB = await lastBuildReusedMiB();
    const underLoadResidentMiB = await settledResidentMiB();

    return {
      stallMs: round3(stallMs),
      baselineStallMs: round3(baselineStallMs),
      windowS: round3(windowS),
      swapMs: round3(swapMs),
      readAheadS,
      freshnessS: underLoad.freshnessS,
      idleFreshnessS: [first.freshnessS, next.freshnessS],
      previousWriteS: [first.previousWriteS, next.previousWriteS, underLoad.previousWriteS],
      reusedMiB: [firstReusedMiB, nextReusedMiB, underLoadReusedMiB],
      residentMiB: [firstResidentMiB, nextResidentMiB, underLoadResidentMiB],
      ...(buildIdleSeconds === undefined ? {} : { buildIdleSeconds }),
      buildThreads,
      load,
      failed: load.errors + load.non2xx,
    };
  } finally {
    await server.stop();
  }
}

/**
 * What the bench itself does to the server over the window with the swap,
 * apart from the rebuild: start a CLI process (the ingest), ask for a
 * verdict every 20 ms (until it is served) and read /metrics every 100 ms
 * (until the replaced snapshot is let go). Each /metrics read has every
 * serving thread serialise its figures, a fraction of a millisecond that
 * requests queue behind; reading it ten times a second raised the p99 of
 * 20k single lookups a second from 0.70–1.03 to 1.52–1.62 ms here (by hand,
 * 2026-11-25). The window without a rebuild does all of it, both polls for
 * its whole length: at least as much watching as the window with the
 * swap gets, so what the rebuild adds is, if anything, understated.
 */
async function watchAsDuringTheSwap(server: RunningServer, dataDir: string, token: string, metrics: () => Promise<string>, ms: number): Promise<void> {
  const until = performance.now() + ms;
  const listed = await runCli(['keys', 'list', '--data-dir', dataDir]);
  if (listed.code !== 0) throw new Error(`keys list failed:\n${listed.stderr}`);
  const verdicts = (async () => {
    while (performance.now() < until) {
      await verdictStatus(server, token, 'nobody.here@ybl');
      await sleep(20);
    }
  })();
  while (performance.now() < until) {
    await metrics();
    await sleep(100);
  }
  await verdicts;
}

/** The status of the server's verdict for `upi` (a single lookup, as a client asks for it). */
async function verdictStatus(server: RunningServer, token: string, upi: string): Promise<string> {
  const answer = (await (await fetch(`${server.base}/v1/verify/upi?upi=${upi}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { status: string };
  return answer.status;
}

/** Poll the server's metrics until the unlabelled gauge `name` satisfies `done`; how long that took, s. */
export function waitForGauge(metrics: () => Promise<string>, name: string, done: (value: number) => boolean, failure: string): Promise<number> {
  const pattern = new RegExp(`^${name} (\\S+)$`, 'm');
  return pollUntil(
    async () => {
      const match = pattern.exec(await metrics());
      if (match === null) throw new Error(`the server reports no ${name}`);
      return done(Number(match[1]));
    },
    100,
    `${failure} within 600 s (${name})`,
  );
}

/** Check every `intervalMs` until `check()` is true, for at most `limitMs` (then fail with `failure`); how long that took, s. */
export async function pollUntil(check: () => Promise<boolean>, intervalMs: number, failure: string, limitMs = 600_000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    if (await check()) return round3((performance.now() - started) / 1000);
    await sleep(intervalMs);
  }
  throw new Error(failure);
}

/** A server to compare, from a `--server NAME=COMMAND` option. */
export interface NamedCommand {
  readonly name: string;
  readonly command: string;
}

/** A `--server NAME=COMMAND` option's name and command. */
export function namedCommand(text: string): NamedCommand {
  const at = text.indexOf('=');
  if (at < 1) throw new Error(`--server takes NAME=COMMAND, got ${text}`);
  return { name: text.slice(0, at), command: text.slice(at + 1) };
}

/**
 * Until a service on `port` (plain HTTP, asked from loopback) has read its
 * stored evidence for incremental builds (upi_risk_build_carried_bytes
 * above 0): the read-ahead runs beside the first requests otherwise. The
 * seconds it took.
 */
export function evidenceRead(name: string, port: number, limitMs = 600_000): Promise<number> {
  return pollUntil(
    async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const match = /^upi_risk_build_carried_bytes (\S+)$/m.exec(text);
      return match !== null && Number(match[1]) > 0;
    },
    200,
    `${name} did not read its stored evidence within ${limitMs / 1000} s`,
    limitMs,
  );
}

/**
 * Once the snapshot being served has its file (the build before has
 * finished), ingest evidence naming a VPA nobody has seen, and time until the
 * server answers FLAGGED for it, s.
 */
async function ingestAndWait(
  server: RunningServer,
  dataDir: string,
  workDir: string,
  token: string,
): Promise<{ freshnessS: number; previousWriteS: number }> {
  const previousWriteS = await servedSnapshotWritten(server, dataDir);
  const marker = `benchswap${Date.now()}`;
  const evidencePath = join(workDir, `${marker}.ndjson`);
  const upi = `${marker}@ybl`;
  await writeFile(
    evidencePath,
    `${JSON.stringify({ evidence_id: `${marker}-1`, upi, url: `https://t.me/${marker}`, source_category: 'telegram', captured_at: new Date().toISOString() })}\n`,
  );
  const ingested = await runCli(['ingest', '--data-dir', dataDir, evidencePath]);
  if (ingested.code !== 0) throw new Error(`ingest failed:\n${ingested.stderr}`);
  const freshnessS = await pollUntil(
    async () => (await verdictStatus(server, token, upi)) === 'FLAGGED',
    20,
    `the verdict for ${upi} was not served within 600 s of its ingest`,
  );
  return { freshnessS, previousWriteS };
}

/** Wait until the snapshot the server answers from has its file in the data directory; how long that took, s. */
export function servedSnapshotWritten(server: RunningServer, dataDir: string): Promise<number> {
  const dir = openDataDir(dataDir);
  return pollUntil(
    async () => {
      const ready = (await (await fetch(`${server.base}/readyz`)).json()) as { snapshot: string };
      const files = await listSnapshots(dir);
      return files.some((path) => basename(path) === `snapshot-${ready.snapshot}${SNAPSHOT_EXTENSION}`);
    },
    20,
    'the served snapshot was not written within 600 s',
  );
}

/** A reader of the server's /metrics, with the token it was started with (`--metrics-token`). */
export function metricsOf(server: RunningServer, token: string): () => Promise<string> {
  return async () => {
    const response = await fetch(`${server.base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    if (!response.ok) throw new Error(`/metrics answered ${response.status}: ${await response.text()}`);
    return response.text();
  };
}

/** The server's /readyz answer: the snapshot it serves and the VPAs of its delta. */
export async function readyOf(server: RunningServer): Promise<{ snapshot: string; delta_vpas: number }> {
  return (await (await fetch(`${server.base}/readyz`)).json()) as { snapshot: string; delta_vpas: number };
}

/**
 * A copy of a data directory made of hard links: instant, and safe for
 * every file written once, under a temporary name, and renamed into place
 * (evidence, snapshots, parsed state, keys), never changed. The journals
 * are appended to in place (the audit log, the corrections, watch and
 * dispute journals: `.ndjson` outside `evidence/`), so those are copied:
 * linked, a server on the copy would write into the original's.
 */
export async function cloneDataDir(from: string, to: string): Promise<string> {
  await cloneFolder(from, to, false);
  return to;
}

async function cloneFolder(from: string, to: string, evidence: boolean): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) await cloneFolder(source, target, evidence || entry.name === 'evidence');
    else if (!entry.isFile()) continue;
    // A lock names the process that holds it: the copy's server takes its own.
    else if (entry.name.endsWith('.lock')) continue;
    else if (entry.name.endsWith('.ndjson') && !evidence) await copyFile(source, target);
    else await link(source, target);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
