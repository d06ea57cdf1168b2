/**
 * `npm run bench`: the whole benchmark suite on one generated data set, with
 * every figure set against its target, written as markdown and JSON to
 * bench/results/bench-<size>.{md,json}.
 *
 *   npm run bench -- [--vpas 1000000] [--only engine,micro,http,swap,delta,fleet,corrections,memory,mirror] [--modes plain,tls]
 *                    [--seconds 10] [--rounds 3] [--connections 64] [--hit-ratio 0.1] [--server-threads N] [--quick]
 *                    [--swap-rate R] [--build-idle-seconds S] [--build-threads N] [--max-memory SIZE]
 *                    [--ingests 25] [--compactions 3] [--delta-vpas 100000] [--store URL]
 *                    [--corrections 20] [--bulk-clearances 10000] [--bulk-retractions 100000]
 *
 * Sections:
 * - engine: demo evidence generated, ingested and built (kept in
 *   var/bench/vpas-N, so later runs skip generation and ingest), snapshot
 *   size, load time, bytes per VPA, lookup medians (engine-scale.bench.ts);
 * - micro: the tinybench files, one per hot module (index at 1M and 10M keys,
 *   10M skipped with --quick);
 * - http: wrk peaks and open-loop latency for single, batch and cluster
 *   lookups against the server and against a bare uWebSockets.js ceiling;
 * - swap: evidence ingested under load: stall, failed requests, freshness;
 *   then the machine's own stalls, for comparison (machine-stall.bench.ts);
 * - delta: the live delta: the hot path with an empty and a large delta,
 *   freshness of small ingests idle and under load, compactions under load
 *   (failed requests, answers going backwards), the delta's memory
 *   (http/delta.ts);
 * - fleet: the fleet mode on PostgreSQL (--store, a schema of the run's own,
 *   dropped afterwards): ingest into the log, a builder's first publication,
 *   followers' start and memory, a follower's single-lookup peak against an
 *   embedded server's and the ceiling, freshness across two followers idle
 *   and under load (http/fleet.ts);
 * - corrections: retractions and clearances: single-lookup peaks of a server
 *   given many (in its live delta, then compacted) against itself before
 *   them, a server without them and the ceiling; how long each takes to be
 *   served, idle and under load, on one server and across two followers
 *   (--store, as the fleet section) (http/corrections.ts);
 * - memory: where an embedded server's memory goes with serve's default
 *   options, idle and over two compactions, against the memory targets
 *   (http/memory.ts).
 *
 * The server and the ceiling run on --server-threads threads, by default one
 * per core, as `serve` does.
 *
 * Load generator and server share this machine's cores, so absolute rates
 * depend on it; the ratios to the ceiling, measured the same way in the same
 * run, are what carries over.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, totalmem, tmpdir, availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { dataDir as openDataDir } from '../src/common/data-dir.js';
import { useServiceAllocatorSettings } from './support/allocator.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { listSnapshots, loadNewestValidSnapshot } from '../src/engine/snapshot-files.js';
import { MAX_BUILD_THREADS } from '../src/builder/snapshot-builder.js';
import { MAX_BUILD_IDLE_SECONDS } from '../src/service/snapshot-service.js';
import { redactStoreUrl } from '../src/store/postgres.js';
import { requireWrk } from './http/load-tools.js';
import { SCENARIOS, createBenchKey, runHttp, runSwap, type HttpOptions, type HttpResult, type LoadOptions, type Scenario } from './http/scenarios.js';
import { runDelta } from './http/delta.js';
import { requireStoreReachable, runFleet } from './http/fleet.js';
import { CORRECTION_PARTS, runCorrections, type CorrectionPart } from './http/corrections.js';
import { runMemory } from './http/memory.js';
import { runMirror } from './http/mirror.js';
import { writeWorkload, type Workload } from './http/workload.js';
import type { MachineStallResult } from './machine-stall.bench.js';
import { renderMarkdown, type MicroResult, type SuiteResult } from './results.js';
import { wholeNumberOption } from './support/report.js';
import { parseMemorySize } from '../src/common/memory-limit.js';

const SECTIONS = ['engine', 'micro', 'http', 'swap', 'delta', 'fleet', 'corrections', 'memory', 'mirror'] as const;
/** The fleet and corrections sections' database when neither --store nor $UPI_RISK_STORE names one. */
const DEFAULT_STORE = 'postgres://postgres@127.0.0.1:5432/test';
type Section = (typeof SECTIONS)[number];

const USAGE = `usage: npm run bench -- [options]

  --vpas N                data set size (default 1000000)
  --only LIST             sections, from engine,micro,http,swap,delta,fleet,corrections,memory,mirror
                          (default all)
  --modes LIST            HTTP modes, from plain,tls (default both)
  --scenarios LIST        the http section's scenarios, from single,batch,cluster,range (default all)
  --seconds S             length of each measurement (default 10)
  --rounds N              peak rounds of the service and the ceiling per scenario (default 3)
  --connections C         wrk connections (default 64)
  --hit-ratio R           share of known VPAs among lookups (default 0.1)
  --server-threads N      serving threads of the service and the ceiling (default one per core)
  --wrk-threads N         wrk threads (default 1)
  --swap-rate R           single lookups a second during the swap and the delta,
                          fleet and corrections sections' load (default half
                          the plain single-lookup peak of this run; else 10000
                          for the swap, half the delta section's own
                          empty-delta peak for it, half the follower's peak
                          for the fleet, and half the corrections section's
                          peak before corrections for it)
  --compaction-rate R     single lookups a second around the delta section's
                          compactions (default: its --swap-rate load)
  --build-idle-seconds S  the swap and memory sections' servers run with serve --build-idle-seconds S
  --build-threads N       the swap and memory sections' servers run with serve --build-threads N
  --max-memory SIZE       the memory section's server runs with serve --max-memory SIZE (default:
                          serve's, the control group's limit or none)
                          (default: serve's, every core but one)
  --ingests N             the delta and fleet sections' small ingests per series
                          (default 25, at least 20)
  --compactions N         the delta section's compactions under load (default 3)
  --delta-vpas N          VPAs of the delta section's large file (default 100000)
  --store URL             the fleet and corrections sections' PostgreSQL database,
                          where each makes a schema of its own and drops it
                          afterwards (default $UPI_RISK_STORE, else
                          ${DEFAULT_STORE})
  --corrections N         the corrections section's retractions, and as many
                          clearances, per series (default 20, at least 20)
  --bulk-clearances N     clearances the corrections section's lookup cost is
                          measured with (default 10000)
  --bulk-retractions N    retracted items it is measured with, one each of as
                          many VPAs (default 100000)
  --quick                 index micro bench at 1M keys only
  --out DIR               where the report goes (default bench/results)
  --help                  this text`;

const OPTIONS = {
  vpas: { type: 'string', default: '1000000' },
  only: { type: 'string', default: SECTIONS.join(',') },
  modes: { type: 'string', default: 'plain,tls' },
  scenarios: { type: 'string', default: SCENARIOS.join(',') },
  seconds: { type: 'string', default: '10' },
  // Peak runs of the service and the ceiling, one after the other, this many times (the median ratio is reported).
  rounds: { type: 'string', default: '3' },
  connections: { type: 'string', default: '64' },
  'hit-ratio': { type: 'string', default: '0.1' },
  // Like `serve --threads`: one serving thread per core.
  'server-threads': { type: 'string', default: String(availableParallelism()) },
  'wrk-threads': { type: 'string', default: '1' },
  // Default: half the plain single-lookup peak of this run, or 10,000 without the http section.
  'swap-rate': { type: 'string' },
  'compaction-rate': { type: 'string' },
  // Passed to the swap section's server (serve --build-idle-seconds); its default when absent.
  'build-idle-seconds': { type: 'string' },
  // Passed to the swap section's server (serve --build-threads); its default when absent.
  'build-threads': { type: 'string' },
  // Passed to the memory section's server (serve --max-memory); serve's default when absent.
  'max-memory': { type: 'string' },
  ingests: { type: 'string', default: '25' },
  compactions: { type: 'string', default: '3' },
  'delta-vpas': { type: 'string', default: '100000' },
  corrections: { type: 'string', default: '20' },
  'bulk-clearances': { type: 'string', default: '10000' },
  'bulk-retractions': { type: 'string', default: '100000' },
  'corrections-parts': { type: 'string', default: CORRECTION_PARTS.join(',') },
  store: { type: 'string', default: process.env.UPI_RISK_STORE ?? DEFAULT_STORE },
  quick: { type: 'boolean', default: false },
  out: { type: 'string', default: 'bench/results' },
  help: { type: 'boolean', default: false },
} as const;

// Asked for help, help is what comes, whatever else is on the line.
if (process.argv.slice(2).includes('--help')) {
  console.log(USAGE);
  process.exit(0);
}
const { values: args } = orUsage(() => parseArgs({ options: OPTIONS, strict: true }));

/** What `read` makes of the options, or its complaint and the usage on stderr, exit status 2. */
function orUsage<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
}

const { scenarios, vpas, seconds, rounds, connections, serverThreads, wrkThreads, buildIdleSeconds, buildThreads, maxMemory, swapRate, compactionRate, hitRatio, only, modes, ingests, compactions, deltaVpas, corrections, bulkClearances, bulkRetractions, correctionParts } = orUsage(() => {
  const vpas = wholeNumberOption('vpas', args.vpas, 1000);
  const seconds = wholeNumberOption('seconds', args.seconds, 1);
  const rounds = wholeNumberOption('rounds', args.rounds, 1);
  const connections = wholeNumberOption('connections', args.connections, 1);
  const serverThreads = wholeNumberOption('server-threads', args['server-threads'], 1);
  const wrkThreads = wholeNumberOption('wrk-threads', args['wrk-threads'], 1);
  const buildIdleSeconds = args['build-idle-seconds'] === undefined ? undefined : wholeNumberOption('build-idle-seconds', args['build-idle-seconds'], 0);
  const buildThreads = args['build-threads'] === undefined ? undefined : wholeNumberOption('build-threads', args['build-threads'], 1);
  // Checked here as serve checks it, so that a bad value fails before the data set is built.
  const maxMemory = args['max-memory'];
  if (maxMemory !== undefined && maxMemory !== 'none') parseMemorySize('max-memory', maxMemory);
  const swapRate = args['swap-rate'] === undefined ? undefined : wholeNumberOption('swap-rate', args['swap-rate'], 1);
  const compactionRate = args['compaction-rate'] === undefined ? null : wholeNumberOption('compaction-rate', args['compaction-rate'], 1);
  // The issue's own floor: freshness is a percentile over at least twenty ingests.
  const ingests = wholeNumberOption('ingests', args.ingests, 20);
  const compactions = wholeNumberOption('compactions', args.compactions, 1);
  const deltaVpas = wholeNumberOption('delta-vpas', args['delta-vpas'], 2);
  // The floor for a p99 of served corrections, as for ingests.
  const corrections = wholeNumberOption('corrections', args.corrections, 20);
  const bulkClearances = wholeNumberOption('bulk-clearances', args['bulk-clearances'], 1);
  const bulkRetractions = wholeNumberOption('bulk-retractions', args['bulk-retractions'], 1);
  // serve's own bound, checked here so that a bad value fails before the data set is built rather than at the swap.
  if (buildIdleSeconds !== undefined && buildIdleSeconds > MAX_BUILD_IDLE_SECONDS) {
    throw new Error(`--build-idle-seconds must be at most ${MAX_BUILD_IDLE_SECONDS}, got ${buildIdleSeconds}`);
  }
  if (buildThreads !== undefined && buildThreads > MAX_BUILD_THREADS) {
    throw new Error(`--build-threads must be at most ${MAX_BUILD_THREADS}, got ${buildThreads}`);
  }
  const correctionParts = new Set(args['corrections-parts'].split(',').map((s) => s.trim()));
  for (const part of correctionParts) if (!CORRECTION_PARTS.includes(part as CorrectionPart)) throw new Error(`--corrections-parts takes ${CORRECTION_PARTS.join(', ')}; got ${part}`);
  const hitRatio = Number(args['hit-ratio']);
  if (!(hitRatio >= 0 && hitRatio <= 1)) throw new Error(`--hit-ratio must be within [0, 1], got ${args['hit-ratio']}`);
  const only = new Set(args.only.split(',').map((s) => s.trim()));
  for (const s of only) if (!SECTIONS.includes(s as Section)) throw new Error(`--only takes ${SECTIONS.join(', ')}; got ${s}`);
  const modes = args.modes.split(',').map((s) => s.trim());
  for (const m of modes) if (m !== 'plain' && m !== 'tls') throw new Error(`--modes takes plain and tls; got ${m}`);
  const scenarios = args.scenarios.split(',').map((s) => s.trim()) as Scenario[];
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new Error(`--scenarios takes ${SCENARIOS.join(', ')}; got ${s}`);
  return { scenarios, vpas, seconds, rounds, connections, serverThreads, wrkThreads, buildIdleSeconds, buildThreads, maxMemory, swapRate, compactionRate, hitRatio, only, modes, ingests, compactions, deltaVpas, corrections, bulkClearances, bulkRetractions, correctionParts: correctionParts as Set<CorrectionPart> };
});

const DIST_BENCH = fileURLToPath(new URL('.', import.meta.url));
const root = join('var', 'bench', `vpas-${vpas}`);
const dataDirPath = join(root, 'data');
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Run one bench file as its own process (its own heap and JIT) and read back its JSON report. */
async function benchFile(file: string, fileArgs: readonly string[], nodeArgs: readonly string[] = []): Promise<Record<string, unknown>> {
  const scratch = await mkdtemp(join(tmpdir(), 'upi-risk-bench-'));
  const json = join(scratch, 'report.json');
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['--expose-gc', '--max-old-space-size=20000', ...nodeArgs, join(DIST_BENCH, file), ...fileArgs, '--json', json], {
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      child.once('error', reject);
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited with ${code}`))));
    });
    return JSON.parse(await readFile(json, 'utf8')) as Record<string, unknown>;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  useServiceAllocatorSettings();
  if (only.has('http') || only.has('swap') || only.has('delta') || only.has('fleet') || only.has('corrections')) requireWrk();
  if (only.has('fleet')) await requireStoreReachable(args.store, 'the fleet section');
  if (only.has('corrections')) await requireStoreReachable(args.store, 'the corrections section');
  const started = new Date();
  const suite: SuiteResult = {
    date: started.toISOString(),
    machine: { cores: availableParallelism(), cpu: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
    vpas,
    options: {
      seconds,
      rounds,
      connections,
      hitRatio,
      serverThreads,
      wrkThreads,
      modes,
      quick: args.quick,
      ...(only.has('delta') ? { ingests, compactions, deltaVpas } : only.has('fleet') ? { ingests } : {}),
      ...(only.has('corrections') ? { corrections, bulkClearances, bulkRetractions, correctionParts: [...correctionParts] } : {}),
    },
    engine: null,
    micro: [],
    http: [],
    swap: null,
    machineStall: null,
    delta: null,
    fleet: null,
    corrections: null,
    memory: null,
    mirror: null,
  };

  if (only.has('engine') || !(await hasSnapshot())) {
    log(`engine: ${vpas} VPAs in ${root}`);
    suite.engine = await benchFile('engine-scale.bench.js', ['--vpas', String(vpas), '--keep', root]);
  }

  if (only.has('micro')) {
    const micro: MicroResult[] = [];
    const indexSizes = args.quick ? [1_000_000] : [1_000_000, 10_000_000];
    for (const keys of indexSizes) {
      log(`micro: vpa-index at ${keys} keys`);
      micro.push({ file: `vpa-index (${keys / 1e6}M keys)`, report: await benchFile('vpa-index.bench.js', ['--keys', String(keys), '--no-reference']) });
    }
    // Every micro bench takes --vpas (microOptions); those that need no snapshot ignore it.
    for (const file of ['answer-headers', 'answer-json', 'batch-answer', 'batch-request', 'cluster-answer-cache', 'largest-clusters', 'single-answer', 'snapshot-view', 'snapshot-codec', 'vpa-hash', 'version-record']) {
      log(`micro: ${file}`);
      micro.push({ file, report: await benchFile(`${file}.bench.js`, ['--vpas', '1000000']) });
    }
    log('micro: watch-rescreen (1,000,000 watched VPAs)');
    micro.push({ file: 'watch-rescreen', report: await benchFile('watch-rescreen.bench.js', ['--vpas', '1000000', '--watched', '1000000']) });
    suite.micro = micro;
  }

  // The data set's snapshot, for request lists and evidence files; how every HTTP section loads servers.
  const view = only.has('http') || only.has('swap') || only.has('delta') || only.has('fleet') || only.has('corrections') ? await dataSetView() : null;
  const load: LoadOptions = { seconds, rounds, connections, wrkThreads, serverThreads, log };
  if (view !== null && (only.has('http') || only.has('swap') || only.has('delta'))) {
    const work = join(root, 'workload');
    await mkdir(work, { recursive: true });
    const workload = await writeWorkload(view, work, { hitRatio });
    logWorkload(workload);
    const token = await createBenchKey(['--data-dir', dataDirPath]);
    const base: Omit<HttpOptions, 'tls'> = { dataDir: dataDirPath, workload, ...load };
    const results: HttpResult[] = [];
    if (only.has('http')) {
      for (const mode of modes) {
        log(`http: ${mode === 'tls' ? 'TLS 1.3' : 'plain HTTP'}`);
        results.push(await runHttp({ ...base, tls: mode === 'tls', scenarios }, token));
      }
    }
    suite.http = results;
    if (only.has('swap')) {
      const plainSingle = results.find((r) => !r.tls)?.scenarios.find((s) => s.scenario === 'single');
      const rate = swapRate ?? (plainSingle === undefined ? 10_000 : Math.round(plainSingle.service.requestsPerSecond / 2));
      const buildS = Number((suite.engine as { buildS?: number } | null)?.buildS ?? vpas / 100_000);
      log(`swap: new evidence under ${rate} req/s`);
      // The load covers the rebuild (slower under it), the swap and the replaced snapshot's release, up to 15 s after.
      suite.swap = await runSwap({ ...base, tls: false }, token, rate, work, Math.ceil(buildS * 2 + 40), { buildIdleSeconds, buildThreads });
      log('swap: the machine\'s own stalls');
      suite.machineStall = (await benchFile('machine-stall.bench.js', [])) as unknown as MachineStallResult;
    }
    if (only.has('delta')) {
      const rate = sectionRate(results);
      log(`delta: the live delta, ${ingests} ingests a series, ${compactions} compactions, a large file of ${deltaVpas} VPAs`);
      suite.delta = await runDelta({
        ...load,
        dataDir: dataDirPath,
        workDir: join(root, 'delta-run'),
        view,
        token,
        hitRatio,
        ingests,
        compactions,
        largeVpas: deltaVpas,
        rate,
        compactionRate,
      });
    }
  }
  if (view !== null && only.has('fleet')) {
    log(`fleet: the fleet mode on ${redactStoreUrl(args.store)}, ${ingests} ingests a series`);
    suite.fleet = await runFleet({
      ...load,
      dataDir: dataDirPath,
      workDir: join(root, 'fleet-run'),
      view,
      storeUrl: args.store,
      hitRatio,
      ingests,
      ...(swapRate === undefined ? {} : { rate: swapRate }),
    });
  }

  if (view !== null && only.has('corrections')) {
    log(`corrections: ${corrections} of each kind a series, lookups with ${bulkClearances} clearances and ${bulkRetractions} retracted items`);
    suite.corrections = await runCorrections({
      ...load,
      dataDir: dataDirPath,
      workDir: join(root, 'corrections-run'),
      view,
      storeUrl: args.store,
      hitRatio,
      operations: corrections,
      bulkClearances,
      bulkRetractions,
      parts: correctionParts,
      rate: sectionRate(suite.http),
    });
  }

  if (only.has('memory')) {
    const serveOptions = [
      ...(buildIdleSeconds === undefined ? [] : ['--build-idle-seconds', String(buildIdleSeconds)]),
      ...(buildThreads === undefined ? [] : ['--build-threads', String(buildThreads)]),
      ...(maxMemory === undefined ? [] : ['--max-memory', maxMemory]),
    ];
    log(`memory: an embedded server with ${serveOptions.length === 0 ? 'the default options' : serveOptions.join(' ')}, idle and over two compactions`);
    suite.memory = await runMemory({ dataDir: dataDirPath, workDir: join(root, 'memory-run'), log, serveOptions });
  }

  if (only.has('mirror')) {
    log('mirror: an embedded server with a mirror key, and UpiRiskMirror syncing from it');
    suite.mirror = await runMirror({ dataDir: dataDirPath, workDir: join(root, 'mirror-run'), view: view ?? (await dataSetView()), log });
  }

  const size = vpas >= 1e6 ? `${vpas / 1e6}m` : `${vpas / 1e3}k`;
  await mkdir(args.out, { recursive: true });
  await writeFile(join(args.out, `bench-${size}.json`), `${JSON.stringify(suite, null, 2)}\n`);
  const markdown = renderMarkdown(suite);
  await writeFile(join(args.out, `bench-${size}.md`), markdown);
  process.stdout.write(markdown);
}

/** The delta and corrections sections' load: half the plain single-lookup peak of this run's http section, else --swap-rate, else null (each section's own). */
function sectionRate(http: readonly HttpResult[]): { perSecond: number; from: string } | null {
  const plainSingle = http.find((r) => !r.tls)?.scenarios.find((s) => s.scenario === 'single');
  if (plainSingle !== undefined) return { perSecond: Math.round(plainSingle.service.requestsPerSecond / 2), from: "half the plain single-lookup peak of this run's http section" };
  return swapRate === undefined ? null : { perSecond: swapRate, from: '--swap-rate' };
}

async function dataSetView(): Promise<SnapshotView> {
  const found = await loadNewestValidSnapshot(openDataDir(dataDirPath));
  if (found === null) throw new Error(`no snapshot in ${dataDirPath}; run with --only engine first`);
  return new SnapshotView(found.data);
}

async function hasSnapshot(): Promise<boolean> {
  return (await listSnapshots(openDataDir(dataDirPath)).catch(() => [])).length > 0;
}

function logWorkload(workload: Workload): void {
  log(`workload: single ${workload.singleBytes} B, batch ${workload.batchBytes} B, cluster ${workload.clusterBytes} B answers; ${workload.hitRatio * 100}% known VPAs`);
}

await main();
