/**
 * The mirror section of `npm run bench`: an embedded server with a mirror
 * signing key and serve's defaults, on a hard-linked copy of the data set,
 * and `UpiRiskMirror` of `@upi-risk/client` in this process.
 *
 * 1. From the server's start to its first mirror version; the sizes of the
 *    full file in each encoding; the server's resident memory then.
 * 2. The client's first sync (the full file): its time, and the memory the
 *    state holds (array buffers and heap, after a collection).
 * 3. Agreement: every flagged VPA of the snapshot and as many never named,
 *    checked by the mirror against the snapshot's own answers (the data set
 *    has no delta, so the mirror's version serves the snapshot).
 * 4. `check` per lookup, against the hash alone (the ceiling a check cannot
 *    go below).
 * 5. Lag: LAG_INGESTS ingests of LAG_VPAS new VPAs each, LAG_SPACING_MS
 *    apart (more or less a third), while the client syncs every second:
 *    from each ingest's acknowledgement until the mirror holds its VPAs.
 *    The diffs of the versions made meanwhile are a minute's diffs at that
 *    rate.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { UpiRiskMirror } from '@upi-risk/client';
import { confidenceBand } from '../../src/api/advice.js';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import { vpaHashWords } from '../../src/vpa/vpa-hash.js';
import { mulberry32 } from '../../test/fixtures/random.js';
import { runCli, type RunningServer } from '../../test/server-process.js';
import { cloneDataDir, createBenchKey, pollUntil, residentMiB, sleep, startService } from './scenarios.js';
import { medianBy, percentile } from '../support/report.js';

const median = (values: readonly number[]): number => medianBy(values, (v) => v);

const LAG_INGESTS = 12;
const LAG_VPAS = 100;
const LAG_SPACING_MS = 15_000;
const CHECKS = 2_000_000;
const UNFLAGGED = 100_000;

export interface MirrorOptions {
  readonly dataDir: string;
  readonly workDir: string;
  readonly view: SnapshotView;
  readonly log: (line: string) => void;
}

export interface MirrorResult {
  readonly vpas: number;
  /** From the server's start (listening) to its first mirror version, s. */
  readonly firstVersionS: number;
  readonly fullBytes: { readonly identity: number; readonly gzip: number; readonly br: number };
  readonly serverRssMiB: number;
  readonly firstSync: { readonly seconds: number; readonly clientMemoryMiB: number };
  readonly agreement: { readonly flagged: number; readonly unflagged: number; readonly mismatches: number };
  /** ns per check, and per hash alone, medians of five runs of CHECKS lookups (2% of them flagged). */
  readonly checkNs: number;
  readonly hashNs: number;
  readonly lag: { readonly samples: readonly number[]; readonly p50S: number; readonly p99S: number; readonly maxS: number };
  /** From each ingest to the `created_at` of the first version holding it: the service's part of the lag, without the client's sync. */
  readonly serviceLag: { readonly samples: readonly number[]; readonly p50S: number; readonly p99S: number; readonly maxS: number };
  /** Bytes of each diff from the version before, made during the lag phase (LAG_VPAS new VPAs every LAG_SPACING_MS). */
  readonly minuteDiffBytes: readonly number[];
}

export async function runMirror(options: MirrorOptions): Promise<MirrorResult> {
  const { log, view } = options;
  // A run before this one left its copy: it starts afresh.
  await rm(options.workDir, { recursive: true, force: true });
  const dir = await cloneDataDir(options.dataDir, join(options.workDir, 'data'));
  const created = await runCli(['mirror-key', 'create', '--data-dir', dir, '--replace']);
  if (created.code !== 0) throw new Error(`mirror-key create failed:\n${created.stderr}`);
  const publicKey = created.stdout.trim().split('\n').at(-1)!;
  const token = await createBenchKey(['--data-dir', dir], ['--scopes', 'screen,ingest']);
  const server: RunningServer = await startService(dir, false, 2);
  try {
    const headers = { authorization: `Bearer ${token}` };
    const firstVersionS = await pollUntil(async () => (await fetch(`${server.base}/v1/mirror/manifest`, { headers })).status === 200, 200, 'no mirror version', 600_000);
    const manifest = (await (await fetch(`${server.base}/v1/mirror/manifest`, { headers })).json()) as { full: { url: string } };
    const sizeOf = async (encoding: string) => (await (await fetch(`${server.base}${manifest.full.url}`, { headers: { ...headers, 'accept-encoding': encoding } })).arrayBuffer()).byteLength;
    const fullBytes = { identity: await sizeOf('identity'), gzip: Number((await fetch(`${server.base}${manifest.full.url}`, { method: 'GET', headers: { ...headers, 'accept-encoding': 'gzip' } })).headers.get('content-length')), br: Number((await fetch(`${server.base}${manifest.full.url}`, { headers: { ...headers, 'accept-encoding': 'br' } })).headers.get('content-length')) };
    const serverRssMiB = await residentMiB(server.child.pid!);
    log(`mirror: first version ${firstVersionS} s after listening; full file ${fullBytes.identity} B (gzip ${fullBytes.gzip}, br ${fullBytes.br}); server ${serverRssMiB} MiB`);

    const mirror = new UpiRiskMirror({ baseUrl: server.base, apiKey: token, publicKey });
    global.gc?.();
    const before = memory();
    const syncStarted = performance.now();
    await mirror.sync();
    const firstSync = { seconds: (performance.now() - syncStarted) / 1000, clientMemoryMiB: 0 };
    global.gc?.();
    firstSync.clientMemoryMiB = Math.round(((memory() - before) / 2 ** 20) * 10) / 10;
    log(`mirror: first sync ${firstSync.seconds.toFixed(2)} s, ${firstSync.clientMemoryMiB} MiB held by the client`);

    const agreement = agree(mirror, view);
    log(`mirror: ${agreement.flagged} flagged and ${agreement.unflagged} unflagged VPAs checked, ${agreement.mismatches} mismatches`);
    const { checkNs, hashNs } = checkTimes(mirror, view);
    log(`mirror: check ${checkNs} ns, of which the hash ${hashNs} ns`);

    const { samples, serviceSamples, minuteDiffBytes } = await lagPhase(server, mirror, token, dir, options.workDir, log);
    const lag = lagFigures(samples);
    const serviceLag = lagFigures(serviceSamples);
    log(`mirror: lag p50 ${lag.p50S.toFixed(1)} s, p99 ${lag.p99S.toFixed(1)} s (to the version's created_at: p50 ${serviceLag.p50S.toFixed(1)} s, p99 ${serviceLag.p99S.toFixed(1)} s); diffs ${minuteDiffBytes.join(', ')} B`);
    return { vpas: view.meta.vpaCount, firstVersionS, fullBytes, serverRssMiB, firstSync, agreement, checkNs, hashNs, lag, serviceLag, minuteDiffBytes };
  } finally {
    await server.stop();
  }
}

function memory(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

function agree(mirror: UpiRiskMirror, view: SnapshotView): MirrorResult['agreement'] {
  let mismatches = 0;
  const count = view.meta.vpaCount;
  for (let id = 0; id < count; id++) {
    const key = view.keyOf(id);
    const verdict = view.flaggedVerdict(id, key);
    const found = mirror.check(key);
    if (!found.match || found.risk_category !== verdict.risk_category || found.confidence_band !== confidenceBand('FLAGGED', verdict.confidence)) mismatches++;
  }
  for (let i = 0; i < UNFLAGGED; i++) if (mirror.check(`never.named.${i}@ybl`).match) mismatches++;
  return { flagged: count, unflagged: UNFLAGGED, mismatches };
}

function checkTimes(mirror: UpiRiskMirror, view: SnapshotView): { checkNs: number; hashNs: number } {
  const next = mulberry32(11);
  const asked = Array.from({ length: 100_000 }, (_, i) => (next() < 0.02 ? view.keyOf(Math.floor(next() * view.meta.vpaCount)) : `${6_000_000_000 + i}@ybl`));
  const words = new Uint32Array(8);
  let sink = 0;
  const time = (one: (upi: string) => number): number => {
    const runs: number[] = [];
    for (let run = 0; run < 5; run++) {
      const started = performance.now();
      for (let i = 0; i < CHECKS; i++) sink += one(asked[i % asked.length]!);
      runs.push(((performance.now() - started) * 1e6) / CHECKS);
    }
    return Math.round(median(runs));
  };
  const hashNs = time((upi) => vpaHashWords(upi, words)[0]! & 1);
  const checkNs = time((upi) => (mirror.check(upi).match ? 1 : 0));
  if (sink === -1) throw new Error('unreachable');
  return { checkNs, hashNs };
}

function lagFigures(samples: readonly number[]): MirrorResult['lag'] {
  const sorted = [...samples].sort((a, b) => a - b);
  return { samples, p50S: median(sorted), p99S: percentile(sorted, 0.99), maxS: sorted.at(-1)! };
}

async function lagPhase(
  server: RunningServer,
  mirror: UpiRiskMirror,
  token: string,
  dir: string,
  workDir: string,
  log: (line: string) => void,
): Promise<{ samples: number[]; serviceSamples: number[]; minuteDiffBytes: number[] }> {
  const next = mulberry32(5);
  const samples: number[] = [];
  const serviceSamples: number[] = [];
  /** Each pending VPA's ingest: when it was acknowledged, on the monotonic clock and the wall clock. */
  const pending = new Map<string, { readonly at: number; readonly wallMs: number }>();
  const minuteDiffBytes: number[] = [];
  let seenVersion = mirror.version ?? 0;
  let syncing = true;
  let stopped = false;
  const syncLoop = (async () => {
    while (!stopped && (syncing || pending.size > 0)) {
      try {
        await mirror.sync();
      } catch (error) {
        log(`mirror: a sync failed: ${(error as Error).message}`);
      }
      if ((mirror.version ?? 0) > seenVersion) {
        seenVersion = mirror.version!;
        const manifest = (await (await fetch(`${server.base}/v1/mirror/manifest`, { headers: { authorization: `Bearer ${token}` } })).json()) as { diffs: { from: number; bytes: number }[]; version: number };
        const fromBefore = manifest.diffs.find((d) => d.from === manifest.version - 1);
        if (fromBefore !== undefined) minuteDiffBytes.push(fromBefore.bytes);
      }
      for (const [upi, ingest] of pending) {
        if (mirror.check(upi).match) {
          samples.push((performance.now() - ingest.at) / 1000);
          // The version's created_at, from its age on the wall clock the client reads.
          serviceSamples.push((Date.now() - mirror.age! * 1000 - ingest.wallMs) / 1000);
          pending.delete(upi);
        }
      }
      await sleep(1000);
    }
  })();
  for (let i = 0; i < LAG_INGESTS; i++) {
    await sleep(LAG_SPACING_MS * (0.67 + next() * 0.66));
    const upis = Array.from({ length: LAG_VPAS }, (_, k) => `lag.${i}.${k}.${Math.floor(next() * 1e9)}@ybl`);
    const file = join(workDir, `lag-${i}.ndjson`);
    await writeFile(
      file,
      upis.map((upi, k) => JSON.stringify({ evidence_id: `lag-${i}-${k}`, upi, url: `https://lag.example/${i}`, source_category: 'scam', risk_category: 'scam', captured_at: new Date().toISOString(), screenshot_available: false })).join('\n') + '\n',
    );
    const ingested = await runCli(['ingest', '--data-dir', dir, file]);
    if (ingested.code !== 0) throw new Error(`ingest failed:\n${ingested.stderr}`);
    // One VPA of the file stands for it: the mirror takes a file's VPAs in one version.
    pending.set(upis[0]!, { at: performance.now(), wallMs: Date.now() });
  }
  syncing = false;
  // VPAs not in the mirror three minutes after their ingest are left out of the samples, and said so.
  await Promise.race([syncLoop, sleep(180_000)]);
  stopped = true;
  await syncLoop;
  if (pending.size > 0) log(`mirror: ${pending.size} ingests not in the mirror after three minutes`);
  return { samples, serviceSamples, minuteDiffBytes };
}
