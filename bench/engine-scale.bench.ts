/**
 * The engine end to end at scale: generate N flagged VPAs of demo evidence,
 * ingest, build on the pool, load the snapshot off-thread, then measure
 * memory per VPA and lookup latency through SnapshotView with fresh query
 * strings.
 *
 *   node --expose-gc --max-old-space-size=20000 dist/bench/engine-scale.bench.js [--vpas 1000000] [--threads N] [--keep DIR] [--json FILE]
 *
 * With --keep DIR the data directory is kept, and a later run with the same DIR
 * skips generation and ingest and measures the build and load again.
 *
 * The rebuild figures are for a build after a small ingest, first by the
 * builder that made the full build (it reads only the new file), four times
 * in a row: in new memory, then in the memory of the snapshot two builds
 * back (as a server lays out a rebuild in a replaced snapshot's memory),
 * again in new memory and again in reused memory, each with the minor page
 * faults of the process while it ran; then by one that keeps nothing
 * between builds (it reads every file from the parse cache), as
 * `serve --full-rebuilds` does.
 *
 * Targets at 10M VPAs (bench/README.md, "Results against the targets"): lookup median ≤ 300 ns (each
 * lookup timed on its own; runs of 100 back-to-back are reported too), index +
 * verdict fields ≤ 100 bytes per VPA, load ≤ 3 s, build ≤ 120 s.
 */
import { mkdtemp, rename, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir, cpus, totalmem, availableParallelism } from 'node:os';
import { join, dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { dataDir } from '../src/common/data-dir.js';
import { writeDemoData } from '../src/demo/generator.js';
import { ingestFile, listEvidenceFiles } from '../src/evidence/store.js';
import { SnapshotBuilder, type BuildReport } from '../src/builder/snapshot-builder.js';
import { parseCacheDir } from '../src/builder/parse-cache.js';
import { loadSnapshotOffThread } from '../src/engine/snapshot-loader.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { VpaIndex } from '../src/engine/vpa-index.js';
import { INDEX_FIELDS, type SnapshotData } from '../src/engine/snapshot-data.js';
import { NOT_FOUND } from '../src/common/brand.js';
import { Bench } from 'tinybench';
import { taskRows } from './support/report.js';

const { values: args } = parseArgs({
  options: {
    vpas: { type: 'string', default: '1000000' },
    threads: { type: 'string' },
    keep: { type: 'string' },
    json: { type: 'string' },
    queries: { type: 'string', default: '1000000' },
  },
  strict: true,
});
const vpas = Number(args.vpas.replaceAll('_', ''));
const queryCount = Number(args.queries.replaceAll('_', ''));
const threads = args.threads === undefined ? availableParallelism() : Number(args.threads);
const gc = (globalThis as { gc?: () => void }).gc;

const root = args.keep ?? (await mkdtemp(join(tmpdir(), 'upi-risk-scale-')));
const dir = dataDir(join(root, 'data'));
const results: Record<string, number | string> = { vpas, threads };
try {
  let t = performance.now();
  // A kept directory from an earlier run is reused: generation and ingest are measured once.
  if ((await listEvidenceFiles(dir)).length === 0) {
    const evidencePath = join(root, 'evidence.ndjson');
    const summary = await writeDemoData({ vpas, seed: 42 }, evidencePath);
    results.generateS = seconds(t);
    results.evidenceLines = summary.lines;
    results.evidenceMiB = round(summary.bytes / 2 ** 20, 1);
    t = performance.now();
    const ingested = await ingestFile(dir, evidencePath);
    if (!ingested.accepted) throw new Error('demo evidence refused');
    results.ingestS = seconds(t);
    await rm(evidencePath);
  }

  const builder = new SnapshotBuilder({ threads });
  // A full build from JSON: the parse cache of an earlier run is dropped first (this build refills it).
  await rm(parseCacheDir(dir.state), { recursive: true, force: true });
  let built: SnapshotData | undefined;
  t = performance.now();
  const report = await builder.build({ dataDir: dir, onAssembled: (data) => (built = data) });
  results.buildS = seconds(t);
  recordPhases('build', report);
  results.carriedMiB = round(report.carriedBytes / 2 ** 20, 1);
  // Out of the snapshot folder while the rebuilds below write theirs: only the newest few are kept there.
  const aside = join(root, 'full-build.upisnap');
  await rename(report.path, aside);
  // What a server does after an ingest: a small file of new evidence, then a
  // build that reads only it. Four in a row, alternating: in new memory, and
  // in the memory of the snapshot two builds back, as a server reuses a
  // replaced snapshot's once no serving thread reads it (nothing reads
  // these: the bench holds them only to hand them on).
  const smallFiles: string[] = [];
  const rebuilt: (SnapshotData | undefined)[] = [built];
  const rebuildAfterSmallIngest = async (label: string, reuse: SnapshotData | undefined) => {
    const smallPath = join(root, 'small.ndjson');
    const small = await writeDemoData({ vpas: 1000, seed: (Date.now() + smallFiles.length) % 1_000_000 }, smallPath);
    const smallIngest = await ingestFile(dir, smallPath);
    await rm(smallPath);
    if (!smallIngest.accepted || smallIngest.storedAs === null) throw new Error('small demo evidence refused');
    smallFiles.push(join(dir.evidence, smallIngest.storedAs));
    results.smallIngestLines = small.lines;
    if (reuse !== undefined) builder.reuseMemoryOf(reuse);
    const faultsBefore = process.resourceUsage().minorPageFault;
    let assembled: SnapshotData | undefined;
    t = performance.now();
    const rebuild = await builder.build({ dataDir: dir, onAssembled: (data) => (assembled = data) });
    results[`${label}S`] = seconds(t);
    recordPhases(label, rebuild);
    results[`${label}MinorFaults`] = process.resourceUsage().minorPageFault - faultsBefore;
    results[`${label}ReusedMiB`] = round(rebuild.reusedBytes / 2 ** 20, 1);
    rebuilt.push(assembled);
    return rebuild;
  };
  const rebuild = await rebuildAfterSmallIngest('rebuild', undefined);
  results.rebuildReusedChunks = `${rebuild.reusedChunks} of ${rebuild.chunks}`;
  const rebuildPaths = [rebuild.path];
  for (const label of ['rebuildInReusedMemory', 'rebuildAgain', 'rebuildInReusedMemoryAgain']) {
    const reuse = label.includes('Reused') ? rebuilt[rebuilt.length - 2] : undefined;
    rebuildPaths.push((await rebuildAfterSmallIngest(label, reuse)).path);
  }
  rebuilt.length = 0;
  built = undefined;
  await builder.close();
  // The same build by a builder that keeps nothing (serve --full-rebuilds): every file again, from the parse cache.
  const reading = new SnapshotBuilder({ threads, incremental: false });
  t = performance.now();
  const full = await reading.build({ dataDir: dir });
  results.fullRebuildS = seconds(t);
  recordPhases('fullRebuild', full);
  results.fullRebuildCachedChunks = `${full.cachedChunks} of ${full.chunks}`;
  await reading.close();
  // Leave the directory as it was: the small files go, and so do the
  // snapshots built from them, or a server started on the directory (the HTTP
  // sections) would find evidence missing and rebuild while being measured.
  // (A snapshot written since may already have made way for a newer one.)
  for (const path of [...smallFiles, ...rebuildPaths, full.path]) await rm(path, { force: true });
  await rename(aside, report.path);
  results.snapshotMiB = round((await stat(report.path)).size / 2 ** 20, 1);

  gc?.();
  const rssBefore = process.memoryUsage().rss;
  t = performance.now();
  const data = await loadSnapshotOffThread(report.path);
  results.loadS = seconds(t);
  const view = new SnapshotView(data);
  gc?.();
  results.rssGrowthMiB = round((process.memoryUsage().rss - rssBefore) / 2 ** 20, 1);
  const n = data.meta.vpaCount;
  results.flaggedVpas = n;
  results.clusters = data.meta.clusterCount;
  results.urls = data.meta.urlCount;
  const index = bytes(data, INDEX_FIELDS);
  const fields = bytes(data, ['firstSeen', 'confidence', 'riskCategory', 'evidenceCount', 'vpaCluster', 'sourceOffsets', 'sourceUrl', 'sourceCapturedAt', 'sourceFlags']);
  const all = bytes(data, Object.keys(data).filter((k) => k !== 'meta') as (keyof SnapshotData)[]);
  results.indexBytesPerVpa = round(index / n, 1);
  results.verdictFieldBytesPerVpa = round(fields / n, 1);
  results.indexPlusFieldsBytesPerVpa = round((index + fields) / n, 1);
  results.wholeSnapshotBytesPerVpa = round(all / n, 1);

  // Fresh query strings: half hits (upper-cased copies of stored keys), half misses of the same shape.
  const hits: string[] = [];
  const misses: string[] = [];
  const keys = new VpaIndex(data, data.maxKeyLength);
  for (let i = 0; i < queryCount; i++) {
    const key = keys.keyOf((i * 2654435761) % n);
    hits.push(Buffer.from(key.toUpperCase(), 'latin1').toString('latin1'));
    misses.push(Buffer.from(`x${key}`, 'latin1').toString('latin1'));
  }
  const single = singleLookupMediansNs(view, hits, misses);
  results.lookupHitMedianNs = single.hit;
  results.lookupMissMedianNs = single.miss;
  results.lookupHitRunMedianNs = medianNs(view, hits, true);
  results.lookupMissRunMedianNs = medianNs(view, misses, false);
  results.verdictHitMedianNs = medianVerdictNs(view, hits);
} finally {
  if (args.keep === undefined) await rm(root, { recursive: true, force: true });
}

results.machine = `${cpus().length} cores, ${round(totalmem() / 2 ** 30, 0)} GiB, Node ${process.version}`;
results.date = new Date().toISOString();
console.table(Object.entries(results).map(([metric, value]) => ({ metric, value })));
if (args.json !== undefined) {
  await mkdir(dirname(args.json), { recursive: true });
  await writeFile(args.json, JSON.stringify(results, null, 2) + '\n');
}

/**
 * Medians of single lookups, each timed on its own (tinybench, with the
 * timer's own cost subtracted): the latency of one lookup, what a request
 * waits for.
 */
function singleLookupMediansNs(view: SnapshotView, hits: readonly string[], misses: readonly string[]): { hit: number; miss: number } {
  const bench = new Bench({ time: 2000, warmupTime: 300, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  let found = 0;
  let calls = 0;
  let nextHit = 0;
  let nextMiss = 0;
  bench.add('hit', () => {
    if (view.lookup(hits[nextHit]!) !== NOT_FOUND) found++;
    calls++;
    nextHit = nextHit + 1 === hits.length ? 0 : nextHit + 1;
  });
  bench.add('miss', () => {
    if (view.lookup(misses[nextMiss]!) !== NOT_FOUND) found -= 1e9;
    nextMiss = nextMiss + 1 === misses.length ? 0 : nextMiss + 1;
  });
  bench.runSync();
  if (found !== calls) throw new Error('lookup results disagree with expectations');
  const [hit, miss] = taskRows(bench).map((row) => round(row['p50 ns'], 0));
  return { hit: hit!, miss: miss! };
}

/**
 * Median over runs of 100 back-to-back lookups of the time per lookup: what
 * a batch sees, where one lookup's memory reads may overlap the next's, or
 * one's mispredicted branch cost the next its head start.
 */
function medianNs(view: SnapshotView, queries: string[], expectHit: boolean): number {
  const RUN = 100;
  const samples: number[] = [];
  let sink = 0;
  for (let warm = 0; warm < 2; warm++) {
    samples.length = 0;
    for (let i = 0; i + RUN <= queries.length; i += RUN) {
      const start = process.hrtime.bigint();
      for (let j = i; j < i + RUN; j++) sink += view.lookup(queries[j]!);
      samples.push(Number(process.hrtime.bigint() - start) / RUN);
    }
  }
  const found = sink !== NOT_FOUND * queries.length * 2;
  if (found !== expectHit) throw new Error('lookup results disagree with expectations');
  samples.sort((a, b) => a - b);
  return round(samples[samples.length >> 1]!, 0);
}

function medianVerdictNs(view: SnapshotView, queries: string[]): number {
  const samples: number[] = [];
  let sink = 0;
  const count = Math.min(queries.length, 200_000);
  for (let i = 0; i + 10 <= count; i += 10) {
    const start = process.hrtime.bigint();
    for (let j = i; j < i + 10; j++) sink += view.verdict(queries[j]!).evidence_count;
    samples.push(Number(process.hrtime.bigint() - start) / 10);
  }
  if (sink === 0) throw new Error('no verdicts');
  samples.sort((a, b) => a - b);
  return round(samples[samples.length >> 1]!, 0);
}

/** A build's phase times, in seconds, as `<prefix>.<phase>S`. */
function recordPhases(prefix: string, report: BuildReport): void {
  for (const [phase, ms] of Object.entries(report.phaseMs)) results[`${prefix}.${phase}S`] = round(ms / 1000, 2);
}

function bytes(data: SnapshotData, fields: readonly (keyof SnapshotData)[]): number {
  return fields.reduce((sum, f) => sum + ((data[f] as ArrayBufferView | undefined)?.byteLength ?? 0), 0);
}

function seconds(from: number): number {
  return round((performance.now() - from) / 1000, 2);
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
