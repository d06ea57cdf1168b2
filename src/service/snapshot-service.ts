import { watch, type FSWatcher } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname } from 'node:path';
import type { DataDir } from '../common/data-dir.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { BuildLockedError, messageOf } from '../common/errors.js';
import { enableCollector, threadCollector } from '../common/collector.js';
import { SnapshotView } from '../engine/snapshot-view.js';
import { earliestFirstSeen, snapshotBytes, type SnapshotData } from '../engine/snapshot-data.js';
import { listSnapshots, loadNewestValidSnapshot } from '../engine/snapshot-files.js';
import { loadSnapshotOffThread } from '../engine/snapshot-loader.js';
import { listEvidenceFiles } from '../evidence/store.js';
import { SnapshotBuilder, type BuildReport, type GatheredEvidence, type KeptCarryReport } from '../builder/snapshot-builder.js';
import { parseCacheDir } from '../builder/parse-cache.js';
import { removeStaleTempFiles } from '../common/temp-cleanup.js';
import { ServingView, servedAsOf } from '../engine/serving-view.js';
import type { DeltaData } from '../engine/delta-data.js';
import { emptyDelta, type AppliedFile } from '../builder/delta-merge.js';
import { countsFrom } from '../builder/scoring.js';
import { PositionReserve } from './position-reserve.js';
import { readLastServed, recordLastServed } from './last-served-snapshot.js';
import type { ServedVersions } from '../history/served-versions.js';
import { dataVersion } from '../engine/delta-data.js';
import type { AnswerHistory, ComparedAhead, ServedChange } from '../history/answer-changes.js';
import { prepareToServe, type Preparation, type ServedData, type SwapEvent } from './served-data.js';
import { subscribe } from '../common/listeners.js';
import { NO_CORRECTIONS, countsUnderClearance, type CorrectionSource, type CorrectionState } from '../evidence/corrections.js';
import type { CorrectionEngine, EvidenceItemView } from './corrections.js';
import { clearancesByPartition } from '../builder/snapshot-builder.js';
import type { ClearanceEntry } from '../builder/clearance-filter.js';
import type { CarriedItem } from '../builder/carry-reader.js';
import { FLAG_SCREENSHOT } from '../builder/record-codec.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../vpa/categories.js';
import { formatIso } from '../common/time.js';
import { BuildMemory, samplePeak, type BuildMemoryPlan } from './build-memory.js';

/**
 * After a lean build, how long the stored evidence waits to be read again:
 * at most CARRY_AGAIN_MS, or CARRY_AFTER_LET_GO_MS once the replaced
 * snapshot is let go (its memory is given back a second after:
 * snapshot-release.ts), so that the read's working memory is never beside it.
 */
const CARRY_AGAIN_MS = 10_000;
const CARRY_AFTER_LET_GO_MS = 2_000;
/** How often a start that waits for another process's build looks for its snapshot, ms; and how often it says it still waits. */
const START_BUILD_WAIT_MS = 500;
const START_WAIT_LOG_MS = 60_000;

/** The process's resident memory, bytes. */
const residentBytes = (): number => process.memoryUsage.rss();

export interface SnapshotServiceOptions {
  readonly dataDir: DataDir;
  readonly logger?: Logger;
  /** How often to look for new evidence and new snapshots, ms. 0 disables the watch. */
  readonly pollMs?: number;
  /** Threads for background builds (default: defaultBuildThreads()). */
  readonly buildThreads?: number;
  /**
   * Keep each background build's deduplicated records, so the next one
   * parses and deduplicates only new evidence files (default true; see
   * BuilderOptions.incremental).
   */
  readonly incrementalBuilds?: boolean;
  /**
   * How long the build threads, their working memory and a replaced
   * snapshot's memory wait for the next background build, ms (default two
   * minutes; 0: given back as each build ends; see BuilderOptions.idleTimeoutMs).
   */
  readonly buildIdleMs?: number;
  readonly urlMemberCap?: number;
  /** Scoring reference time for background builds; defaults to the build's own clock. */
  readonly scoredAt?: () => number;
  /**
   * Evidence captured more than this many ms before a build's scoring time
   * does not count (BuildOptions.evidenceMaxAgeMs; default 0, never). With
   * it, a compaction runs at least every `compaction.afterMs` while the
   * snapshot served holds evidence expired since, so a VPA whose evidence
   * has all expired is CLEARED within that time.
   */
  readonly evidenceMaxAgeMs?: number;
  /**
   * When the live delta is folded into a new snapshot (a compaction): once
   * it holds more than `vpas` VPAs, or its oldest evidence was applied more
   * than `afterMs` ago (defaults: DEFAULT_COMPACTION). Only with
   * incremental builds: without them every ingest rebuilds the snapshot.
   */
  readonly compaction?: Partial<CompactionPolicy>;
  /**
   * The corrections recorded for this data directory (retractions and
   * clearances; evidence/corrections.ts). Builds and merges count evidence
   * under them, and `apply` serves a new one within moments. Default: none.
   */
  readonly corrections?: CorrectionSource;
  /**
   * The memory this process may use, bytes (`serve --max-memory`, or the
   * control group's limit): a compaction that would not fit beside what is
   * held runs lean (build-memory.ts). Default: none, every build as usual;
   * without incremental builds there is no carried state to let go, and it
   * changes nothing.
   */
  readonly memoryLimitBytes?: number;
  /**
   * Where each state served is recorded, before it is served, with the time
   * it began to be (history/served-versions.ts). Default: not recorded.
   */
  readonly versions?: ServedVersions;
  /**
   * Where what each state changes in the answers is recorded, before it is
   * served (history/answer-changes.ts). Default: not recorded.
   */
  readonly answers?: AnswerHistory;
}

export interface CompactionPolicy {
  readonly vpas: number;
  readonly afterMs: number;
}

/** 100,000 VPAs or ten minutes (docs/design.md, "The live delta"). */
export const DEFAULT_COMPACTION: CompactionPolicy = { vpas: 100_000, afterMs: 10 * 60_000 };

/**
 * Keeps what is served, a snapshot and the live delta over it, and replaces
 * them. Readers take `view` once per request: every change is one reference
 * assignment, so a request in flight finishes on the view it started with
 * and none ever sees a half-built index.
 *
 * New evidence is merged into the delta within moments of its ingest,
 * whatever the size of the snapshot (builder/delta-merge.ts); a full build
 * (a compaction) folds the delta into a new snapshot in the background when
 * the delta grows past the policy (CompactionPolicy), on `compact()`, or
 * when another process writes a newer snapshot. The new snapshot and the
 * rest of the delta, what arrived while it was built, are swapped in
 * together. Decoding happens on a loader thread, building and merging on
 * the builder's threads, never on a serving thread. Without incremental
 * builds there is no delta: every ingest rebuilds the snapshot.
 */
export class SnapshotService implements ServedData, CorrectionEngine {
  #current: SnapshotView;
  #delta: DeltaData;
  #view: ServingView;
  /** The records the delta holds, by file, to merge again over the next snapshot. */
  #applied: AppliedFile[] = [];
  readonly #options: SnapshotServiceOptions;
  readonly #policy: CompactionPolicy;
  readonly #logger: Logger;
  readonly #builder: SnapshotBuilder;
  /** Positions of the versions this service serves, unique in the data directory. */
  readonly #positions: PositionReserve;
  readonly #listeners: ((event: SwapEvent) => void)[] = [];
  readonly #deltaListeners: ((delta: DeltaData) => void)[] = [];
  readonly #preparations: Preparation[] = [];
  readonly #buildListeners: ((report: BuildReport) => void)[] = [];
  readonly #buildFailureListeners: ((error: unknown, durationMs: number) => void)[] = [];
  readonly #badSnapshots = new Set<string>();
  /** Ids of snapshots another process wrote with another age limit on evidence (SnapshotMeta.evidenceMaxAgeMs): never adopted. */
  readonly #otherLimit = new Set<string>();
  /** Changes of what is served (delta merges, swaps), one at a time, in order. */
  #changes: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  #watcher: FSWatcher | null = null;
  #refreshing: Promise<void> | null = null;
  /** The adoption of a snapshot another process wrote, under way (never rejects). */
  #adopting: Promise<void> | null = null;
  /** A snapshot this process assembled and is swapping in: its file, written meanwhile, is not adopted as another process's. */
  #swappingOwn: string | null = null;
  #again = false;
  #compacting: Promise<void> | null = null;
  /** Why the last build could not run (another process holds the lock); logged once, not at every poll. */
  #skippedBecause: string | null = null;
  #closed = false;
  #lastBuild: BuildReport | null = null;
  /** When the snapshot served was built or adopted here (Date.now()). */
  #lastCompaction = Date.now();
  /** How many of the retracted ids (CorrectionState.retracted, in insertion order) the builder's carry has been told of. */
  #markedRetractions = 0;
  /** Plans each build's memory under the limit; null without one. */
  readonly #memory: BuildMemory | null;
  /** The read of the stored evidence after a lean build, while it waits (#readCarryAgainIn). */
  #carryAgain: NodeJS.Timeout | null = null;
  /** Whether a replaced snapshot was let go since the last build began (#readCarryAgainIn). */
  #letGoSinceLean = false;
  /** The snapshot's earliest first_seen, found once per snapshot (#oldestCapture). */
  #oldest: { readonly id: string; readonly at: number } | null = null;

  private constructor(options: SnapshotServiceOptions, builder: SnapshotBuilder, first: SnapshotView, firstDelta: DeltaData, positions: PositionReserve) {
    this.#options = options;
    this.#positions = positions;
    this.#policy = { ...DEFAULT_COMPACTION, ...options.compaction };
    this.#logger = options.logger ?? silentLogger;
    this.#builder = builder;
    this.#memory = options.memoryLimitBytes === undefined || options.incrementalBuilds === false ? null : new BuildMemory(options.memoryLimitBytes);
    this.#current = first;
    this.#delta = firstDelta;
    this.#view = new ServingView(first, this.#delta);
  }

  /**
   * Start from the newest valid snapshot without rebuilding, with every
   * evidence file stored after it merged into the delta. A snapshot is built
   * first when none loads, or none as new as the one last served
   * (last-served-snapshot.ts).
   */
  static async start(options: SnapshotServiceOptions): Promise<SnapshotService> {
    const logger = options.logger ?? silentLogger;
    const incremental = options.incrementalBuilds ?? true;
    let service: SnapshotService | null = null;
    const corrections = options.corrections;
    // Before the builder's first collection: the read-ahead at start lets go of its records' shared memory before any
    // serving thread starts (EdgePool.start enables it too), and without `gc` that memory stayed until a collection that
    // an idle main thread may not make for minutes (bench/MEASUREMENTS.md#collector-at-start).
    enableCollector();
    const builder = new SnapshotBuilder({
      ...(corrections === undefined ? {} : { corrections: () => corrections.state() }),
      niceIncrement: BACKGROUND_NICE,
      idleTimeoutMs: options.buildIdleMs ?? DEFAULT_BUILD_IDLE_MS,
      incremental,
      // Corrections read the records of their VPAs from the carry.
      indexCarry: true,
      // Between builds the records are read from files, not held (spilled-segments.ts).
      spillDir: options.dataDir.carry,
      onSpillFailed: (error: unknown) => logger.warn({ err: String(error) }, 'carried records could not be written to the data directory; they stay in memory'),
      // Kept at a stop, so that a restart does not read every evidence file again before it merges an ingest (kept-carry.ts).
      keepCarry: true,
      served: () => (service === null ? undefined : new Set([...service.#current.meta.evidenceFiles, ...service.#delta.meta.files])),
      onKeptCarry: (report: KeptCarryReport) => {
        if (report.used) logger.info({ files: report.files, bytes: report.bytes, ms: Math.round(report.ms) }, 'stored evidence read from the carry kept at the last stop');
        else logger.warn({ reason: report.reason, ms: Math.round(report.ms) }, 'the carry kept at the last stop is not used; every evidence file is read');
      },
      onKeepFailed: (error: unknown) => logger.warn({ err: String(error) }, 'the carry was not kept for the next start, which reads every evidence file'),
      collect: () => threadCollector()?.(),
      // Compactions are minutes apart: kept for the next, the working memory would stand beside both snapshots at the swap.
      releaseWorkingMemory: true,
      threads: options.buildThreads ?? defaultBuildThreads(),
      // Without incremental builds there is no delta: what a build reads, it builds.
      ...(incremental
        ? {
            onEvidence: (evidence: GatheredEvidence) => {
              if (service !== null) service.#merge(evidence);
            },
          }
        : {}),
    });
    try {
      // Before this process writes anything: temporary files left in the data directory by writers
      // that were killed (ingests, builds, earlier servers) are removed once, whoever left them.
      // Files of writers still running stay (temp-cleanup.ts). Each build sweeps its own folders again.
      const dir = options.dataDir;
      await removeStaleTempFiles([dir.evidence, dir.snapshots, dir.state, parseCacheDir(dir.state), dirname(dir.versions)], logger);
      // Never a snapshot older than the one last served: a compaction's is served before its file is written.
      const lastServed = await readLastServed(dir);
      const atLeast = lastServed.kind === 'snapshot' ? lastServed.snapshot : '';
      let first: SnapshotView | null = null;
      const bad = new Set<string>();
      if (lastServed.kind === 'unreadable') {
        logger.warn({ path: dir.servedSnapshot, reason: lastServed.reason }, 'the record of the snapshot last served cannot be read; building a snapshot before serving');
      } else {
        first = await loadNewest(dir, logger, bad, '', atLeast);
        if (first === null && lastServed.kind === 'snapshot') {
          logger.warn({ snapshot: lastServed.snapshot }, 'the snapshot last served was not written or does not load; building one before serving, so that no answer goes back');
        }
      }
      const positions = await PositionReserve.open(dir, first !== null || lastServed.kind !== 'none');
      // Positions grow in the record of versions served, or it cannot find them: past any recorded
      // (a positions file restored from an older copy would hand them out again).
      positions.skipPast(options.versions?.highestPosition ?? 0);
      let lastBuild: BuildReport | null = null;
      if (first === null) {
        if (lastServed.kind === 'none') logger.info({ dataDir: options.dataDir.root }, 'no loadable snapshot; building one');
        ({ first, lastBuild } = await buildFirst(builder, options, logger, atLeast, bad));
      }
      if (lastServed.kind !== 'snapshot' || lastServed.snapshot !== first.meta.id) await markServed(dir, first.meta.id, logger);
      const firstDelta = await emptyDeltaOver(first, positions, options.versions);
      const serving = new SnapshotService(options, builder, first, firstDelta, positions);
      service = serving;
      service.#lastBuild = lastBuild;
      logger.info(snapshotFields(first), 'serving snapshot');
      if (incremental) {
        const inSnapshot = new Set(first.meta.evidenceFiles);
        if ((await listEvidenceFiles(dir)).some((name) => !inSnapshot.has(name))) {
          // Evidence the snapshot does not hold is served from the start: read it all now (the
          // deduplication needs every id), and merge what is new into the delta.
          await service.#absorb();
        } else if (lastBuild === null) {
          // Read the evidence now, in the background, so the first ingest reads only the new file.
          const started = performance.now();
          builder.prime(options.dataDir).then(
            () => {
              if (builder.carriedBytes > 0) {
                logger.info({ ms: Math.round(performance.now() - started), carriedBytes: builder.carriedBytes }, 'stored evidence read ahead of ingests');
              }
            },
            (error: unknown) => serving.#failed(error, 'reading stored evidence ahead of ingests failed; the next ingest reads every file'),
          );
        }
      }
      // Corrections recorded after the snapshot was built are served from the start.
      if (incremental) {
        const since = corrections?.vpasSince(first.meta.correctionSequence) ?? [];
        if (since.length > 0) await service.#queueCorrection(since);
      } else if (service.#correctionsUnbuilt()) {
        // Before serving, as the delta would serve them; a build that fails leaves the snapshot served, and each pass tries again.
        await service.#build('corrections recorded after the snapshot was built').catch((error: unknown) =>
          logger.error({ err: String(error) }, 'corrections recorded after the snapshot could not be built yet; serving the snapshot, and trying again'),
        );
      }
      // Merges at start record the states they make; the first is recorded only when it is what is
      // served, in the queue of changes, so that a merge queued meanwhile comes after it.
      await serving.#queueChange(async () => {
        if (serving.#delta === firstDelta) await serving.#recordServed(first, firstDelta, 'snapshot');
      }, 'recording the first state served');
      const pollMs = options.pollMs ?? 1000;
      if (pollMs > 0) {
        service.#schedule(pollMs);
        service.#watchEvidence();
      }
      return service;
    } catch (error) {
      await builder.close();
      throw error;
    }
  }

  /** The snapshot answering now, beside the delta (`view` has both). */
  get current(): SnapshotView {
    return this.#current;
  }

  /** What answers now: the snapshot and the delta. Take it once per request and use that reference throughout. */
  get view(): ServingView {
    return this.#view;
  }

  /** The live delta over `current`. */
  get delta(): DeltaData {
    return this.#delta;
  }

  /** Bytes the delta holds: its arrays, and its records kept to merge again over the next snapshot. */
  get deltaBytes(): number {
    return this.#delta.meta.bytes + this.#applied.reduce((sum, a) => sum + a.records.byteLength, 0);
  }

  /** When the snapshot served was built or adopted here, epoch ms. */
  get lastCompaction(): number {
    return this.#lastCompaction;
  }

  /** Whether a compaction is running. */
  get compacting(): boolean {
    return this.#compacting !== null;
  }

  get policy(): CompactionPolicy {
    return this.#policy;
  }

  /**
   * Let the next rebuild lay out its snapshot in the memory of `data`, a
   * snapshot this service has replaced and that no thread reads any more
   * (SnapshotBuilder.reuseMemoryOf says what the caller vouches for).
   * Returns whether anything of it is held.
   */
  reuseMemoryOf(data: SnapshotData): boolean {
    // Never the one being served, whatever the caller believes.
    if (data === this.#current.data) return false;
    // Under a memory limit the last build came near, a replaced snapshot's memory is given back at once,
    // and the evidence is read again once it is (a second later, when the caller has let go).
    if (this.#memory?.tight === true) {
      this.#letGoSinceLean = true;
      if (this.#carryAgain !== null) this.#readCarryAgainIn(CARRY_AFTER_LET_GO_MS);
      return false;
    }
    return this.#builder.reuseMemoryOf(data);
  }

  /** Build threads alive, the delta's and the start-up read's included (SnapshotBuilder.liveThreads). */
  get buildThreads(): number {
    return this.#builder.liveThreads;
  }

  /** The build pool's threads alive (SnapshotBuilder.buildPoolThreads). */
  get buildPoolThreads(): number {
    return this.#builder.buildPoolThreads;
  }

  /** A replaced snapshot's memory held for the next rebuild's snapshot (reuseMemoryOf). */
  get reusableBytes(): number {
    return this.#builder.reusableBytes;
  }

  /** Memory kept so the next build and ingest read only new evidence files (0 with incrementalBuilds off). */
  get carriedBytes(): number {
    return this.#builder.carriedBytes;
  }

  /** Bytes of the carried records in files of the data directory's state (state/carry). */
  get carriedDiskBytes(): number {
    return this.#builder.spilledBytes;
  }

  get lastBuild(): BuildReport | null {
    return this.#lastBuild;
  }

  /** Compactions run lean under the memory limit (SnapshotServiceOptions.memoryLimitBytes). */
  get leanBuilds(): number {
    return this.#memory?.leanBuilds ?? 0;
  }

  onSwap(listener: (event: SwapEvent) => void): () => void {
    return subscribe(this.#listeners, listener);
  }

  beforeServing(prepare: Preparation): () => void {
    return subscribe(this.#preparations, prepare);
  }

  /** Called with every new state of the delta over the same snapshot (a swap brings its own, in SwapEvent). */
  onDelta(listener: (delta: DeltaData) => void): () => void {
    return subscribe(this.#deltaListeners, listener);
  }

  /** Called after every background build (for metrics). */
  onBuild(listener: (report: BuildReport) => void): void {
    this.#buildListeners.push(listener);
  }

  /** Called when a build fails (not when it is skipped for another process's build), with how long it ran. */
  onBuildFailed(listener: (error: unknown, durationMs: number) => void): void {
    this.#buildFailureListeners.push(listener);
  }

  /**
   * Bring what is served up to date: adopt a newer snapshot written by
   * another process, merge evidence stored since into the delta (or, without
   * incremental builds, rebuild), and start a compaction when the policy
   * says so. Resolves once the evidence found is served and a newer
   * snapshot found is (its adoption runs beside the rest: ingests and
   * polls do not wait for it); a compaction it starts runs on. Concurrent
   * calls share one run, and a call during a run makes it run once more
   * afterwards.
   */
  async refresh(): Promise<void> {
    await this.#pass();
    await this.#adopting;
  }

  /** A look at the data directory (#refresh), one at a time; it starts a newer snapshot's adoption, and does not wait for it. */
  #pass(): Promise<void> {
    if (this.#refreshing !== null) {
      // Evidence may have landed after the running pass listed the folder: look again when it ends.
      this.#again = true;
      return this.#refreshing;
    }
    this.#refreshing = this.#refresh().finally(() => {
      this.#refreshing = null;
      if (this.#again && !this.#closed) {
        this.#again = false;
        void this.#refreshInBackground();
      }
    });
    return this.#refreshing;
  }

  /**
   * Fold the delta into a new snapshot now (the policy, a signal, an
   * operator): resolves when the new snapshot is served, or with the
   * running compaction when one runs. A failure is logged here, and
   * rejects; what was served stays.
   */
  compact(why = 'compaction requested'): Promise<void> {
    if (this.#compacting !== null) return this.#compacting;
    if (this.#closed) return Promise.resolve();
    this.#compacting = this.#build(why)
      .catch((error: unknown) => {
        this.#failed(error, 'compaction failed; still serving the snapshot and delta before it');
        throw error;
      })
      .finally(() => {
        this.#compacting = null;
      });
    return this.#compacting;
  }

  /** CorrectionEngine: which of `ids` are stored evidence, with the VPA each names. */
  locate(ids: readonly string[]): Promise<ReadonlyMap<string, string>> {
    return this.#builder.locateEvidence(this.#options.dataDir, ids);
  }

  /** CorrectionEngine: the urls of the VPA's sources as served now (every source a verdict lists). */
  sourceUrls(upi: string): readonly string[] {
    return this.#view.verdict(upi).sources.map((source) => source.url);
  }

  /** CorrectionEngine: the VPA's stored items, retracted ones left out, oldest capture first; `counts` as served now. */
  async evidenceOf(upi: string): Promise<readonly EvidenceItemView[]> {
    const found = await this.#builder.retractAndRead(this.#options.dataDir, this.#unmarkedRetractions(), new Set([upi]), { withIds: true });
    const meta = this.#current.meta;
    const from = countsFrom(meta.scoredAt, meta.evidenceMaxAgeMs);
    const clearance = this.#state().clearances.get(upi);
    return (found.get(upi) ?? [])
      .filter((item) => !item.retracted)
      .sort((a, b) => a.capturedAt - b.capturedAt || (a.id ?? '').localeCompare(b.id ?? ''))
      .map((item) => itemView(item, item.capturedAt >= from && countsUnderClearance(clearance, item.capturedAt, item.url)));
  }

  /**
   * CorrectionEngine: serve the corrections in force (the source's state)
   * for `upis`: once this resolves, every serving thread answers them from
   * the evidence that counts, at the version returned. Without incremental
   * builds, by a rebuild. Rejects when they could not be served (a
   * compaction then serves them).
   */
  async apply(state: CorrectionState, upis: readonly string[]): Promise<string> {
    if (this.#state().sequence < state.sequence) {
      throw new RangeError(`corrections up to ${state.sequence} applied to a server that reads them up to ${this.#state().sequence}`);
    }
    if (this.#options.incrementalBuilds === false) {
      await this.#build('corrections recorded');
      // A build another process held the lock for does not know them: stored, not yet served.
      if (this.#current.meta.correctionSequence < state.sequence) throw new Error('the corrections are stored; another build holds the lock, and the next build serves them');
      return this.#view.version;
    }
    await this.#queueCorrection(upis);
    return this.#view.version;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    if (this.#carryAgain !== null) clearTimeout(this.#carryAgain);
    this.#watcher?.close();
    // Work under way in the builder (a compaction, the read-ahead) is cut short now, not waited for (SnapshotBuilder.stop).
    this.#builder.stop();
    await this.#refreshing?.catch(() => {});
    await this.#adopting;
    await this.#compacting?.catch(() => {});
    await this.#changes;
    await this.#builder.close();
  }

  async #refresh(): Promise<void> {
    const dir = this.#options.dataDir;
    const newest = (await listSnapshots(dir))[0];
    const newestId = newest === undefined ? null : snapshotIdOf(newest);
    if (this.#adopting === null && newest !== undefined && newestId !== null && !this.#badSnapshots.has(newest) && !this.#otherLimit.has(newestId) && newestId !== this.#swappingOwn && newestId > this.#current.meta.id) {
      // Loaded and hashed beside what is served, for seconds at 10M: evidence is read into the delta meanwhile.
      const adopting = this.#adoptNewest().finally(() => (this.#adopting = null));
      this.#adopting = adopting.catch((error: unknown) => this.#logger.error({ err: String(error) }, 'a newer snapshot could not be served; still serving the previous one'));
    }
    const files = await listEvidenceFiles(dir);
    const served = new Set([...this.#current.meta.evidenceFiles, ...this.#delta.meta.files]);
    const unserved = files.some((name) => !served.has(name));
    if (this.#options.incrementalBuilds === false) {
      if (unserved) await this.#build('new evidence');
      else if (this.#expiryDue()) await this.#build('evidence expired');
      // A correction recorded while no server ran, or one whose rebuild a crash cut short.
      else if (this.#correctionsUnbuilt()) await this.#build('corrections not yet built');
      return;
    }
    if (unserved) await this.#absorb();
    // Logged by compact(); the next pass tries again while the policy says so.
    if (this.#compactionDue()) void this.compact('the delta is due for compaction').catch(() => {});
  }

  /** Load the newest snapshot another process wrote, and serve it (#swap hashes it first). */
  async #adoptNewest(): Promise<void> {
    const dir = this.#options.dataDir;
    const adopted = await loadNewest(dir, this.#logger, this.#badSnapshots, this.#current.meta.id);
    if (adopted !== null && adopted.meta.evidenceMaxAgeMs !== (this.#options.evidenceMaxAgeMs ?? 0)) {
      // Served, it would bring back what expired here (or take back what counts), only for the next compaction to undo it.
      this.#otherLimit.add(adopted.meta.id);
      this.#logger.warn(
        { snapshot: adopted.meta.id, evidenceMaxAgeMs: adopted.meta.evidenceMaxAgeMs, serverEvidenceMaxAgeMs: this.#options.evidenceMaxAgeMs ?? 0 },
        'snapshot written by another process counts evidence by another age limit; not served, building one instead',
      );
      void this.compact('a new snapshot counts evidence by another age limit').catch(() => {});
    } else if (adopted !== null) {
      await this.#swap(adopted, 'new-snapshot');
    }
  }

  /**
   * Wait until the stored evidence file `name` is served (read into the
   * delta, or into the snapshot), looking for it as refresh() does; then how
   * many of its items the delta took, the rest being duplicates of evidence
   * seen before. Null when that is not known: without incremental builds, or
   * when a compaction took the file first.
   */
  async served(name: string): Promise<number | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const applied = this.#applied.find((a) => a.file.name === name);
      if (applied !== undefined) return applied.count;
      if (this.#current.meta.evidenceFiles.includes(name)) return null;
      // A pass already running may have listed the folder before the file came: the next one finds it. Not the
      // adoption of a newer snapshot, which may take seconds: the file is read into the delta meanwhile.
      await this.#pass();
    }
    return this.#applied.find((a) => a.file.name === name)?.count ?? null;
  }

  /** Read the evidence stored since the last read and wait until it is served. */
  async #absorb(): Promise<void> {
    await this.#builder.absorb(this.#options.dataDir);
    // The builder has handed the evidence to #merge by now: wait for the merge.
    await this.#changes;
  }

  #compactionDue(): boolean {
    const meta = this.#delta.meta;
    if (meta.vpaCount > 0 && (meta.vpaCount > this.#policy.vpas || Date.now() - meta.since >= this.#policy.afterMs)) return true;
    return this.#expiryDue();
  }

  /**
   * Whether a build would take back expired evidence: the snapshot served
   * counts evidence by another age limit than this server's (the setting
   * changed, or another process built it), or it was built `afterMs` ago or
   * more and it or the delta holds evidence captured before now's limit.
   */
  #expiryDue(): boolean {
    const maxAgeMs = this.#options.evidenceMaxAgeMs ?? 0;
    const served = this.#current.meta;
    if (served.evidenceMaxAgeMs !== maxAgeMs) return true;
    if (maxAgeMs === 0 || Date.now() - this.#lastCompaction < this.#policy.afterMs) return false;
    // By the clock builds score at: what a build now would leave out.
    const now = this.#options.scoredAt?.() ?? Date.now();
    return this.#oldestCapture() < countsFrom(now, maxAgeMs);
  }

  /** The earliest first_seen served, snapshot and delta: the oldest capture that still counts. */
  #oldestCapture(): number {
    const snapshot = this.#current.data;
    if (this.#oldest?.id !== snapshot.meta.id) this.#oldest = { id: snapshot.meta.id, at: earliestFirstSeen(snapshot) };
    return Math.min(this.#oldest.at, earliestFirstSeen(this.#delta.overlay));
  }

  #state(): CorrectionState {
    return this.#options.corrections?.state() ?? NO_CORRECTIONS;
  }

  /** Whether corrections were recorded after the snapshot served was built: without a delta, only a build serves them. */
  #correctionsUnbuilt(): boolean {
    return this.#state().sequence > this.#current.meta.correctionSequence;
  }

  /** The clearances in force, as merges take them. */
  #clearances(): ClearanceEntry[] {
    return clearancesByPartition(this.#state(), 1)[0]!;
  }

  /** Retracted ids not yet handed to the builder's carry (the set only grows, in insertion order). */
  #unmarkedRetractions(): string[] {
    const retracted = this.#state().retracted;
    const from = this.#markedRetractions;
    this.#markedRetractions = retracted.size;
    return from >= retracted.size ? [] : [...retracted].slice(from);
  }

  /**
   * Every record of `upis` but the retracted ones, as a merge's reset takes
   * them, of the evidence files served with it (`files`): one read but not
   * merged yet brings its records in its own merge, after this one.
   */
  async #resetOf(upis: readonly string[], files: ReadonlySet<string>): Promise<{ upis: readonly string[]; records: ArrayBuffer }> {
    const found = await this.#builder.retractAndRead(this.#options.dataDir, this.#unmarkedRetractions(), new Set(upis), { files });
    const parts: Uint8Array[] = [];
    for (const items of found.values()) for (const item of items) if (!item.retracted) parts.push(item.record);
    const records = Buffer.concat(parts);
    return { upis: [...new Set(upis)], records: records.buffer.slice(records.byteOffset, records.byteOffset + records.byteLength) as ArrayBuffer };
  }

  /**
   * Answer `upis` afresh from the evidence that counts under the corrections
   * in force, after the changes queued before. Rejects when it fails (what
   * was served stays, and a compaction serves the corrections instead).
   */
  #queueCorrection(upis: readonly string[]): Promise<void> {
    const run = this.#changes.then(async () => {
      if (this.#closed) return;
      const started = performance.now();
      const base = this.#current;
      const reset = await this.#resetOf(upis, new Set([...base.meta.evidenceFiles, ...this.#delta.meta.files]));
      const { delta } = await this.#builder.mergeDelta({
        base: base.data,
        previous: this.#delta,
        inputs: [],
        files: [],
        now: Date.now(),
        position: await this.#positions.next(),
        clearances: this.#clearances(),
        reset,
      });
      await this.#recordServed(base, delta, 'merge', reset.upis);
      this.#delta = delta;
      this.#view = new ServingView(base, delta);
      this.#logger.info({ ...deltaFields(delta), corrected: reset.upis.length, ms: Math.round(performance.now() - started) }, 'corrections served');
      for (const listener of this.#deltaListeners) listener(delta);
    });
    this.#changes = run.catch((error: unknown) => {
      this.#failed(error, 'serving corrections failed; compacting to serve them');
      if (!this.#closed) void this.compact('corrections could not be merged').catch(() => {});
    });
    return run;
  }

  /**
   * Record that `base` with `delta` is served from now, and what that
   * changes in the answers (`kind`, and the VPAs `corrected` anew by it):
   * called before it is served.
   */
  async #recordServed(base: SnapshotView, delta: DeltaData, kind: ServedChange['kind'], corrected: readonly string[] = [], ahead: ComparedAhead | null = null): Promise<void> {
    const { answers, versions, corrections } = this.#options;
    // Each state begins after the last one recorded, never in the same millisecond: an instant names one state (an as-of lookup's).
    const at = Math.max(Date.now(), (versions?.lastAt ?? 0) + 1, (answers?.lastAt ?? 0) + 1);
    if (answers !== undefined) {
      const change: ServedChange = { kind, corrected: new Set(corrected), clearances: corrections?.state().clearances ?? new Map() };
      await answers.record(base, delta, change, at, dataVersion(base.meta.id, delta.meta.position), ahead);
    }
    // Whether its answers are in the history: one that could not be written leaves a gap an as-of lookup must not fill.
    await versions?.record({ snapshot: base.meta.id, position: delta.meta.position }, at, servedAsOf(base, delta), answers !== undefined && answers.unavailable === null);
  }

  /** One change of what is served after the others; a failed one is logged and changes nothing. */
  #queueChange(change: () => Promise<void>, what: string): Promise<void> {
    const run = this.#changes.then(change).catch((error: unknown) => {
      this.#logger.error({ err: String(error) }, `${what} failed; serving what was served before`);
    });
    this.#changes = run;
    return run;
  }

  /** The memory plan of the build about to run (build-memory.ts), logged when it is lean; null without a limit. */
  #planMemory(): BuildMemoryPlan | null {
    if (this.#memory === null) return null;
    const startBytes = residentBytes();
    const plan = this.#memory.plan({ residentBytes: startBytes, snapshotBytes: snapshotBytes(this.#current.data) });
    if (plan.lean) {
      this.#logger.warn(
        { residentBytes: startBytes, expectedPeakBytes: plan.expectedPeak, limitBytes: plan.limit, carriedBytes: this.#builder.carriedBytes },
        'a usual build would come near the memory limit; building lean: the carried build state is let go and every evidence file read again',
      );
    }
    return plan;
  }

  /**
   * After a lean build: read the stored evidence again in the background,
   * in `ms`, so that ingests and corrections read only what is new. A read
   * already scheduled is moved.
   */
  #readCarryAgainIn(ms: number): void {
    if (this.#carryAgain !== null) clearTimeout(this.#carryAgain);
    this.#carryAgain = setTimeout(() => {
      this.#carryAgain = null;
      this.#readCarryAgain();
    }, ms);
    this.#carryAgain.unref();
  }

  #readCarryAgain(): void {
    if (this.#closed) return;
    const started = performance.now();
    this.#builder.prime(this.#options.dataDir).then(
      () => this.#logger.info({ ms: Math.round(performance.now() - started), carriedBytes: this.#builder.carriedBytes }, 'stored evidence read again after a lean build'),
      (error: unknown) => this.#failed(error, 'reading stored evidence again after a lean build failed; the next ingest reads every file'),
    );
  }

  /** Merge evidence the builder has read into the delta (SnapshotBuilder's onEvidence). */
  #merge(evidence: GatheredEvidence): void {
    const handed = performance.now();
    void this.#queueChange(async () => {
      if (this.#closed) return;
      const queuedMs = performance.now() - handed;
      const base = this.#current;
      const served = new Set([...base.meta.evidenceFiles, ...this.#delta.meta.files]);
      const files = evidence.files.filter((f) => !served.has(f.name));
      if (files.length === 0) return;
      const started = performance.now();
      // A position that cannot be reserved fails the merge like any other failure: a compaction serves the evidence.
      const merged = await this.#positions
        .next()
        .then((position) =>
          this.#builder.mergeDelta({ base: base.data, previous: this.#delta, inputs: evidence.inputs, files, now: Date.now(), position, clearances: this.#clearances() }),
        )
        .catch((error: unknown) => {
          // Read already, the evidence would not be read again: a compaction serves it instead.
          this.#failed(error, 'merging evidence into the delta failed; compacting to serve it', { files: files.length });
          if (!this.#closed) void this.compact('a merge failed').catch(() => {});
          return null;
        });
      if (merged === null) return;
      const { delta, applied } = merged;
      await this.#recordServed(base, delta, 'merge');
      this.#applied = [...this.#applied, ...applied];
      this.#delta = delta;
      this.#view = new ServingView(base, delta);
      this.#logger.info(
        {
          ...deltaFields(delta),
          files: files.length,
          items: applied.reduce((sum, a) => sum + a.count, 0),
          ms: Math.round(performance.now() - started),
          // Where the rest of an ingest's wait went: reading it, and waiting behind earlier changes.
          readMs: Math.round(evidence.readMs),
          queuedMs: Math.round(queuedMs),
        },
        'evidence merged into the delta',
      );
      for (const listener of this.#deltaListeners) listener(delta);
    }, 'merging evidence into the delta');
  }

  /**
   * Serve `next` in place of the snapshot, with the delta merged again over
   * it: whatever of the delta `next` does not hold stays in the delta, so
   * nothing served before is lost in the swap.
   */
  async #swap(next: SnapshotView, reason: SwapEvent['reason']): Promise<void> {
    // A snapshot another process wrote is loaded beside the served one in any case: it is prepared before it is
    // served, outside the queue, so that merges go on meanwhile. A compaction's is served as soon as it is assembled,
    // while the build's memory is still held: prepared first, the replaced snapshot would be held for as long beside
    // them, at the peak (bench/MEASUREMENTS.md, "Range lookups across a swap"), so it is prepared once served.
    const newer = !this.#closed && next.meta.id > this.#current.meta.id;
    if (reason === 'new-snapshot' && newer) await prepareToServe(this.#preparations, next.data, this.#logger);
    // What it changes in the answers is compared outside the queue too, so that merges wait for the swap, not for a pass over every VPA.
    const ahead = newer ? ((await this.#options.answers?.compareAhead(next)) ?? null) : null;
    return this.#queueChange(async () => {
      if (this.#closed || next.meta.id <= this.#current.meta.id) return;
      const covered = new Set(next.meta.evidenceFiles);
      const kept = this.#applied.filter((a) => !covered.has(a.file.name));
      let delta: DeltaData | null = null;
      let applied: AppliedFile[] = [];
      // Corrections recorded after `next` read them, answered afresh over it.
      const since = this.#options.corrections?.vpasSince(next.meta.correctionSequence) ?? [];
      const reset = since.length === 0 ? undefined : await this.#resetOf(since, new Set([...next.meta.evidenceFiles, ...kept.map((a) => a.file.name)]));
      if (kept.length > 0 || reset !== undefined) {
        const merged = await this.#builder.mergeDelta({
          base: next.data,
          previous: null,
          inputs: kept.map((a) => a.records),
          files: kept.map((a) => a.file),
          // Its age starts now: counted from the old delta's, it would be due again at once.
          now: Date.now(),
          position: await this.#positions.next(),
          clearances: this.#clearances(),
          ...(reset === undefined ? {} : { reset }),
        });
        delta = merged.delta;
        applied = [...merged.applied];
      }
      delta ??= await emptyDeltaOver(next, this.#positions, this.#options.versions);
      // Without incremental builds a snapshot is what serves corrections: every VPA named since the one replaced.
      const folded = this.#options.incrementalBuilds === false ? (this.#options.corrections?.vpasSince(this.#current.meta.correctionSequence) ?? []) : [];
      await markServed(this.#options.dataDir, next.meta.id, this.#logger);
      await this.#recordServed(next, delta, 'snapshot', [...(reset?.upis ?? []), ...folded], ahead);
      const previous = this.#current;
      this.#current = next;
      this.#delta = delta;
      this.#applied = applied;
      this.#view = new ServingView(next, delta);
      this.#lastCompaction = Date.now();
      this.#logger.info({ ...snapshotFields(next), previous: previous.meta.id, reason, ...deltaFields(delta) }, 'snapshot swapped');
      for (const listener of this.#listeners) listener({ previous, next, delta, reason });
    }, 'swapping in a new snapshot');
  }

  /** A full build of every stored evidence file, served once assembled; a refusal of the build lock is logged once. */
  async #build(why: string): Promise<void> {
    const skippedBefore = this.#skippedBecause;
    this.#skippedBecause = null;
    if (skippedBefore === null) {
      this.#logger.info({ reason: why, ...deltaFields(this.#delta) }, 'building a snapshot');
    }
    let report: BuildReport;
    // The new snapshot is served as soon as it is assembled, while its file is written.
    // Asserted, not annotated: set in a callback, it would be narrowed to null below.
    let servedEarly = null as Promise<void> | null;
    const onAssembled = (data: SnapshotData) => {
      if (this.#closed || data.meta.id <= this.#current.meta.id) return;
      // Loaded again from its file while its swap waits (a comparison of the answers ahead of it), it would be held twice.
      const id = data.meta.id;
      this.#swappingOwn = id;
      servedEarly = this.#swap(new SnapshotView(data), 'rebuild').finally(() => {
        if (this.#swappingOwn === id) this.#swappingOwn = null;
      });
    };
    const started = performance.now();
    const plan = this.#planMemory();
    this.#letGoSinceLean = false;
    const peak = samplePeak(residentBytes);
    try {
      report = await this.#builder.build({ ...buildOptions(this.#options), onAssembled, lean: plan?.lean === true });
    } catch (error) {
      peak();
      if (plan?.lean === true) this.#readCarryAgainIn(0);
      if (!(error instanceof BuildLockedError)) {
        for (const listener of this.#buildFailureListeners) listener(error, performance.now() - started);
      }
      if (error instanceof BuildLockedError) {
        // Someone else is building; their snapshot is adopted on a later pass.
        if (skippedBefore !== error.message) {
          this.#logger.info({ reason: error.message }, 'build skipped; waiting for the other build');
        }
        this.#skippedBecause = error.message;
        return;
      }
      if (servedEarly !== null) {
        // Evidence stays durable in its files: a restart rebuilds what was not written.
        this.#logger.error({ err: String(error) }, 'snapshot served but its file was not written; a restart rebuilds it');
        return;
      }
      throw error;
    }
    const peakBytes = peak();
    if (plan !== null) {
      this.#memory!.measured(plan, peakBytes);
      // Not beside the snapshot just replaced: once it is let go (reuseMemoryOf; it may have been, the new
      // one being served before its file is written), or at the latest after CARRY_AGAIN_MS.
      if (plan.lean) this.#readCarryAgainIn(this.#letGoSinceLean ? CARRY_AFTER_LET_GO_MS : CARRY_AGAIN_MS);
    }
    this.#lastBuild = report;
    for (const listener of this.#buildListeners) listener(report);
    this.#logger.info(
      {
        snapshot: report.meta.id,
        ms: Math.round(report.durationMs),
        phaseMs: roundedPhases(report.phaseMs),
        vpas: report.meta.vpaCount,
        cachedChunks: report.cachedChunks,
        reusedChunks: report.reusedChunks,
        chunks: report.chunks,
        reusedBytes: report.reusedBytes,
        workingBytesKept: report.workingBytesKept,
        lean: plan?.lean === true,
        peakResidentBytes: peakBytes,
      },
      'build finished',
    );
    if (servedEarly !== null) {
      await servedEarly;
      return;
    }
    const next = new SnapshotView(await loadSnapshotOffThread(report.path, background));
    await this.#swap(next, 'rebuild');
  }

  /**
   * Read new evidence as soon as an ingest renames a file into the evidence
   * folder, instead of at the next poll (which stays, for file systems
   * without change events). A burst of events shares one refresh.
   */
  #watchEvidence(): void {
    try {
      this.#watcher = watch(this.#options.dataDir.evidence, { persistent: false }, () => {
        if (this.#closed) return;
        void this.#refreshInBackground();
      });
      this.#watcher.on('error', () => {
        this.#watcher?.close();
        this.#watcher = null;
      });
    } catch {
      // No evidence folder yet, or no change events here: polling covers it.
      this.#watcher = null;
    }
  }

  /**
   * Log a failure of work in the background. Once the service is closing
   * the builder cuts its work short (SnapshotBuilder.stop), and what fails
   * then is that, logged at debug.
   */
  #failed(error: unknown, message: string, fields: Record<string, unknown> = {}): void {
    if (this.#closed) this.#logger.debug({ ...fields, err: String(error) }, message);
    else this.#logger.error({ ...fields, err: String(error) }, message);
  }

  /** A refresh nobody waits for: a failure is logged, and what is served stays. */
  #refreshInBackground(): Promise<void> {
    return this.#pass().catch((error: unknown) => this.#failed(error, 'refresh failed; still serving the previous snapshot'));
  }

  #schedule(pollMs: number): void {
    this.#timer = setTimeout(() => {
      void this.#refreshInBackground().finally(() => {
        if (!this.#closed) this.#schedule(pollMs);
      });
    }, pollMs);
    this.#timer.unref();
  }
}

/**
 * Nice increment of background builds and loads: at equal priority their
 * threads would take turns with the serving threads for a core. At +10 the
 * kernel gives a serving thread about ten times the share of a build thread
 * wanting the same core, among the threads of one session (autogroup
 * scheduling shares the CPU between sessions first): not enough on its own,
 * see defaultBuildThreads.
 */
export const BACKGROUND_NICE = 10;
const background = { niceIncrement: BACKGROUND_NICE };

/**
 * Background build threads of a serving process: every core but one, and at
 * least one. The nice value alone does not keep a core for the serving
 * threads: with a build thread computing on every core, threads that wake
 * often (the serving threads, a load balancer or a client on the same host)
 * wait for a CPU: a serving thread stalled for seconds during a large
 * rebuild with a build thread on every core, and for tens of milliseconds
 * with one core kept. The cost is build time on an idle machine (see
 * bench/MEASUREMENTS.md, "A core kept for serving").
 */
export function defaultBuildThreads(cores: number = availableParallelism()): number {
  return Math.max(1, cores - 1);
}

/**
 * How long a serving process keeps its build threads and the memory they
 * reuse after a background build, ms. Builds are compactions, minutes
 * apart (the live delta serves ingests), so memory held longer is seldom
 * reused and only keeps the process large after each: this keeps the
 * threads for the phases of one compaction and for one that follows at
 * once, and the process is back to its idle size well within a minute.
 */
export const DEFAULT_BUILD_IDLE_MS = 20_000;
/** The longest wait `serve --build-idle-seconds` accepts, s: a day. */
export const MAX_BUILD_IDLE_SECONDS = 86_400;

function buildOptions(options: SnapshotServiceOptions) {
  return {
    dataDir: options.dataDir,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.urlMemberCap === undefined ? {} : { urlMemberCap: options.urlMemberCap }),
    ...(options.scoredAt === undefined ? {} : { scoredAt: options.scoredAt() }),
    ...(options.evidenceMaxAgeMs === undefined ? {} : { evidenceMaxAgeMs: options.evidenceMaxAgeMs }),
  };
}

/** Newest snapshot that loads (newer than `after`, and not older than `atLeast`, when given), skipping and remembering bad files. */
async function loadNewest(dir: DataDir, logger: Logger, bad: Set<string>, after = '', atLeast = ''): Promise<SnapshotView | null> {
  const found = await loadNewestValidSnapshot(dir, {
    read: (path) => loadSnapshotOffThread(path, background),
    accept: (path) => !bad.has(path) && snapshotIdOf(path) > after && snapshotIdOf(path) >= atLeast,
    onSkip: (path, error) => {
      bad.add(path);
      logger.error({ path, code: (error as { code?: unknown }).code, err: (error as Error).message }, 'snapshot refused');
    },
  });
  return found === null ? null : new SnapshotView(found.data);
}

/**
 * Build the first snapshot to serve. While another live process builds (a
 * `upi-risk build`), its snapshot is waited for, for as long as it builds:
 * served once written, when it is newer than every snapshot there was when
 * the wait began and not older than `atLeast`; built here once the lock is
 * let go. A lock that cannot be read or taken fails the start.
 */
async function buildFirst(builder: SnapshotBuilder, options: SnapshotServiceOptions, logger: Logger, atLeast: string, bad: Set<string>): Promise<{ first: SnapshotView; lastBuild: BuildReport | null }> {
  let waitingSince: number | null = null;
  let after = '';
  let loggedAt = 0;
  for (;;) {
    try {
      const lastBuild = await builder.build(buildOptions(options));
      return { first: new SnapshotView(await loadSnapshotOffThread(lastBuild.path, background)), lastBuild };
    } catch (error) {
      if (!(error instanceof BuildLockedError) || error.holder === undefined) throw error;
      const now = Date.now();
      if (waitingSince === null) {
        waitingSince = now;
        // Only what the other build writes: not a snapshot older than the one last served, nor one the record could not name.
        const [newest] = await listSnapshots(options.dataDir);
        after = newest === undefined ? '' : snapshotIdOf(newest);
      }
      if (now - loggedAt >= START_WAIT_LOG_MS) {
        logger.info({ holder: error.holder, waitedMs: now - waitingSince }, 'another process is building; waiting for its snapshot before serving');
        loggedAt = now;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, START_BUILD_WAIT_MS));
    const first = await loadNewest(options.dataDir, logger, bad, after, atLeast);
    if (first !== null) return { first, lastBuild: null };
  }
}

/**
 * Record that `snapshot` is served, before it is (last-served-snapshot.ts).
 * A record that cannot be written is logged and the snapshot served all the
 * same: screening comes first, and only a crash before its file is written
 * would then start from an older one.
 */
async function markServed(dir: DataDir, snapshot: string, logger: Logger): Promise<void> {
  try {
    await recordLastServed(dir, snapshot);
  } catch (error) {
    logger.error({ path: dir.servedSnapshot, snapshot, err: messageOf(error) }, 'the snapshot served could not be recorded; a restart before its file is written would serve an older one');
  }
}

/**
 * The empty delta `view` is first served with: the snapshot alone (position
 * 0), or a new position when the snapshot was served alone before (a
 * restart): one version, one stretch of time in the record of versions.
 */
async function emptyDeltaOver(view: SnapshotView, positions: PositionReserve, versions: ServedVersions | undefined): Promise<DeltaData> {
  const again = versions?.served({ snapshot: view.meta.id, position: 0 }) ?? false;
  return emptyDelta(view.data, Date.now(), again ? await positions.next() : 0);
}

function snapshotIdOf(path: string): string {
  return basename(path).replace(/^snapshot-/, '').replace(/\.upisnap$/, '');
}

function roundedPhases(phaseMs: BuildReport['phaseMs']): Record<string, number> {
  return Object.fromEntries(Object.entries(phaseMs).map(([phase, ms]) => [phase, Math.round(ms)]));
}

function deltaFields(delta: DeltaData): Record<string, unknown> {
  const m = delta.meta;
  return { deltaPosition: m.position, deltaVpas: m.vpaCount, deltaItems: m.evidenceItems };
}

function snapshotFields(view: SnapshotView): Record<string, unknown> {
  const m = view.meta;
  return { snapshot: m.id, vpas: m.vpaCount, clusters: m.clusterCount, dataAsOf: m.dataAsOf };
}

function itemView(item: CarriedItem, counts: boolean): EvidenceItemView {
  return {
    evidence_id: item.id ?? '',
    url: item.url,
    source_category: SOURCE_CATEGORIES[item.flags & 3]!,
    risk_category: RISK_CATEGORIES[(item.flags >> 2) & 7]!,
    captured_at: formatIso(item.capturedAt),
    screenshot: (item.flags & FLAG_SCREENSHOT) !== 0,
    counts,
  };
}
