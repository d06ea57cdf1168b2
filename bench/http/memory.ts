/**
 * The memory section of `npm run bench`: where an embedded server's memory
 * goes, with the options a user gets (`serve --data-dir`, every core, no
 * memory flag), on a hard-linked copy of the data set.
 *
 * 1. Idle: once the stored evidence has been read ahead for incremental
 *    builds (`upi_risk_build_carried_bytes` above 0), the snapshot's VPAs
 *    hashed (`upi_risk_hash_ranges_bytes` above 0), and what a build keeps
 *    for a while after it has gone (`upi_risk_build_threads`, the start-up
 *    read's thread included, and `upi_risk_build_reusable_bytes` back to
 *    0), and the resident memory steady over STEADY_POLLS readings a second
 *    apart (a thread that has exited may still be giving its memory back),
 *    or after IDLE_WAIT_MS.
 * 2. Two compactions, each after a small ingest merged into the live delta,
 *    each asked for by SIGUSR2: the resident memory every SAMPLE_MS from the
 *    signal until every serving thread serves the new snapshot (its peak),
 *    then every AFTER_STEP_MS for AFTER_MS (when it is back to the idle
 *    figure).
 *
 * From each compaction's signal until a range lookup is answered from
 * the new snapshot, range lookups of random prefixes, one every
 * RANGE_PROBE_MS, counted by answer: the 503s are the seconds in which
 * the new snapshot is served and its VPAs are being hashed.
 *
 * Each sample: resident memory (VmRSS, with its anonymous, file and shared
 * parts from /proc) and what the server reports of its parts (/metrics):
 * the snapshot, the carried build state, the delta, a replaced snapshot
 * kept for the next build, the snapshot's VPAs by hash, the history of
 * answers' index, the threads' JavaScript heaps, build threads alive. Set
 * against the targets: idle ≤ 2 × the snapshot file + 300 MB, peak ≤ 3 ×
 * the snapshot file + 500 MB, and back to idle within a minute.
 */
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { dataDir as openDataDir } from '../../src/common/data-dir.js';
import { SNAPSHOT_EXTENSION } from '../../src/engine/snapshot-files.js';
import { runCli, type RunningServer } from '../../test/server-process.js';
import { METRICS_TOKEN, gauge } from './delta.js';
import { cloneDataDir, createBenchKey, metricsOf, pollUntil, readyOf, sleep, startService } from './scenarios.js';

/** Longest wait for the idle state after start, ms. */
const IDLE_WAIT_MS = 180_000;
/** Idle: the resident memory within STEADY_SPREAD of itself over this many polls, a second apart. */
const STEADY_POLLS = 10;
const STEADY_SPREAD = 0.01;
/** How often the resident memory is read during a compaction, ms. */
const SAMPLE_MS = 200;
/** How long after a compaction the memory is followed, and how often, ms. */
const AFTER_MS = 60_000;
const AFTER_STEP_MS = 5_000;
/** How often a range lookup is asked during a compaction, ms. */
const RANGE_PROBE_MS = 50;
/** Items of the small ingest before each compaction. */
const INGEST_ITEMS = 10_000;
const MB = 1e6;
const MIB = 2 ** 20;

export interface MemoryOptions {
  readonly dataDir: string;
  readonly workDir: string;
  readonly log: (line: string) => void;
  /** `serve` options other than its defaults (`--build-idle-seconds`, `--build-threads`), for comparison runs. */
  readonly serveOptions?: readonly string[];
}

/** One reading of the server's memory, MiB. */
export interface MemorySample {
  /** Seconds from the start of the phase it belongs to. */
  readonly atS: number;
  readonly resident: number;
  readonly anonymous: number;
  readonly file: number;
  readonly shared: number;
  /** What /metrics reports; null when the scrape failed (a sample during a compaction may miss it). */
  readonly parts: MemoryParts | null;
}

/** The server's own account of its memory, MiB. */
export interface MemoryParts {
  readonly snapshot: number;
  readonly carried: number;
  readonly delta: number;
  readonly reusable: number;
  /** The served snapshot's VPAs by hash (range lookups, the mirror). */
  readonly ranges: number;
  /** The history of answers' index. */
  readonly history: number;
  /** Every thread's JavaScript heap in use, summed. */
  readonly heaps: number;
  readonly buildThreads: number;
  readonly replacedHeld: number;
}

export interface CompactionMemory {
  /** From the signal until every serving thread served the new snapshot, s. */
  readonly seconds: number;
  readonly peak: MemorySample;
  /** Every AFTER_STEP_MS for AFTER_MS after it. */
  readonly after: readonly MemorySample[];
  /** Seconds after the compaction until resident was back within 5 % of the idle figure (idleFor); null if not within AFTER_MS. */
  readonly backToIdleS: number | null;
  /** Range lookups asked from the signal until one was answered from the new snapshot, by answer; absent in reports from before they were asked. */
  readonly rangeAnswers?: RangeAnswers;
}

export interface RangeAnswers {
  readonly ok: number;
  /** 503: the served snapshot's VPAs not yet hashed. */
  readonly unavailable: number;
  /** Any other status, or no answer. */
  readonly other: number;
}

export interface MemoryResult {
  /** Serving threads: one per core, serve's default. */
  readonly serverThreads: number;
  /** serve's options other than its defaults; absent or empty: none. */
  readonly serveOptions?: readonly string[];
  /** The served snapshot's file, MB (10^6 bytes, as the targets). */
  readonly snapshotFileMB: number;
  /** How long after start the idle state came, s, and whether it came before IDLE_WAIT_MS. */
  readonly idleAfterS: number;
  readonly idleSettled: boolean;
  readonly idle: MemorySample;
  readonly compactions: readonly CompactionMemory[];
  /** The targets, MB: idle ≤ 2 × file + 300, peak ≤ 3 × file + 500. */
  readonly idleTargetMB: number;
  readonly peakTargetMB: number;
}

export async function runMemory(o: MemoryOptions): Promise<MemoryResult> {
  const { log } = o;
  // What a run before left, had it been stopped.
  await rm(o.workDir, { recursive: true, force: true });
  await mkdir(o.workDir, { recursive: true });
  const dataDir = await cloneDataDir(o.dataDir, join(o.workDir, 'data'));
  const key = await createBenchKey(['--data-dir', dataDir]);
  // The options a user gets (a serving thread per core, as serve's default), and what the bench needs to read the server: its metrics.
  const threads = availableParallelism();
  const serveOptions = o.serveOptions ?? [];
  const server = await startService(dataDir, false, threads, ['--metrics-token', METRICS_TOKEN, ...serveOptions], 600_000).catch((error: unknown) => {
    throw new Error(`memory: the server did not start: ${(error as Error).message}`);
  });
  try {
    const metrics = metricsOf(server, METRICS_TOKEN);
    const started = performance.now();
    const sample = async (from: number): Promise<MemorySample> => memorySample(server.child.pid!, metrics, from);

    log('memory: waiting for the read-ahead and for what builds keep to go');
    let idleSettled = true;
    const recent: number[] = [];
    await pollUntil(
      async () => {
        const text = await metrics();
        recent.push((await procStatus(server.child.pid!)).VmRSS);
        if (recent.length > STEADY_POLLS) recent.shift();
        return (
          gauge(text, 'upi_risk_build_carried_bytes') > 0 &&
          gauge(text, 'upi_risk_hash_ranges_bytes') > 0 &&
          gauge(text, 'upi_risk_build_threads') === 0 &&
          gauge(text, 'upi_risk_build_reusable_bytes') === 0 &&
          recent.length === STEADY_POLLS &&
          Math.max(...recent) - Math.min(...recent) <= Math.max(...recent) * STEADY_SPREAD
        );
      },
      1000,
      'idle',
      IDLE_WAIT_MS,
    ).catch(() => {
      idleSettled = false;
    });
    const idleAfterS = Math.round((performance.now() - started) / 1000);
    const idle = await sample(performance.now());
    const snapshotFileMB = await servedSnapshotFileMB(server, dataDir);
    log(`  idle after ${idleAfterS} s${idleSettled ? '' : ' (not settled)'}: ${describe(idle)}; snapshot file ${snapshotFileMB} MB`);

    const compactions: CompactionMemory[] = [];
    for (let c = 0; c < 2; c++) {
      await ingestSmallFile(server, o.workDir, dataDir, c);
      const before = (await readyOf(server)).snapshot;
      const signalled = performance.now();
      process.kill(server.child.pid!, 'SIGUSR2');
      let peak = await sample(signalled);
      let served = false;
      let next: string | null = null;
      const probing = probeRanges(server, key, () => next);
      while (!served) {
        await sleep(SAMPLE_MS);
        const now = await sample(signalled);
        if (now.resident > peak.resident) peak = now;
        const snapshot = (await readyOf(server)).snapshot;
        served = snapshot !== before;
        if (served) next = snapshot;
        if (performance.now() - signalled > 600_000) throw new Error('memory: a compaction was not served within 600 s');
      }
      const seconds = Math.round((performance.now() - signalled) / 100) / 10;
      const done = performance.now();
      const after: MemorySample[] = [];
      let backToIdleS: number | null = null;
      for (let waited = 0; waited <= AFTER_MS; waited += AFTER_STEP_MS) {
        const now = await sample(done);
        after.push(now);
        if (backToIdleS === null && now.resident <= idleFor(idle, now) * 1.05) backToIdleS = now.atS;
        if (waited < AFTER_MS) await sleep(AFTER_STEP_MS);
      }
      const rangeAnswers = await probing;
      compactions.push({ seconds, peak, after, backToIdleS, rangeAnswers });
      log(`  compaction ${c + 1}: ${seconds} s; peak ${describe(peak)}; a minute after: ${describe(after[after.length - 1]!)}; back to idle: ${backToIdleS === null ? 'not within a minute' : `${backToIdleS} s`}`);
      log(`  range lookups during it: ${rangeAnswers.ok} answered, ${rangeAnswers.unavailable} 503, ${rangeAnswers.other} other`);
    }
    return {
      serverThreads: threads,
      serveOptions,
      snapshotFileMB,
      idleAfterS,
      idleSettled,
      idle,
      compactions,
      idleTargetMB: Math.round(2 * snapshotFileMB + 300),
      peakTargetMB: Math.round(3 * snapshotFileMB + 500),
    };
  } finally {
    await server.stop();
    await rm(o.workDir, { recursive: true, force: true });
  }
}

/**
 * Ask a range lookup of a random prefix every RANGE_PROBE_MS, and count the
 * answers, until one is answered from the snapshot `next` names once it is
 * served (or a minute after that).
 */
async function probeRanges(server: RunningServer, key: string, next: () => string | null): Promise<RangeAnswers> {
  const counts = { ok: 0, unavailable: 0, other: 0 };
  let servedAt: number | null = null;
  for (;;) {
    const prefix = Math.floor(Math.random() * 2 ** 20)
      .toString(16)
      .padStart(5, '0');
    const answer = await fetch(`${server.base}/v1/verify/upi/range/${prefix}`, { headers: { authorization: `Bearer ${key}` } }).then(
      async (response) => {
        await response.arrayBuffer();
        return { status: response.status, version: response.headers.get('x-data-version') ?? '' };
      },
      () => ({ status: 0, version: '' }),
    );
    if (answer.status === 200) counts.ok++;
    else if (answer.status === 503) counts.unavailable++;
    else counts.other++;
    const snapshot = next();
    if (snapshot !== null) {
      servedAt ??= performance.now();
      if ((answer.status === 200 && answer.version.split('+')[0] === snapshot) || performance.now() - servedAt > 60_000) return counts;
    }
    await sleep(RANGE_PROBE_MS);
  }
}

/**
 * The idle figure for the data `now` holds: the idle resident memory plus
 * what the snapshot, the carried state and the delta grew by since (each
 * ingest adds to them), MiB.
 */
function idleFor(idle: MemorySample, now: MemorySample): number {
  if (idle.parts === null || now.parts === null) return idle.resident;
  const held = (p: MemoryParts) => p.snapshot + p.carried + p.delta;
  return idle.resident + Math.max(0, held(now.parts) - held(idle.parts));
}

/** Resident memory of `pid` and its parts, from /proc, and the server's own account, from /metrics. */
async function memorySample(pid: number, metrics: () => Promise<string>, from: number): Promise<MemorySample> {
  const [status, text] = await Promise.all([procStatus(pid), metrics().catch(() => null)]);
  return {
    atS: Math.round((performance.now() - from) / 100) / 10,
    resident: status.VmRSS,
    anonymous: status.RssAnon,
    file: status.RssFile,
    shared: status.RssShmem,
    parts: text === null ? null : partsOf(text),
  };
}

/** VmRSS and its parts of /proc/PID/status, MiB. */
async function procStatus(pid: number): Promise<Record<'VmRSS' | 'RssAnon' | 'RssFile' | 'RssShmem', number>> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Math.round(Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? -1) / 1024);
  return { VmRSS: kib('VmRSS'), RssAnon: kib('RssAnon'), RssFile: kib('RssFile'), RssShmem: kib('RssShmem') };
}

function partsOf(text: string): MemoryParts {
  const mib = (name: string) => Math.round(gauge(text, name) / MIB);
  let heaps = 0;
  for (const match of text.matchAll(/^upi_risk_heap_used_bytes\{[^}]*\} (\S+)$/gm)) heaps += Number(match[1]);
  return {
    snapshot: mib('upi_risk_snapshot_bytes'),
    carried: mib('upi_risk_build_carried_bytes'),
    delta: mib('upi_risk_delta_bytes'),
    reusable: mib('upi_risk_build_reusable_bytes'),
    ranges: mib('upi_risk_hash_ranges_bytes'),
    history: mib('upi_risk_answer_history_index_bytes'),
    heaps: Math.round(heaps / MIB),
    buildThreads: gauge(text, 'upi_risk_build_threads'),
    replacedHeld: gauge(text, 'upi_risk_replaced_snapshots_held'),
  };
}

/** The size of the file of the snapshot the server serves, MB. */
async function servedSnapshotFileMB(server: RunningServer, dataDir: string): Promise<number> {
  const { snapshot } = await readyOf(server);
  const path = join(openDataDir(dataDir).snapshots, `snapshot-${snapshot}${SNAPSHOT_EXTENSION}`);
  return Math.round((await stat(path)).size / MB);
}

/** Ingest INGEST_ITEMS items of new VPAs and wait until the delta serves them. */
async function ingestSmallFile(server: RunningServer, workDir: string, dataDir: string, round: number): Promise<void> {
  const marker = `benchmemory${round}t${Date.now()}`;
  const path = join(workDir, `${marker}.ndjson`);
  const capturedAt = new Date().toISOString();
  const lines: string[] = [];
  for (let i = 0; i < INGEST_ITEMS; i++) {
    lines.push(JSON.stringify({ evidence_id: `${marker}-${i}`, upi: `${marker}x${i}@ybl`, url: `https://t.me/${marker}g${i % 100}`, source_category: 'telegram', captured_at: capturedAt }));
  }
  await writeFile(path, `${lines.join('\n')}\n`);
  const ingested = await runCli(['ingest', '--data-dir', dataDir, path]);
  if (ingested.code !== 0) throw new Error(`memory: ingest failed:\n${ingested.stderr}`);
  await pollUntil(async () => (await readyOf(server)).delta_vpas >= INGEST_ITEMS, 100, 'memory: the ingest was not served within 600 s');
}

function describe(s: MemorySample): string {
  const parts = s.parts === null ? '' : ` (snapshot ${s.parts.snapshot}, carried ${s.parts.carried}, delta ${s.parts.delta}, reusable ${s.parts.reusable}, ranges ${s.parts.ranges}, history ${s.parts.history}, heaps ${s.parts.heaps}, build threads ${s.parts.buildThreads})`;
  return `${s.resident} MiB resident${parts}`;
}
