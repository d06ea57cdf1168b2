import { constants as perfConstants, monitorEventLoopDelay, PerformanceObserver, type NodeGCPerformanceDetail, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { AggregatorRegistry, Counter, Gauge, Registry, type GaugeConfiguration, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { BuildReport } from '../builder/snapshot-builder.js';
import type { SnapshotView } from '../engine/snapshot-view.js';
import { snapshotBytes } from '../engine/snapshot-data.js';
import type { DeltaFigures } from '../service/served-data.js';
import { RequestStats, type MetricJson } from './request-stats.js';

/** Names of V8's collection kinds in the gc performance entries, for the `kind` label. */
const GC_KINDS = new Map<number, string>([
  [perfConstants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb'],
]);

/** The main thread's gauges whose values are read at each scrape from a function set later. */
type ScrapeReader = 'historyRecording' | 'residentBytes' | 'memoryLimit' | 'leanCompactions' | 'carriedBytes' | 'carriedDiskBytes' | 'reusableBytes' | 'replacedSnapshots' | 'buildThreads' | 'deltaVpas' | 'deltaItems' | 'deltaBytes' | 'deltaAge' | 'sinceCompaction' | 'storeConnected' | 'sinceCaughtUp' | 'versionsRecorded' | 'answersRecorded' | 'answerHistoryBytes' | 'answerHistoryIndexBytes' | 'hashRangesBytes';

/**
 * Prometheus metrics of one thread: request counts and latency
 * (RequestStats, counted without prom-client on the hot path) and
 * prom-client's registry for the rest. `json()` is what a serving thread
 * hands the main thread, which aggregates every thread's into one scrape.
 */

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly requests = new RequestStats();
  readonly rateLimited = new Counter({
    name: 'upi_risk_rate_limit_rejections_total',
    help: 'Requests answered 429, by kind (key quota or failed authentications per IP)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly servingThreadRestarts = new Counter({
    name: 'upi_risk_serving_thread_restarts_total',
    help: 'Serving threads started in place of one that failed',
    registers: [this.registry],
  });
  readonly snapshotVpas = this.#gauge({ name: 'upi_risk_snapshot_vpas', help: 'Flagged VPAs in the served snapshot' });
  readonly snapshotBytes = this.#gauge({
    name: 'upi_risk_snapshot_bytes',
    help: "Bytes of the served snapshot's arrays: one copy, in shared memory, read by every serving thread",
  });
  /** The served snapshot's bytes, found once per snapshot. */
  #snapshotBytesOf: { readonly id: string; readonly bytes: number } | null = null;
  readonly snapshotAge = this.#gauge({
    name: 'upi_risk_snapshot_age_seconds',
    help: 'Seconds since the newest evidence in the served snapshot was ingested',
  });
  readonly snapshotInfo = this.#gauge({
    name: 'upi_risk_snapshot_info',
    help: 'The served snapshot (value 1, id in the label)',
    labelNames: ['id'] as const,
  });
  /**
   * The longest event-loop stall since the previous scrape, per thread
   * (`main`, which builds and loads, and the serving threads `0`..`N-1`), so
   * a snapshot swap or any other synchronous work on a serving thread shows
   * up. Sampled every millisecond (prom-client's default event-loop metrics
   * sample every 10 ms and never reset, too coarse for a 5 ms budget).
   */
  readonly #loopDelay = monitorEventLoopDelay({ resolution: 1 });
  readonly #thread: string;
  readonly eventLoopDelayMax: Gauge<'thread'> = this.#gauge({
    name: 'upi_risk_event_loop_delay_max_seconds',
    help: 'Longest event-loop delay since the previous scrape, sampled every 1 ms, by thread (main, or a serving thread)',
    labelNames: ['thread'] as const,
    collect: () => {
      // The histogram starts empty (max 0) and is cleared on every scrape: each value covers one scrape interval.
      this.eventLoopDelayMax.set({ thread: this.#thread }, this.#loopDelay.max / 1e9);
      this.#loopDelay.reset();
    },
  });
  /**
   * The longest garbage-collection pause since the previous scrape, per
   * thread and kind: under load, collections (a thread's own, and another's
   * taking the cores) are a large part of a serving thread's longest
   * stalls (bench/MEASUREMENTS.md, "What a swap under load is made of"), and a
   * growing heap shows here before it shows in the latency. Counted from
   * V8's collection events, which cost nothing between collections. An
   * `incremental` entry times the start of incremental marking, not its
   * later steps.
   */
  readonly #gcPauseMax = new Map<string, number>();
  readonly gcPauseMax: Gauge<'thread' | 'kind'> = this.#gauge({
    name: 'upi_risk_gc_pause_max_seconds',
    help: 'Longest garbage-collection pause since the previous scrape, by thread and kind (minor, major, incremental, weakcb, other)',
    labelNames: ['thread', 'kind'] as const,
    collect: () => {
      // Every kind seen once keeps a series, at 0 for an interval without a pause of that kind.
      for (const [kind, seconds] of this.#gcPauseMax) {
        this.gcPauseMax.set({ thread: this.#thread, kind }, seconds);
        this.#gcPauseMax.set(kind, 0);
      }
    },
  });
  readonly heapUsed: Gauge<'thread'> = this.#gauge({
    name: 'upi_risk_heap_used_bytes',
    help: "Bytes of this thread's JavaScript heap in use (snapshots live outside it, in shared memory), by thread",
    labelNames: ['thread'] as const,
    collect: () => this.heapUsed.set({ thread: this.#thread }, getHeapStatistics().used_heap_size),
  });
  readonly #gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) this.#recordGc(entry);
  });
  readonly swapSeconds = this.#gauge({
    name: 'upi_risk_snapshot_swap_seconds',
    help: 'How long the last snapshot swap held this serving thread (wrapping the new arrays), by thread',
    labelNames: ['thread'] as const,
  });
  readonly lastBuildTime = this.#gauge({ name: 'upi_risk_last_build_timestamp_seconds', help: 'When the last build finished' });
  readonly lastBuildDuration = this.#gauge({ name: 'upi_risk_last_build_duration_seconds', help: 'How long the last build took' });
  readonly lastBuildReusedBytes = this.#gauge({
    name: 'upi_risk_last_build_reused_bytes',
    help: "Bytes of the last build's snapshot laid out in the memory of a replaced snapshot instead of new memory",
  });
  readonly residentBytes = this.#readAtScrape('residentBytes', {
    name: 'upi_risk_resident_bytes',
    help: "The process's resident memory (RSS): every thread, the snapshot and delta, what builds keep, and the allocator's slack",
  });
  readonly memoryLimitBytes = this.#readAtScrape('memoryLimit', {
    name: 'upi_risk_memory_limit_bytes',
    help: 'The memory compactions plan under (serve --max-memory, or the control group limit); 0 without one',
  });
  readonly leanCompactions = this.#readAtScrape('leanCompactions', {
    name: 'upi_risk_lean_compactions',
    help: 'Compactions since start that ran lean to stay under the memory limit (the carried build state let go, every evidence file read again)',
  });
  readonly buildCarriedBytes = this.#readAtScrape('carriedBytes', {
    name: 'upi_risk_build_carried_bytes',
    help: 'Memory kept so the next build reads only new evidence files (evidence ids, and records not yet written to state/carry): from the last build, or read ahead at start (0 with --full-rebuilds)',
  });
  readonly buildCarriedDiskBytes = this.#readAtScrape('carriedDiskBytes', {
    name: 'upi_risk_build_carried_disk_bytes',
    help: "The carried records written to the data directory (state/carry) instead of kept in memory, read back by builds and corrections through the page cache; and the files the carry kept at the last stop names, held until the next stop keeps another",
  });
  readonly buildReusableBytes = this.#readAtScrape('reusableBytes', {
    name: 'upi_risk_build_reusable_bytes',
    help: "A replaced snapshot's memory (its buffers' size) kept for the next build's snapshot: until a build takes it, or --build-idle-seconds pass with no build running",
  });
  readonly buildThreads = this.#readAtScrape('buildThreads', {
    name: 'upi_risk_build_threads',
    help: 'Build threads alive, with the working memory they keep: those of a build, and the one that merges ingests into the live delta and reads the stored evidence at start, while they run and for --build-idle-seconds after (at least a second)',
  });
  readonly replacedSnapshotsHeld = this.#readAtScrape('replacedSnapshots', {
    name: 'upi_risk_replaced_snapshots_held',
    help: 'Replaced snapshots whose memory is not yet given back: kept until every serving thread has dropped them',
  });
  readonly deltaVpas = this.#readAtScrape('deltaVpas', {
    name: 'upi_risk_delta_vpas',
    help: 'VPAs answered from the live delta beside the snapshot: new ones, and known ones with new evidence',
  });
  readonly deltaItems = this.#readAtScrape('deltaItems', {
    name: 'upi_risk_delta_evidence_items',
    help: 'Evidence items in the live delta (after deduplication), waiting for the next compaction',
  });
  readonly deltaBytes = this.#readAtScrape('deltaBytes', {
    name: 'upi_risk_delta_bytes',
    help: 'Memory the live delta holds: its arrays, and its records kept to merge again over the next snapshot',
  });
  readonly deltaAge = this.#readAtScrape('deltaAge', {
    name: 'upi_risk_delta_age_seconds',
    help: 'How long ago the oldest evidence in the live delta was applied (0 when it is empty); compaction starts past --compact-minutes',
  });
  readonly sinceCompaction = this.#readAtScrape('sinceCompaction', {
    name: 'upi_risk_seconds_since_compaction',
    help: 'Seconds since the snapshot served was built or adopted (the last compaction)',
  });
  readonly hashRangesBytes = this.#readAtScrape('hashRangesBytes', {
    name: 'upi_risk_hash_ranges_bytes',
    help: "Memory of the served snapshot's VPAs by hash: the order and the records range lookups and the mirror read (a replaced snapshot's until the new one's are made)",
  });
  readonly storeConnected = this.#readAtScrape('storeConnected', {
    name: 'upi_risk_store_connected',
    help: "Fleet followers: 1 when the last look at the PostgreSQL store succeeded, 0 while it cannot be reached (what is served stays)",
  });
  readonly sinceCaughtUp = this.#readAtScrape('sinceCaughtUp', {
    name: 'upi_risk_store_seconds_since_caught_up',
    help: "Fleet followers: seconds since the follower last read to the end of the store's evidence log (the age of its data)",
  });
  readonly versionsRecorded = this.#readAtScrape('versionsRecorded', {
    name: 'upi_risk_data_versions_recorded',
    help: 'Whether each data version served is recorded, so GET /v1/data-versions resolves it: 1; 0 when the record is off (--history-days 0) or cannot be read or written (ERR_HISTORY in the log)',
  });
  readonly answersRecorded = this.#readAtScrape('answersRecorded', {
    name: 'upi_risk_answer_history_recorded',
    help: 'Whether the history of answers can be read, so GET /v1/verify/upi/history tells it (a fleet follower: from the store): 1; 0 when it is not kept (--history-days 0) or cannot be read or written (ERR_HISTORY in the log)',
  });
  readonly historyRecording = this.#readAtScrape('historyRecording', {
    name: 'upi_risk_answer_history_recording',
    help: "Fleet followers: 1 while this follower holds the history lease and records the fleet's history of answers; with none at 1, instants go unrecorded",
  });
  readonly answerHistoryBytes = this.#readAtScrape('answerHistoryBytes', {
    name: 'upi_risk_answer_history_bytes',
    help: 'Bytes of the history of answers (history/changes.log)',
  });
  readonly answerHistoryIndexBytes = this.#readAtScrape('answerHistoryIndexBytes', {
    name: 'upi_risk_answer_history_index_bytes',
    help: "Memory of the history of answers' index (each VPA's newest change, which every state served is compared with): a data directory's server, and a fleet follower while it records; 0 otherwise",
  });
  /** Where the main thread's read-at-scrape gauges get their values (set with the watch methods); unset elsewhere. */
  readonly #readers: Partial<Record<ScrapeReader, () => number>> = {};

  /** `thread` names this thread in per-thread metrics: `main`, or a serving thread's index. */
  constructor(thread = 'main') {
    this.#thread = thread;
    this.#loopDelay.enable();
    this.#gcObserver.observe({ entryTypes: ['gc'] });
  }

  /** Stop observing this thread's collections: for an instance dropped while its thread goes on (an observer keeps it reachable). */
  close(): void {
    this.#gcObserver.disconnect();
    this.#loopDelay.disable();
  }

  #recordGc(entry: PerformanceEntry): void {
    // Node's gc entries carry the kind in `detail`, which the typings leave off the base entry type.
    const detail = (entry as PerformanceEntry & { readonly detail?: NodeGCPerformanceDetail }).detail;
    const kind = GC_KINDS.get(detail?.kind ?? -1) ?? 'other';
    this.#gcPauseMax.set(kind, Math.max(this.#gcPauseMax.get(kind) ?? 0, entry.duration / 1000));
  }

  /** A gauge read from `#readers[reader]` at each scrape, when that is set. */
  #readAtScrape(reader: ScrapeReader, config: { name: string; help: string }): Gauge<string> {
    const gauge: Gauge<string> = this.#gauge({
      ...config,
      collect: () => {
        const read = this.#readers[reader];
        if (read !== undefined) gauge.set(read());
      },
    });
    return gauge;
  }

  /**
   * A gauge in this thread's registry. Gauges describe one shared state (the
   * served snapshot, the last build), so when the main thread aggregates the
   * threads' metrics their values combine with max, not summed.
   */
  #gauge<T extends string>(config: Omit<GaugeConfiguration<T>, 'aggregator' | 'registers'>): Gauge<T> {
    return new Gauge({ ...config, aggregator: 'max', registers: [this.registry] });
  }

  /** Every metric of this thread, in prom-client's JSON form. */
  async json(): Promise<MetricJson[]> {
    return [...this.requests.toJson(), ...((await this.registry.getMetricsAsJSON()) as unknown as MetricJson[])];
  }

  /** Prometheus text of these metrics and of the other threads' (from their `json()`). */
  async text(others: readonly (readonly MetricJson[])[] = []): Promise<string> {
    // The cast only bridges prom-client's typings (see MetricJson); the shapes are the ones it produces.
    const parts = [await this.json(), ...others] as unknown as MetricObjectWithValues<MetricValue<string>>[][];
    return AggregatorRegistry.aggregate(parts).metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  observeSwap(seconds: number): void {
    this.swapSeconds.set({ thread: this.#thread }, seconds);
  }

  /** Refresh the snapshot gauges; called on every swap and before each scrape. */
  observeSnapshot(view: SnapshotView, now = Date.now()): void {
    const meta = view.meta;
    this.snapshotVpas.set(meta.vpaCount);
    if (this.#snapshotBytesOf?.id !== meta.id) this.#snapshotBytesOf = { id: meta.id, bytes: snapshotBytes(view.data) };
    this.snapshotBytes.set(this.#snapshotBytesOf.bytes);
    this.snapshotAge.set(Math.max(0, (now - view.asOf) / 1000));
    this.snapshotInfo.reset();
    this.snapshotInfo.set({ id: meta.id }, 1);
  }

  observeBuild(finishedAt: number, report: Pick<BuildReport, 'durationMs' | 'reusedBytes'>): void {
    this.lastBuildTime.set(finishedAt / 1000);
    this.lastBuildDuration.set(report.durationMs / 1000);
    this.lastBuildReusedBytes.set(report.reusedBytes);
  }

  /** Read the process's resident memory at every scrape (main thread only: it is the whole process's). */
  watchResidentBytes(read: () => number = () => process.memoryUsage.rss()): void {
    this.#readers.residentBytes = read;
  }

  /** Read the builder's carried memory at every scrape: it changes at start (the evidence read ahead) as well as with builds. */
  watchCarriedBytes(read: () => number, readOnDisk: () => number = () => 0): void {
    this.#readers.carriedBytes = read;
    this.#readers.carriedDiskBytes = readOnDisk;
  }

  /** Read the memory limit and the compactions run lean under it at every scrape (main thread only). */
  watchMemoryLimit(limitBytes: number | null, leanCompactions: () => number): void {
    this.#readers.memoryLimit = () => limitBytes ?? 0;
    this.#readers.leanCompactions = leanCompactions;
  }

  /** Read the replaced snapshot's memory the builder holds for the next build at every scrape (main thread only). */
  watchReusableBytes(read: () => number): void {
    this.#readers.reusableBytes = read;
  }

  /** Read the number of build threads alive at every scrape (main thread only). */
  watchBuildThreads(read: () => number): void {
    this.#readers.buildThreads = read;
  }

  /** Read the live delta's figures at every scrape (main thread only). */
  watchDelta(read: () => DeltaFigures): void {
    this.#readers.deltaVpas = () => read().vpas;
    this.#readers.deltaItems = () => read().evidenceItems;
    this.#readers.deltaBytes = () => read().bytes;
    this.#readers.deltaAge = () => read().ageSeconds;
    this.#readers.sinceCompaction = () => read().secondsSinceCompaction;
  }

  /** Read the memory of the snapshot's hash ranges at every scrape (main thread only). */
  watchHashRanges(read: () => number): void {
    this.#readers.hashRangesBytes = read;
  }

  /** Read a follower's hold on the store at every scrape (main thread only). */
  watchStore(read: () => { readonly connected: boolean; readonly caughtUpAt: number }): void {
    this.#readers.storeConnected = () => (read().connected ? 1 : 0);
    this.#readers.sinceCaughtUp = () => Math.max(0, (Date.now() - read().caughtUpAt) / 1000);
  }

  /** Read at every scrape whether the record of data versions served can be used (main thread only). */
  watchVersionRecord(unavailable: () => string | null): void {
    this.#readers.versionsRecorded = () => (unavailable() === null ? 1 : 0);
  }

  /** Read at every scrape whether the history of answers can be read, the bytes of its file and of its index in memory (main thread only). */
  watchAnswerHistory(unavailable: () => string | null, bytes: () => number, indexBytes: () => number): void {
    this.#readers.answersRecorded = () => (unavailable() === null ? 1 : 0);
    this.#readers.answerHistoryBytes = bytes;
    this.#readers.answerHistoryIndexBytes = indexBytes;
  }

  /** Read at every scrape whether this follower records the fleet's history of answers (main thread only). */
  watchHistoryRecording(recording: () => boolean): void {
    this.#readers.historyRecording = () => (recording() ? 1 : 0);
  }

  /** Read the number of replaced snapshots still held at every scrape (main thread only). */
  watchReplacedSnapshots(read: () => number): void {
    this.#readers.replacedSnapshots = read;
  }
}
