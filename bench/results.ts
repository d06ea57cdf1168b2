/**
 * The suite's report: every figure next to its target first, then the
 * detail tables. Markdown for people (bench/README.md, bench/results/*.md), the same
 * data as JSON for tools.
 */
import type { HttpResult, LatencyRow, ScenarioResult, SwapResult } from './http/scenarios.js';
import type { MachineStallResult } from './machine-stall.bench.js';
import { describeWindows, type DeltaResult, type HotPathScenario } from './http/delta.js';
import type { CorrectionsResult, LookupPhase } from './http/corrections.js';
import type { MemoryResult, MemorySample } from './http/memory.js';
import type { MirrorResult } from './http/mirror.js';
import type { CorrectionSeries, ServedSeries } from './http/correction-latency.js';
import type { FleetResult } from './http/fleet.js';
import type { Freshness } from './http/freshness.js';
import type { OpenLoopResult } from './http/load-tools.js';
import { medianBy, type Row } from './support/report.js';

export interface MicroResult {
  readonly file: string;
  readonly report: Record<string, unknown>;
}

export interface SuiteResult {
  readonly date: string;
  readonly machine: { readonly cores: number; readonly cpu: string; readonly memoryGiB: number; readonly node: string };
  readonly vpas: number;
  readonly options: Record<string, unknown>;
  engine: Record<string, unknown> | null;
  micro: MicroResult[];
  http: HttpResult[];
  swap: SwapResult | null;
  /** With the swap section: the machine's own stalls, from an idle process beside one touching fresh memory. */
  machineStall: MachineStallResult | null;
  /** The live delta (http/delta.ts); absent in reports from before it. */
  delta?: DeltaResult | null;
  /** The fleet mode (http/fleet.ts); absent in reports from before it. */
  fleet?: FleetResult | null;
  /** Retractions and clearances (http/corrections.ts); absent in reports from before it. */
  corrections?: CorrectionsResult | null;
  /** Where an embedded server's memory goes, idle and over two compactions (http/memory.ts); absent in reports from before it. */
  memory?: MemoryResult | null;
  /** The local mirror: sizes, the client's sync and check, agreement and lag (http/mirror.ts); absent in reports from before it. */
  mirror?: MirrorResult | null;
}

type Check = readonly [figure: string, target: string, measured: string, met: boolean | null];

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mark = (met: boolean | null) => (met === null ? 'reported' : met ? 'met' : '**missed**');

function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.map(String).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function ratioRangeText(s: ScenarioResult): string {
  return s.rounds.length < 2 ? '1 round' : `${fmt(s.ratioRange[0] * 100, 1)}–${fmt(s.ratioRange[1] * 100, 1)}% over ${s.rounds.length} rounds`;
}

/** Median server CPU per request of the service and the ceiling, µs. */
function cpuPerRequestText(s: ScenarioResult): string {
  const medianOf = (values: (number | null)[]): number | null => {
    const known = values.filter((v): v is number => v !== null);
    return known.length === 0 ? null : medianBy(known, (v) => v);
  };
  const service = medianOf(s.rounds.map((r) => r.service.serverCpuUsPerRequest));
  const ceiling = medianOf(s.rounds.map((r) => r.ceiling.serverCpuUsPerRequest));
  if (service === null || ceiling === null) return 'unknown';
  return `${fmt(service, 1)} / ${fmt(ceiling, 1)} µs (${fmt(service / ceiling, 2)}×)`;
}

function checks(suite: SuiteResult): Check[] {
  const out: Check[] = [];
  for (const mode of suite.http) {
    const name = mode.tls ? 'TLS' : 'plain HTTP';
    const single = mode.scenarios.find((s) => s.scenario === 'single');
    if (single !== undefined) {
      out.push([
        `single lookup peak / ceiling (${name})`,
        '≥ 90%',
        `${fmt(single.ratio * 100, 1)}% (${fmt(single.service.requestsPerSecond)} / ${fmt(single.ceiling.requestsPerSecond)} req/s; ${ratioRangeText(single)})`,
        single.ratio >= 0.9,
      ]);
      const half = single.latency.find((l) => l.share === 0.5);
      if (half !== undefined) {
        out.push([`single p99 at 50% of peak (${name})`, '≤ 1 ms', `${half.service.p99} ms (ceiling ${half.ceiling.p99} ms)`, half.service.p99 <= 1]);
        out.push([`single p99.9 at 50% of peak (${name})`, '≤ 2 ms', `${half.service.p999} ms (ceiling ${half.ceiling.p999} ms)`, half.service.p999 <= 2]);
      }
    }
    const batch = mode.scenarios.find((s) => s.scenario === 'batch');
    if (batch !== undefined) {
      const perSecond = batch.service.requestsPerSecond * 100;
      out.push([`batch of 100, VPAs screened per second (${name})`, '≥ 1,000,000', fmt(perSecond), perSecond >= 1_000_000]);
    }
  }
  const watch = suite.micro.find((m) => m.file === 'watch-rescreen')?.report as { rows?: { pass: string; watched: number; ms: number; 'max loop delay ms': number }[] } | undefined;
  for (const row of watch?.rows ?? []) {
    out.push([`re-screen ${fmt(row.watched)} watched VPAs: ${row.pass}`, '≤ a few seconds, no stall', `${fmt(row.ms)} ms (largest main-thread delay ${row['max loop delay ms']} ms)`, row.ms <= 5_000]);
  }
  const engine = suite.engine as Record<string, number> | null;
  if (engine !== null) {
    const big = suite.vpas >= 10_000_000;
    out.push(['index + verdict fields per VPA', big ? '≤ 100 B' : '≤ 100 B (target at 10M)', `${engine.indexPlusFieldsBytesPerVpa} B`, engine.indexPlusFieldsBytesPerVpa! <= 100]);
    out.push(['snapshot load', big ? '≤ 3 s' : '≤ 3 s (target at 10M)', `${engine.loadS} s`, engine.loadS! <= 3]);
    out.push(['full build', big ? '≤ 120 s' : '≤ 120 s (target at 10M)', `${engine.buildS} s`, engine.buildS! <= 120]);
    const runs = engine.lookupHitRunMedianNs === undefined ? '' : ` (in runs of 100 back-to-back: ${engine.lookupHitRunMedianNs} / ${engine.lookupMissRunMedianNs} ns)`;
    out.push(['index lookup median, hit / miss', '≤ 300 ns', `${engine.lookupHitMedianNs} / ${engine.lookupMissMedianNs} ns${runs}`, Math.max(engine.lookupHitMedianNs!, engine.lookupMissMedianNs!) <= 300]);
  }
  const swap = suite.swap;
  if (swap !== null) {
    const machine = suite.machineStall === null ? '' : `; an idle process sharing nothing with the server: ${suite.machineStall.touchingStallMs} ms while another touches fresh memory`;
    out.push([
      'serving-thread stall over a rebuild, its swap and the release of the replaced snapshot',
      '≤ 5 ms',
      `${swap.stallMs} ms over ${swap.windowS} s (same load as long, no rebuild: ${swap.baselineStallMs} ms; the swap itself held the thread ${swap.swapMs} ms${machine})`,
      swap.stallMs <= 5,
    ]);
    out.push(['failed requests during the swap', '0', `${swap.failed} of ${fmt(swap.load.sent)}`, swap.failed === 0]);
    const atMillion = suite.vpas <= 1_000_000;
    const [first, next] = swap.idleFreshnessS;
    const slowest = Math.max(first, next);
    // Reports written before the bench waited for the previous build's file carry no previousWriteS.
    const waited =
      swap.previousWriteS === undefined
        ? ''
        : `; each ingest made once the build before had written its file, which took ${swap.previousWriteS.map((s) => `${s} s`).join(', ')} more, in the order the ingests came`;
    // Reports written before snapshots were laid out in reused memory carry no reusedMiB.
    const reused =
      swap.reusedMiB === undefined || swap.reusedMiB.every((mib) => mib === null)
        ? ''
        : `; of each rebuild's snapshot, ${swap.reusedMiB.map((mib) => `${mib ?? '?'} MiB`).join(', ')} laid out in a replaced snapshot's memory`;
    out.push([
      'freshness: ingest returns → verdict served',
      atMillion ? '≤ 5 s at 1M' : 'report at 10M',
      `${first} s and ${next} s idle, the first two rebuilds (then under the load ${swap.freshnessS} s${waited}${reused})`,
      atMillion ? slowest >= 0 && slowest <= 5 : null,
    ]);
  }
  if (suite.delta !== undefined && suite.delta !== null) out.push(...deltaChecks(suite.delta));
  if (suite.fleet !== undefined && suite.fleet !== null) out.push(...fleetChecks(suite.fleet));
  if (suite.corrections !== undefined && suite.corrections !== null) out.push(...correctionsChecks(suite.corrections));
  if (suite.memory !== undefined && suite.memory !== null) out.push(...memoryChecks(suite.memory));
  if (suite.mirror !== undefined && suite.mirror !== null) out.push(...mirrorChecks(suite.mirror));
  return out;
}

function freshnessText(f: Freshness, merges = "the server's merge"): string {
  const merge = f.mergeP50 === null ? '' : `; ${merges} p50 ${f.mergeP50} ms, max ${f.mergeMax} ms`;
  return `p99 ${fmt(f.p99)} ms (p50 ${fmt(f.p50)}, max ${fmt(f.max)} ms over ${f.count} ingests${merge})`;
}

function hotPathText(h: HotPathScenario): string {
  const cpu = h.cpuUs.empty === null || h.cpuUs.delta === null ? '' : `; server CPU per request ${fmt(h.cpuUs.delta, 1)} / ${fmt(h.cpuUs.empty, 1)} µs (${fmt((h.cpuRatio ?? 0) * 100, 1)}%), ceiling ${fmt(h.cpuUs.ceiling ?? 0, 1)} µs`;
  const median = medianBy(h.rounds, (r) => r.ratio);
  return (
    `${fmt(h.ratio * 100, 1)}% (${fmt(median.delta.requestsPerSecond)} / ${fmt(median.empty.requestsPerSecond)} req/s; ${fmt(h.ratioRange[0] * 100, 1)}–${fmt(h.ratioRange[1] * 100, 1)}% over ${h.rounds.length} rounds` +
    `; to the ceiling ${fmt(h.deltaToCeiling * 100, 1)}% and ${fmt(h.emptyToCeiling * 100, 1)}%${cpu})`
  );
}

function deltaChecks(d: DeltaResult): Check[] {
  const out: Check[] = [];
  out.push(['freshness, idle: ingest CLI exits → FLAGGED on every serving thread', '≤ 1,000 ms (p99)', freshnessText(d.idle), d.idle.p99 <= 1000]);
  out.push([
    `freshness under load (${fmt(d.rate)} single lookups/s, ${d.rateFrom})`,
    '≤ 1,000 ms (p99)',
    `${freshnessText(d.underLoad)}; load p99 ${d.underLoadLoad.p99} ms`,
    d.underLoad.p99 <= 1000,
  ]);
  const c = d.compactions;
  out.push([
    `failed requests over ${c.records.length} compactions under ${fmt(d.compactionRate ?? d.rate)} single lookups/s`,
    '0',
    `${fmt(c.failed)}: load ${c.load.errors + c.load.non2xx} of ${fmt(c.load.sent)}, checker ${c.checker.failed} of ${fmt(c.checker.requests)}, freshness polls ${c.pollFailures}`,
    c.failed === 0,
  ]);
  out.push([
    'answers going backwards over the compactions',
    '0',
    `${fmt(c.checker.backward)} of ${fmt(c.checker.requests)} checker answers about ${fmt(c.checker.vpas)} VPAs on every thread`,
    c.checker.backward === 0,
  ]);
  out.push(['freshness during the compactions, under load', 'report', `${freshnessText(c.freshness)}; ${c.ingests} ingests`, null]);
  const m = d.memory;
  out.push([
    `delta bytes per evidence item (${fmt(m.deltaVpas)} VPAs)`,
    '≤ ~300 B',
    `${fmt(m.bytesPerItem, 1)} B (${fmt(m.deltaBytes)} B / ${fmt(m.deltaEvidenceItems)} items)`,
    m.bytesPerItem <= 300,
  ]);
  out.push([
    'resident memory of the server: loaded, idle / with the large delta',
    'report',
    `${fmt(m.loadedRssMiB)} / ${fmt(m.withLargeRssMiB)} MiB (${fmt(m.beforeLargeRssMiB)} MiB after the compactions, before the large ingest); the hot-path servers, idle, background threads gone: ${fmt(d.hotPath.emptyRssMiB)} MiB with an empty delta, ${fmt(d.hotPath.deltaRssMiB)} MiB with the large one`,
    null,
  ]);
  out.push(['freshness over the large delta, idle', 'report', `${freshnessText(d.overLarge)}; the large file itself ${fmt(m.largeFreshnessMs)} ms (merge ${m.largeMergeMs ?? '?'} ms)`, null]);
  for (const h of d.hotPath.scenarios) {
    out.push([
      `${h.scenario === 'single' ? 'single lookup' : 'batch of 100'} peak, large delta / empty delta`,
      '≥ 97%',
      hotPathText(h),
      h.ratio >= 0.97,
    ]);
  }
  return out;
}

const mb = (bytes: number, digits = 0) => `${fmt(bytes / 1e6, digits)} MB`;
const pct = (ratio: number) => `${fmt(ratio * 100, 1)}%`;
const cpuText = (us: number | null) => (us === null ? '?' : fmt(us, 1));

/** Freshness series, one a row, each with the load it ran under (null: idle). */
function freshnessTable(series: readonly (readonly [name: string, freshness: Freshness, load: OpenLoopResult | null])[], mergeHeader: string): string {
  return table(
    ['series', 'ingests', 'p50', 'p99', 'max', mergeHeader, 'load'],
    series.map(([name, f, load]) => [
      name,
      f.count,
      fmt(f.p50),
      fmt(f.p99),
      fmt(f.max),
      f.mergeP50 === null ? '' : `${f.mergeP50} / ${f.mergeMax}`,
      load === null ? '' : `p99 ${load.p99} ms, max ${load.max} ms, lag ${load.maxSendLag} ms, failed ${load.errors + load.non2xx} of ${fmt(load.sent)}`,
    ]),
  );
}

function fleetChecks(f: FleetResult): Check[] {
  const out: Check[] = [];
  const i = f.ingest;
  out.push([
    '`ingest --store` into the evidence log (the data set\'s files), lines a second',
    '≥ 100,000',
    `${fmt(i.linesPerSecond)} (${fmt(i.lines)} lines, ${mb(i.bytes)} in ${i.files} file(s), ${fmt(i.seconds, 1)} s from start to exit; the log ${fmt(i.logBytesPerItem)} B per item with its indexes)`,
    i.linesPerSecond >= 100_000,
  ]);
  const b = f.builder;
  out.push([
    'builder: start → first publication (lease, mirror, build, publish)',
    'report',
    `${fmt(b.firstPublicationS, 1)} s (lease ${fmt(b.leaseS, 1)} s, mirror ${fmt(b.mirrorS, 1)} s, build ${fmt(b.buildMs / 1000, 1)} s on ${b.threads} threads, publish ${fmt(b.publishMs / 1000, 1)} s); snapshot ${mb(b.snapshotBytes, 1)}, ${fmt(b.vpas)} VPAs`,
    null,
  ]);
  out.push(['a second builder stands by', 'one active', b.oneActive ? 'the first alone held the lease' : 'the first did not hold the lease alone', b.oneActive]);
  out.push(['followers: start → listening (ready)', 'report', f.followers.map((x) => `${fmt(x.readyS, 1)} s`).join(' and '), null]);
  const worst = Math.max(...f.followers.map((x) => x.rssBytes));
  out.push([
    "followers' resident memory, ready and idle",
    `≤ 1.3 × snapshot + 300 MB = ${mb(f.rssTargetBytes)}`,
    `${f.followers.map((x) => mb(x.rssBytes)).join(' and ')} (${fmt(worst / b.snapshotBytes, 2)}× the snapshot's ${mb(b.snapshotBytes)})`,
    worst <= f.rssTargetBytes,
  ]);
  const t = f.throughput;
  out.push([
    'single lookup peak to the ceiling, follower against embedded server',
    "the embedded server's (follower / embedded ≥ 97%)",
    `${pct(t.followerToCeiling)} and ${pct(t.embeddedToCeiling)} (${fmt(t.followerPeak)} and ${fmt(t.embeddedPeak)} / ${fmt(t.ceilingPeak)} req/s); ` +
      `follower / embedded ${pct(t.followerToEmbedded)} (${pct(t.followerToEmbeddedRange[0])}–${pct(t.followerToEmbeddedRange[1])} over ${t.rounds.length} rounds); ` +
      `server CPU per request ${cpuText(t.cpuUs.follower)} / ${cpuText(t.cpuUs.embedded)} µs, ceiling ${cpuText(t.cpuUs.ceiling)} µs`,
    t.followerToEmbedded >= 0.97,
  ]);
  out.push([
    'fleet freshness, idle: `ingest --store` exits → FLAGGED on every thread of both followers',
    '≤ 1,000 ms (p99)',
    freshnessText(f.idle, "the followers' merges"),
    f.idle.p99 <= 1000,
  ]);
  const l = f.underLoadLoad;
  out.push([
    `fleet freshness under ${fmt(f.rate)} single lookups/s on one follower (${f.rateFrom ?? 'half its peak'})`,
    '≤ 1,000 ms (p99)',
    `${freshnessText(f.underLoad, "the followers' merges")}; load p99 ${l.p99} ms, failed ${l.errors + l.non2xx} of ${fmt(l.sent)}`,
    f.underLoad.p99 <= 1000,
  ]);
  return out;
}

function fleetSection(f: FleetResult): string[] {
  const parts: string[] = [];
  const { ingest: i, builder: b, throughput: t } = f;
  parts.push(`## Fleet mode: the store, the builders, the followers (PostgreSQL ${f.postgres}, followers on ${f.serverThreads} thread(s))`);
  parts.push(
    table(
      ['step', 'figure'],
      [
        [
          '`upi-risk ingest --store` of the data set\'s evidence files, one process',
          `${fmt(i.lines)} lines (${mb(i.bytes)}) in ${fmt(i.seconds, 2)} s: ${fmt(i.linesPerSecond)} lines/s; ${fmt(i.added)} items logged, ${fmt(i.duplicates)} duplicates; ` +
            `the evidence table ${mb(i.logBytes)} with its indexes, ${fmt(i.logBytesPerItem)} B per item`,
        ],
        [
          'first builder: start → first publication',
          `${fmt(b.firstPublicationS, 2)} s: lease at ${fmt(b.leaseS, 2)} s, then mirror (and the rest of the pass) ${fmt(b.mirrorS, 2)} s, build ${fmt(b.buildMs)} ms (${b.threads} threads), publish ${fmt(b.publishMs)} ms; ` +
            `covers log position ${fmt(b.position)}`,
        ],
        ['snapshot published', `${fmt(b.snapshotBytes)} B (${mb(b.snapshotBytes, 1)}), ${fmt(b.vpas)} VPAs`],
        ['the active builder, resident, after publishing', `${fmt(b.rssMiB)} MiB`],
        ['second builder', b.oneActive ? 'standing by: the first alone held the lease 7 s after the second was started (it tries every 2 s)' : '**the first did not hold the lease alone**'],
        ...f.followers.map((x, n) => [
          `follower ${n + 1}`,
          `start → listening ${fmt(x.readyS, 2)} s (download ${fmt(x.downloadMs, 0)} ms, load ${fmt(x.loadMs, 0)} ms, log replay ${fmt(x.replayMs, 0)} ms); resident, ready and idle, ${mb(x.rssBytes)} (target ${mb(f.rssTargetBytes)}); at the end of the section ${mb(x.rssEndBytes)}`,
        ]),
        ['embedded server on a copy of the data set, idle, build threads gone', `resident ${fmt(t.embeddedRssMiB)} MiB (${mb(t.embeddedRssMiB * 2 ** 20)})`],
      ],
    ),
  );
  parts.push(
    `Schema \`${f.schema}\`, made for the run and dropped after it. The builders run with \`--publish-minutes\` at its highest, so the first publication is the only one. ` +
      'A follower is timed from its spawn until it prints where it listens, which it does once it serves the newest publication (downloaded, checked, loaded) and the log after it; ' +
      'the two are started one after the other, and their resident memory (VmRSS) is read six seconds after the second is ready. Followers count quotas locally (no `--redis`), as the embedded server does.',
  );
  parts.push(`## Fleet mode: single lookups, follower against embedded server (plain HTTP, wrk, ${fmt(t.bodyBytes)}-byte answers)`);
  parts.push(
    table(
      ['round', 'first', 'follower, req/s (CPU per request)', 'embedded', 'ceiling', 'follower / embedded', 'follower / ceiling', 'embedded / ceiling', 'failed'],
      t.rounds.map((r, n) => {
        const [fo, em, ce] = [r.runs.follower!, r.runs.embedded!, r.runs.ceiling!];
        return [
          n + 1,
          r.order[0] ?? '',
          `${fmt(fo.requestsPerSecond)} (${cpuText(fo.serverCpuUsPerRequest)} µs)`,
          `${fmt(em.requestsPerSecond)} (${cpuText(em.serverCpuUsPerRequest)} µs)`,
          `${fmt(ce.requestsPerSecond)} (${cpuText(ce.serverCpuUsPerRequest)} µs)`,
          pct(fo.requestsPerSecond / em.requestsPerSecond),
          pct(fo.requestsPerSecond / ce.requestsPerSecond),
          pct(em.requestsPerSecond / ce.requestsPerSecond),
          fo.errors + fo.non2xx + em.errors + em.non2xx,
        ];
      }),
    ),
  );
  parts.push(
    'The first follower and an embedded server (`serve --data-dir` on a hard-linked copy of the data set, `--build-idle-seconds 0`, measured once it had read its stored evidence), ' +
      'the same request lists for both, each warmed by a run as long as a measurement; each round runs the two, in alternating order, then the bare ceiling. ' +
      'The second follower and both builders stay up, idle, meanwhile.',
  );
  parts.push('## Fleet mode: freshness, from `upi-risk ingest --store` exiting until every serving thread of both followers answers FLAGGED, ms');
  parts.push(
    freshnessTable(
      [
        ['idle', f.idle, null],
        [`under ${fmt(f.rate)} single lookups/s on the first follower`, f.underLoad, f.underLoadLoad],
      ],
      "followers' merge p50 / max",
    ),
  );
  parts.push(
    `Each small file: ${f.smallFile.newVpas} VPAs never seen before, ${f.smallFile.knownItems} items for known VPAs, ${f.smallFile.againItems} for VPAs earlier files added; ` +
      'each ingest is `upi-risk ingest --store` as a process, the next one once both followers serve the last. Every serving thread of each follower is polled on a keep-alive connection of its own every 5 ms; ' +
      `followers hear of new evidence by LISTEN/NOTIFY, with their poll every second behind it. Freshness polls answered other than 200: ${f.pollFailures}.`,
  );
  return parts;
}

/** Both kinds of a series: served p99 and p50 each, and the answers' p99. */
function servedText(s: ServedSeries): string {
  const kind = (name: string, c: CorrectionSeries) => `${name} p99 ${fmt(c.served.p99)} ms (p50 ${fmt(c.served.p50)}, answered p99 ${fmt(c.answered.p99)})`;
  return `${kind('retraction', s.retraction)}, ${kind('clearance', s.clearance)}; ${s.retraction.served.count} of each`;
}

const servedMet = (s: ServedSeries) => s.retraction.served.p99 <= 1000 && s.clearance.served.p99 <= 1000;

/** MiB as MB (10^6 bytes), the targets' unit. */
const mibAsMB = (mib: number) => Math.round((mib * 2 ** 20) / 1e6);

function memoryChecks(m: MemoryResult): Check[] {
  const file = `the snapshot file ${fmt(m.snapshotFileMB)} MB`;
  const peaks = m.compactions.map((c) => mibAsMB(c.peak.resident));
  const last = (c: MemoryResult['compactions'][number]) => c.after[c.after.length - 1]!;
  return [
    ['embedded server resident, idle (after the read-ahead)', `≤ 2 × snapshot file + 300 MB = ${fmt(m.idleTargetMB)} MB (${file})`, `${fmt(mibAsMB(m.idle.resident))} MB`, mibAsMB(m.idle.resident) <= m.idleTargetMB],
    ['resident at the peak of a compaction', `≤ 3 × snapshot file + 500 MB = ${fmt(m.peakTargetMB)} MB`, peaks.map((p) => `${fmt(p)} MB`).join(', '), Math.max(...peaks) <= m.peakTargetMB],
    [
      'resident a minute after a compaction',
      `back to the idle figure (${fmt(mibAsMB(m.idle.resident))} MB)`,
      m.compactions.map((c) => `${fmt(mibAsMB(last(c).resident))} MB${c.backToIdleS === null ? '' : ` (back after ${c.backToIdleS} s)`}`).join(', '),
      m.compactions.every((c) => c.backToIdleS !== null),
    ],
    ...(m.compactions.every((c) => c.rangeAnswers !== undefined)
      ? [
          [
            'range lookups from the signal until answered from the new snapshot',
            'report: a compaction\'s snapshot is hashed once served (503 meanwhile)',
            m.compactions.map((c) => `${fmt(c.rangeAnswers!.ok)} answered, ${fmt(c.rangeAnswers!.unavailable)} 503, ${fmt(c.rangeAnswers!.other)} other`).join('; '),
            null,
          ] satisfies Check,
        ]
      : []),
  ];
}

function memorySection(m: MemoryResult): string[] {
  const row = (what: string, s: MemorySample): (string | number)[] => {
    const p = s.parts;
    return [what, fmt(mibAsMB(s.resident)), fmt(mibAsMB(s.anonymous)), fmt(mibAsMB(s.file)), fmt(mibAsMB(s.shared)), ...(p === null ? ['', '', '', '', '', '', '', ''] : [p.snapshot, p.carried, p.delta, p.reusable, p.ranges, p.history, p.heaps, p.buildThreads].map((v) => fmt(v)))];
  };
  const rows = [row(`idle (${m.idleAfterS} s after start${m.idleSettled ? '' : ', not settled'})`, m.idle)];
  m.compactions.forEach((c, i) => {
    rows.push(row(`compaction ${i + 1}: peak (${c.peak.atS} s into its ${c.seconds} s)`, c.peak));
    rows.push(row(`compaction ${i + 1}: a minute after`, c.after[c.after.length - 1]!));
  });
  return [
    '## Memory',
    `An embedded server with serve's ${(m.serveOptions ?? []).length === 0 ? 'default options' : `default options but ${m.serveOptions!.join(' ')}`} (${m.serverThreads} serving threads), on a copy of the data set; its snapshot file ${fmt(m.snapshotFileMB)} MB. ` +
      'Resident and its parts from /proc (MB); the server\'s own account from /metrics (MiB): the snapshot, the carried build state, the live delta, a replaced snapshot kept for the next build, the snapshot\'s VPAs by hash (range lookups), the history of answers\' index, every thread\'s JavaScript heap in use, build threads alive.',
    table(['when', 'resident', 'anonymous', 'file', 'shared', 'snapshot', 'carried', 'delta', 'reusable', 'ranges', 'history', 'heaps', 'build threads'], rows),
  ];
}

function mirrorChecks(m: MirrorResult): Check[] {
  return [
    ['mirror agrees with the service', 'every flagged VPA and a sample of others', `${fmt(m.agreement.flagged)} flagged and ${fmt(m.agreement.unflagged)} others, ${m.agreement.mismatches} mismatches`, m.agreement.mismatches === 0],
    ['mirror check per lookup', '< 1 µs', `${m.checkNs} ns (the hash alone ${m.hashNs} ns)`, m.checkNs < 1000],
    [
      'ingest to a mirror version that holds the VPA (its created_at)',
      '≤ 60 s p99',
      `p99 ${m.serviceLag.p99S.toFixed(1)} s (p50 ${m.serviceLag.p50S.toFixed(1)}, max ${m.serviceLag.maxS.toFixed(1)} s over ${m.serviceLag.samples.length} ingests)`,
      m.serviceLag.p99S <= 60,
    ],
    ['ingest to a client that holds the VPA (syncing every second)', 'report', `p99 ${m.lag.p99S.toFixed(1)} s (p50 ${m.lag.p50S.toFixed(1)}, max ${m.lag.maxS.toFixed(1)} s)`, null],
  ];
}

function mirrorSection(m: MirrorResult): string[] {
  const diffs = m.minuteDiffBytes.length === 0 ? 'none made' : m.minuteDiffBytes.map((b) => fmt(b)).join(', ');
  return [
    '## Mirror',
    `An embedded server with a mirror signing key and serve's defaults, on a copy of the data set (${fmt(m.vpas)} VPAs); \`UpiRiskMirror\` in the bench process.`,
    table(
      ['figure', 'value'],
      [
        ['first version, after listening', `${m.firstVersionS} s`],
        ['full file: identity / gzip / Brotli', `${fmt(m.fullBytes.identity)} / ${fmt(m.fullBytes.gzip)} / ${fmt(m.fullBytes.br)} B`],
        ['server resident once the first version is served', `${fmt(m.serverRssMiB)} MiB`],
        ['client: first sync (full file)', `${m.firstSync.seconds.toFixed(2)} s, ${m.firstSync.clientMemoryMiB} MiB held`],
        ['diffs from the version before, 100 new VPAs every 10-20 s', `${diffs} B`],
      ],
    ),
  ];
}

function correctionsChecks(c: CorrectionsResult): Check[] {
  const out: Check[] = [];
  const loadText = (l: OpenLoopResult) => `; load p99 ${l.p99} ms, failed ${l.errors + l.non2xx} of ${fmt(l.sent)}`;
  const served: (readonly [string, ServedSeries, OpenLoopResult | null])[] = [];
  if (c.embedded !== null) {
    served.push(['corrections served, idle: sent → changed answer on every serving thread', c.embedded.idle, null]);
    served.push([`corrections served under ${fmt(c.rate)} single lookups/s (${c.rateFrom})`, c.embedded.underLoad, c.embedded.load]);
  }
  if (c.fleet !== null) {
    served.push(['fleet: corrections sent to one follower, idle → changed answer on every thread of the other', c.fleet.idle, null]);
    served.push([`fleet: the same, the other follower under ${fmt(c.rate)} single lookups/s`, c.fleet.underLoad, c.fleet.load]);
  }
  for (const [figure, series, load] of served) out.push([figure, '≤ 1,000 ms (p99)', `${servedText(series)}${load === null ? '' : loadText(load)}`, servedMet(series)]);
  const l = c.lookupCost;
  if (l === null) return out;
  const [none, delta, compacted] = l.phases as [LookupPhase, LookupPhase, LookupPhase];
  const corrections = `${fmt(l.clearances)} clearances and ${fmt(l.retractedItems)} retracted items`;
  const phases = [
    [`in the live delta (${fmt(delta.deltaVpas)} VPAs)`, delta, l.delta],
    ['compacted into the snapshot', compacted, l.compacted],
  ] as const;
  for (const [where, phase, ratios] of phases) {
    out.push([
      `single lookup peak with ${corrections} ${where} / without, same server, each to the ceiling of its rounds`,
      '≥ 97%',
      `${pct(ratios.sameServerToCeiling)}: ${pct(phase.correctedToCeiling)} of the ceiling against ${pct(none.correctedToCeiling)} before (${fmt(phase.correctedPeak)} and ${fmt(none.correctedPeak)} req/s: ${pct(ratios.sameServer)}; ` +
        `ceiling ${fmt(phase.ceilingPeak)} and ${fmt(none.ceilingPeak)} req/s)`,
      ratios.sameServerToCeiling >= 0.97,
    ]);
    out.push([
      `the same against a server without corrections, in the same rounds`,
      '≥ 97%',
      `${pct(ratios.againstOther)}: corrected / other ${pct(phase.correctedToOther)} (${pct(phase.correctedToOtherRange[0])}–${pct(phase.correctedToOtherRange[1])} over ${phase.rounds.length} rounds) against ${pct(none.correctedToOther)} before; ` +
        `server CPU per request ${cpuText(phase.cpuUs.corrected)} / ${cpuText(phase.cpuUs.other)} µs, ceiling ${cpuText(phase.cpuUs.ceiling)} µs`,
      ratios.againstOther >= 0.97,
    ]);
  }
  out.push([
    `applying ${corrections} over HTTP, one request after another`,
    'report',
    `clearances ${fmt(l.clearingS, 1)} s (each answered in p50 ${fmt(l.clearanceAnswers.p50)} ms, p99 ${fmt(l.clearanceAnswers.p99)} ms, max ${fmt(l.clearanceAnswers.max)} ms); ` +
      `retractions ${fmt(l.retractingS, 1)} s (${l.retractionAnswers.count} requests, p50 ${fmt(l.retractionAnswers.p50)} ms, max ${fmt(l.retractionAnswers.max)} ms); the compaction after them ${fmt(l.compactionS, 1)} s`,
    null,
  ]);
  return out;
}

function correctionsSection(c: CorrectionsResult): string[] {
  const parts: string[] = [];
  const l = c.lookupCost;
  parts.push(`## Corrections: served, ms, server(s) on ${c.serverThreads} thread(s)`);
  const rows: (string | number)[][] = [];
  const scenarios: (readonly [string, string, ServedSeries, OpenLoopResult | null])[] = [];
  if (c.embedded !== null) {
    scenarios.push(['embedded', 'idle', c.embedded.idle, null]);
    scenarios.push(['embedded', `under ${fmt(c.rate)} single lookups/s`, c.embedded.underLoad, c.embedded.load]);
  }
  if (c.fleet !== null) {
    scenarios.push(['fleet: sent to one follower, watched on the other', 'idle', c.fleet.idle, null]);
    scenarios.push(['fleet: sent to one follower, watched on the other', `the other under ${fmt(c.rate)} single lookups/s`, c.fleet.underLoad, c.fleet.load]);
  }
  for (const [server, series, s, load] of scenarios) {
    for (const kind of ['retraction', 'clearance'] as const) {
      const k = s[kind];
      rows.push([
        server,
        series,
        kind,
        k.served.count,
        `${fmt(k.served.p50)} / ${fmt(k.served.p99)} / ${fmt(k.served.max)}`,
        `${fmt(k.answered.p50)} / ${fmt(k.answered.p99)} / ${fmt(k.answered.max)}`,
        k.served.mergeP50 === null ? '' : `${k.served.mergeP50} / ${k.served.mergeMax}`,
        kind === 'clearance' || load === null ? '' : `p99 ${load.p99} ms, max ${load.max} ms, lag ${load.maxSendLag} ms, failed ${load.errors + load.non2xx} of ${fmt(load.sent)}`,
        kind === 'clearance' ? '' : s.pollFailures,
      ]);
    }
  }
  parts.push(
    table(['server', 'series', 'correction', 'count', 'served p50 / p99 / max', 'answered p50 / p99 / max', "the server's own p50 / max", 'load', 'failed polls'], rows),
  );
  parts.push(
    'Served: from sending the request until every serving thread of the server watched answers the VPA\'s changed verdict (a retraction: one evidence item fewer, ' +
      'or CLEARED when it was the only one; a clearance: CLEARED), each thread polled every 5 ms on a keep-alive connection of its own. Answered: the request\'s own response time. ' +
      'Each retraction names one evidence id of a FLAGGED VPA of the data set, each clearance another FLAGGED VPA, drawn at random; a retraction, then a clearance, one at a time. ' +
      "The server's own: the embedded server's `corrections served` log line (`ms`), the watched follower's merge of the log's records into its delta." +
      (c.fleet === null
        ? ''
        : ` The fleet: PostgreSQL ${c.fleet.postgres}, schema \`${c.fleet.schema}\` made for the run and dropped after it; the data set's evidence ingested with \`upi-risk ingest --store\` ` +
          `(${fmt(c.fleet.ingest.linesPerSecond)} lines/s), published by a builder (${fmt(c.fleet.builder.firstPublicationS, 1)} s from its start), two followers (\`serve --store\`).`),
  );
  if (l === null) return parts;
  parts.push(`## Corrections: single lookups with ${fmt(l.clearances)} clearances and ${fmt(l.retractedItems)} retracted items (plain HTTP, wrk, ${fmt(l.bodyBytes)}-byte answers)`);
  parts.push(
    table(
      ['phase', 'delta VPAs (bytes)', 'carried', 'resident, MiB', 'corrected, req/s', 'other', 'ceiling', 'corrected / ceiling', 'other / ceiling', 'corrected / other', 'CPU per request, µs'],
      l.phases.map((p) => [
        p.phase === 'none' ? 'before the corrections' : p.phase === 'delta' ? 'corrections in the live delta' : 'compacted',
        `${fmt(p.deltaVpas)} (${mb(p.deltaBytes, 1)})`,
        mb(p.carriedBytes),
        `${fmt(p.rssMiB.corrected)} / ${fmt(p.rssMiB.other)}`,
        fmt(p.correctedPeak),
        fmt(p.otherPeak),
        fmt(p.ceilingPeak),
        pct(p.correctedToCeiling),
        pct(p.otherToCeiling),
        `${pct(p.correctedToOther)} (${pct(p.correctedToOtherRange[0])}–${pct(p.correctedToOtherRange[1])})`,
        `${cpuText(p.cpuUs.corrected)} / ${cpuText(p.cpuUs.other)} / ${cpuText(p.cpuUs.ceiling)}`,
      ]),
    ),
  );
  parts.push(
    table(
      ['phase', 'round', 'first', 'corrected, req/s (CPU per request)', 'other', 'ceiling', 'corrected / other', 'failed'],
      l.phases.flatMap((p) =>
        p.rounds.map((r, n) => {
          const [co, ot, ce] = [r.runs.corrected!, r.runs.other!, r.runs.ceiling!];
          return [
            p.phase,
            n + 1,
            r.order[0] ?? '',
            `${fmt(co.requestsPerSecond)} (${cpuText(co.serverCpuUsPerRequest)} µs)`,
            `${fmt(ot.requestsPerSecond)} (${cpuText(ot.serverCpuUsPerRequest)} µs)`,
            `${fmt(ce.requestsPerSecond)} (${cpuText(ce.serverCpuUsPerRequest)} µs)`,
            pct(co.requestsPerSecond / ot.requestsPerSecond),
            co.errors + co.non2xx + ot.errors + ot.non2xx,
          ];
        }),
      ),
    ),
  );
  parts.push(
    'Two servers started alike on hard-linked copies of the data set (`--build-idle-seconds 0`, compactions only on request), measured once each had read its stored evidence and its build threads had exited; ' +
      'each round runs the two, in alternating order, then the bare ceiling, each warmed first by a run as long as a measurement. ' +
      `The same request lists for both: ${pct(l.correctedLookupShare)} of the lookups name a corrected VPA (cleared, or with an item retracted), the rest known and unknown VPAs as in the http section. ` +
      `Between the first phase and the second, the corrected server took ${fmt(l.retractedItems)} retracted items (one each of as many VPAs, ${fmt(l.retractionAnswers.count)} requests of up to 1,000 ids) ` +
      `and ${fmt(l.clearances)} clearances (one request each), all over HTTP, 32 requests in flight (the server serves the corrections recorded together in one serve); before the third, both were compacted (\`POST /v1/admin/compaction\`), the corrected one in ${fmt(l.compactionS, 1)} s. ` +
      'With / without: the corrected server against itself before the corrections, its peak to the ceiling of each round, and against the other server in the same rounds. ' +
      "Delta bytes (`upi_risk_delta_bytes`), carried (`upi_risk_build_carried_bytes`: what the corrected server keeps for its next build) and resident memory (VmRSS, the corrected server / the other) are read at each phase's start, idle.",
  );
  return parts;
}

function deltaSection(d: DeltaResult): string[] {
  const parts: string[] = [];
  const h = d.hotPath;
  parts.push(`## Live delta: hot path (plain HTTP, wrk), server on ${d.serverThreads} thread(s)`);
  parts.push(
    `Two servers started alike on hard-linked copies of the data set: one left with an empty delta (${h.emptyDeltaVpas} VPAs), one given the large file ` +
      `by an ingest (${fmt(h.deltaVpas)} VPAs in its delta), both with \`--build-idle-seconds 0\` (they build nothing); resident, idle, once that was served and ` +
      `their background threads had exited: ${fmt(h.emptyRssMiB)} and ${fmt(h.deltaRssMiB)} MiB. ` +
      `The same request lists for both: ${fmt(h.deltaLookupShare * 100, 1)}% of lookups name a known VPA the large file brings evidence for ` +
      '(FLAGGED by both, answered from the delta by the one that holds it), the rest known and unknown VPAs as in the http section. ' +
      'Each round runs the two services, in alternating order, then the bare ceiling; each server was warmed by a run as long as a measurement.',
  );
  const rows: (string | number)[][] = [];
  for (const s of h.scenarios) {
    s.rounds.forEach((r, i) => {
      rows.push([
        s.scenario,
        i + 1,
        r.first,
        `${fmt(r.empty.requestsPerSecond)} (${r.empty.serverCpuUsPerRequest ?? '?'} µs)`,
        `${fmt(r.delta.requestsPerSecond)} (${r.delta.serverCpuUsPerRequest ?? '?'} µs)`,
        `${fmt(r.ceiling.requestsPerSecond)} (${r.ceiling.serverCpuUsPerRequest ?? '?'} µs)`,
        `${fmt(r.ratio * 100, 1)}%`,
        r.empty.errors + r.empty.non2xx + r.delta.errors + r.delta.non2xx,
      ]);
    });
  }
  parts.push(table(['scenario', 'round', 'first', 'empty delta, req/s (CPU per request)', 'large delta', 'ceiling', 'large / empty', 'failed'], rows));
  parts.push('## Live delta: freshness, from `upi-risk ingest` exiting until every serving thread answers FLAGGED, ms');
  const c = d.compactions;
  const series: [string, Freshness, OpenLoopResult | null][] = [
    ['idle', d.idle, null],
    [`under ${fmt(d.rate)} single lookups/s`, d.underLoad, d.underLoadLoad],
    [`around ${c.records.length} compactions, ${d.compactionRate === undefined || d.compactionRate === d.rate ? 'same load' : `under ${fmt(d.compactionRate)} single lookups/s`}`, c.freshness, c.load],
    [`over the large delta (${fmt(d.memory.deltaVpas)} VPAs), idle`, d.overLarge, null],
  ];
  parts.push(freshnessTable(series, 'server merge p50 / max'));
  parts.push(
    `Each small file: ${d.smallFile.newVpas} VPAs never seen before, ${d.smallFile.knownItems} items for known VPAs, ${d.smallFile.againItems} for VPAs earlier files added; ` +
      'each ingest is `upi-risk ingest` as a process, the next one once the last is served. Every thread is polled on a keep-alive connection of its own (its thread learnt from /readyz) every 5 ms. ' +
      `Around the compactions ingests start at most once a second. The main server read its stored evidence ${d.readAheadS} s after it started listening, before anything was measured.`,
  );
  parts.push('## Live delta: compactions under load (SIGUSR2)');
  parts.push(
    table(
      ['compaction', 'signal → served by every thread, ms', 'build (server log), ms', 'previous file written, s', 'ingests since the one before'],
      c.records.map((r, i) => [i + 1, fmt(r.ms), r.buildMs === null ? '' : fmt(r.buildMs), r.waitedForFileS, r.ingestsDuring]),
    ),
  );
  parts.push(
    `The checker asked every serving thread, one request at a time each, about every VPA ingested so far and ${fmt(c.checker.vpas)} VPAs in all with known ones: ` +
      `${fmt(c.checker.requests)} answers, ${c.checker.failed} other than 200, ${c.checker.backward} behind the furthest answer the same thread had given ` +
      '(FLAGGED then CLEARED, evidence_count down, first_seen later, last_seen earlier, a source gone or its captured_at earlier).' +
      (c.checker.examples.length === 0 ? '' : ` Examples: ${c.checker.examples.join(' | ')}`),
  );
  if (c.windows !== undefined) {
    parts.push(
      `Who kept up with the load (${fmt(d.compactionRate ?? d.rate)} single lookups a second), sampled from the first signal: ${describeWindows(c.windows, d.compactionRate ?? d.rate)}. ` +
        `The load generator used ${c.load.cpuSeconds} s of CPU over the run and had at most ${fmt(c.load.maxOutstanding)} requests awaited at once.`,
    );
  }
  const m = d.memory;
  parts.push('## Live delta: memory');
  parts.push(
    table(
      ['server', 'resident, MiB', 'delta VPAs', 'delta evidence items', 'delta bytes', 'bytes per item'],
      [
        ['main server, loaded, idle, empty delta', fmt(m.loadedRssMiB), 0, 0, '', ''],
        ...(c.rssPeakMiB === undefined ? [] : [['main server, highest during the compactions (sampled every second)', fmt(c.rssPeakMiB), '', '', '', '']]),
        ['main server, after the compactions, before the large ingest', fmt(m.beforeLargeRssMiB), '', '', '', ''],
        [`main server with the large file (${fmt(d.large.items)} items, ${fmt(d.large.newVpas)} new VPAs, ${fmt(d.large.knownVpas)} known)`, fmt(m.withLargeRssMiB), fmt(m.deltaVpas), fmt(m.deltaEvidenceItems), fmt(m.deltaBytes), fmt(m.bytesPerItem, 1)],
        ['hot-path server, empty delta, idle, background threads gone', fmt(h.emptyRssMiB), h.emptyDeltaVpas, '', '', ''],
        ['hot-path server, large delta, idle, background threads gone', fmt(h.deltaRssMiB), fmt(h.deltaVpas), '', '', ''],
      ],
    ),
  );
  parts.push(`The large file was served by every thread ${fmt(m.largeFreshnessMs)} ms after its CLI exited (the server's merge ${m.largeMergeMs ?? '?'} ms).`);
  return parts;
}

function microRows(micro: readonly MicroResult[]): string {
  const rows: (string | number)[][] = [];
  for (const { file, report } of micro) {
    const list = (report.rows ?? report.index) as Row[] | undefined;
    // Timed passes, not operations: shown under Targets.
    if (file === 'watch-rescreen') continue;
    if (Array.isArray(list)) {
      for (const row of list) rows.push([file, row.task, fmt(row['ops/s']), row['mean ns'], row['p50 ns'], row['p99 ns']]);
    } else {
      for (const [name, value] of Object.entries(report)) {
        if (typeof value === 'number') rows.push([file, name, String(value), '', '', '']);
      }
    }
  }
  return table(['bench', 'task', 'ops/s', 'mean ns', 'p50 ns', 'p99 ns'], rows);
}

export function renderMarkdown(suite: SuiteResult): string {
  const m = suite.machine;
  const parts: string[] = [];
  parts.push(`# upi-risk benchmarks, ${fmt(suite.vpas)} flagged VPAs`);
  parts.push(
    `${suite.date.slice(0, 10)} · ${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Node ${m.node} · load generator on the same machine · options ${JSON.stringify(suite.options)}`,
  );
  parts.push('## Targets');
  parts.push(table(['figure', 'target', 'measured', ''], checks(suite).map(([f, t, v, met]) => [f, t, v, mark(met)])));

  for (const mode of suite.http) {
    const name = mode.tls ? 'TLS 1.3' : 'plain HTTP';
    parts.push(`## HTTP, ${name}: peak (wrk, ${suite.options.connections} connections), server on ${mode.serverThreads} thread(s), RSS ${fmt(mode.serverRssMiB)} MiB`);
    parts.push(
      table(
        [
          'scenario',
          'answer bytes',
          'service req/s',
          'ceiling req/s',
          'service / ceiling',
          'server CPU per request, service / ceiling',
          'ceiling with service headers',
          'non-2xx',
          'errors',
        ],
        mode.scenarios.map((s) => [
          s.scenario === 'batch' ? `batch of 100 (${fmt(s.service.requestsPerSecond * 100)} VPAs/s)` : s.scenario,
          fmt(s.bodyBytes),
          fmt(s.service.requestsPerSecond),
          fmt(s.ceiling.requestsPerSecond),
          `${fmt(s.ratio * 100, 1)}% (${ratioRangeText(s)})`,
          cpuPerRequestText(s),
          s.ceilingWithHeaders === null ? '' : `${fmt(s.ceilingWithHeaders.requestsPerSecond)} req/s (service at ${fmt((s.service.requestsPerSecond / s.ceilingWithHeaders.requestsPerSecond) * 100, 1)}%)`,
          s.rounds.reduce((sum, r) => sum + r.service.non2xx, 0),
          s.rounds.reduce((sum, r) => sum + r.service.errors, 0),
        ]),
      ),
    );
    parts.push(
      `Each scenario runs ${mode.scenarios[0]?.rounds.length ?? 0} rounds: wrk loads the service, then the ceiling (then, for single lookups, the ceiling writing the service's headers) for ${suite.options.seconds} s each. ` +
        "Rates are those of the round with the median service / ceiling ratio (the lower middle one for an even count); the range is the lowest and highest round's; non-2xx and errors are totals over all rounds. " +
        `Server CPU per request, the median over the rounds, is what the server process spent, all threads, user and kernel, divided by the requests answered: it depends far less than the rates on how the machine shares its ${suite.machine.cores} cores between the server and wrk, which moves the rates from run to run.`,
    );
    parts.push(`## HTTP, ${name}: latency at a constant rate (open loop), ms`);
    const rows: (string | number)[][] = [];
    for (const s of mode.scenarios) {
      for (const l of s.latency) {
        rows.push([
          s.scenario,
          `${l.share * 100}% (${fmt(l.rate)}/s)`,
          `${l.service.p50} / ${l.service.p99} / ${l.service.p999} / ${l.service.max}`,
          `${l.ceiling.p50} / ${l.ceiling.p99} / ${l.ceiling.p999} / ${l.ceiling.max}`,
          l.service.errors + l.service.non2xx,
          `${l.service.maxSendLag} / ${l.ceiling.maxSendLag}`,
        ]);
      }
    }
    parts.push(table(['scenario', 'rate (share of peak)', 'service p50 / p99 / p99.9 / max', 'ceiling p50 / p99 / p99.9 / max', 'failed', 'generator lag max, ms'], rows));
    parts.push(`## HTTP, ${name}: latency from a generator that sleeps between sends (wrk paced by think time), ms`);
    const pacedRows: (string | number)[][] = [];
    for (const s of mode.scenarios) {
      for (const l of s.latency) {
        // Reports written before paced runs existed have none.
        const p = l.paced as LatencyRow['paced'] | undefined;
        if (p === undefined) continue;
        pacedRows.push([
          s.scenario,
          `${l.share * 100}% (${fmt(p.service.achievedRate)}/s, ceiling ${fmt(p.ceiling.achievedRate)}/s)`,
          `${p.service.p50} / ${p.service.p99} / ${p.service.p999} / ${p.service.max}`,
          `${p.ceiling.p50} / ${p.ceiling.p99} / ${p.ceiling.p999} / ${p.ceiling.max}`,
          p.service.errors + p.service.non2xx,
          `${p.service.connections} × ${p.service.thinkMs} ms`,
          `${p.service.generatorCore} / ${p.ceiling.generatorCore}`,
        ]);
      }
    }
    parts.push(
      table(['scenario', 'share of peak (rate reached)', 'service p50 / p99 / p99.9 / max', 'ceiling p50 / p99 / p99.9 / max', 'failed', 'connections × mean think time', 'generator core, service / ceiling'], pacedRows),
    );
    parts.push(
      'Each connection waits a random think time (exponential) after every answer, so wrk sleeps between sends (the share of a core it used is given), where the open-loop generator above keeps a core busy. ' +
        "Latency runs from the write of a request to its answer; wrk corrects it for coordinated omission from each connection's mean cycle, so the open-loop figures stay the exact ones.",
    );
  }

  if (suite.swap !== null) {
    const s = suite.swap;
    parts.push('## Swap under load (plain HTTP, single lookups at half the peak)');
    parts.push(
      table(
        [
          'freshness under load (idle before it, twice)',
          'stall with swap',
          'window',
          'swap itself',
          'stall without',
          'requests',
          'failed',
          'p99 / p99.9 / max, ms',
          'generator lag max, ms',
          'resident after each rebuild, MiB',
        ],
        [
          [
            `${s.freshnessS} s (${s.idleFreshnessS[0]} s, ${s.idleFreshnessS[1]} s)`,
            `${s.stallMs} ms`,
            `${s.windowS} s`,
            `${s.swapMs} ms`,
            `${s.baselineStallMs} ms`,
            fmt(s.load.sent),
            s.failed,
            `${s.load.p99} / ${s.load.p999} / ${s.load.max}`,
            s.load.maxSendLag,
            s.residentMiB === undefined ? '' : s.residentMiB.map((mib) => fmt(mib)).join(', '),
          ],
        ],
      ),
    );
    const kept =
      s.buildIdleSeconds === 0
        ? 'with --build-idle-seconds 0, once the build threads had exited too'
        : `with --build-idle-seconds ${s.buildIdleSeconds ?? 'at its default'}`;
    const builtOn = s.buildThreads === undefined ? '' : `The server builds on ${s.buildThreads} background thread${s.buildThreads === 1 ? '' : 's'} (serve --build-threads). `;
    parts.push(
      `Measured once the server had read its stored evidence ahead of rebuilds (${s.readAheadS} s after it started serving). ` +
        builtOn +
        'Two ingests with no load come first (the first rebuild of the process, then a second); the swap under load is the third. ' +
        'The window with the swap runs from before the ingest until the replaced snapshot has been given back, plus a second; ' +
        'the window without runs as long, under the same load, after it, with the bench watching the server at least as much as during the swap ' +
        '(a CLI process started, then a verdict asked every 20 ms and /metrics read every 100 ms throughout). ' +
        'The open-loop generator times each request from when it was due, so time it fell behind its schedule (generator lag) counts as latency. ' +
        `Resident memory is read once each rebuild's file is written and the snapshot it replaced has been let go or handed to the next build, ${kept}; ` +
        'the third after the window without a rebuild.',
    );
  }
  if (suite.machineStall !== null) {
    const m = suite.machineStall;
    parts.push('## The machine\'s own stalls (machine-stall.bench.ts)');
    parts.push(
      'An idle process with a 1 ms timer, sharing nothing with the process beside it, which allocates and touches fresh memory as a build does:',
    );
    parts.push(
      table(
        ['longest stall, nothing else running', 'longest stall, while the other touches memory', 'memory touched', 'seconds per round'],
        [[`${m.idleStallMs} ms`, `${m.touchingStallMs} ms`, `${m.rounds} × ${m.gibPerRound} GiB`, m.roundSeconds.join(' ')]],
      ),
    );
    if (m.busyStallMs !== undefined) {
      parts.push(
        `The same idle process while the other keeps cores computing without pause at nice +10 (as build threads do) beside ${m.wakers} threads ` +
          `waking every millisecond (as the event-loop monitors of serve's main and serving threads do), ${m.busySeconds} s each:`,
      );
      parts.push(
        table(
          ['longest stall, every core computing', 'every core but one computing (serve\'s default build threads)'],
          [[`${m.busyStallMs.everyCore} ms`, `${m.busyStallMs.everyCoreButOne} ms`]],
        ),
      );
    }
  }

  if (suite.delta !== undefined && suite.delta !== null) parts.push(...deltaSection(suite.delta));
  if (suite.fleet !== undefined && suite.fleet !== null) parts.push(...fleetSection(suite.fleet));
  if (suite.corrections !== undefined && suite.corrections !== null) parts.push(...correctionsSection(suite.corrections));
  if (suite.memory !== undefined && suite.memory !== null) parts.push(...memorySection(suite.memory));
  if (suite.mirror !== undefined && suite.mirror !== null) parts.push(...mirrorSection(suite.mirror));

  if (suite.engine !== null) {
    parts.push('## Engine');
    parts.push(table(['figure', 'value'], Object.entries(suite.engine).map(([k, v]) => [k, String(v)])));
  }
  if (suite.micro.length > 0) {
    parts.push('## Micro benchmarks (tinybench)');
    parts.push(microRows(suite.micro));
    const headers = suite.micro.find((m) => m.file === 'answer-headers')?.report as
      | { headers: number; collections: Record<string, { scavenges: number; medianPauseMs?: number; meanPauseMs: number; maxPauseMs: number }> }
      | undefined;
    if (headers?.collections !== undefined) {
      parts.push(`Young-generation collections while answer-headers.bench.ts writes ${fmt(headers.headers)} answer heads, each with the next request id and remaining count:`);
      parts.push(
        table(
          ['numbers written by', 'scavenges', 'median pause, ms', 'mean, ms', 'longest, ms'],
          Object.entries(headers.collections).map(([name, c]) => [name, c.scavenges, c.medianPauseMs ?? '', c.meanPauseMs, c.maxPauseMs]),
        ),
      );
    }
  }
  return `${parts.join('\n\n')}\n`;
}
