import { watch, type FSWatcher } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import type { DataDir } from '../common/data-dir.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { BuildLockedError } from '../common/errors.js';
import { threadCollector } from '../common/collector.js';
import { SnapshotView } from '../engine/snapshot-view.js';
import type { SnapshotData } from '../engine/snapshot-data.js';
import { listSnapshots, loadNewestValidSnapshot } from '../engine/snapshot-files.js';
import { loadSnapshotOffThread } from '../engine/snapshot-loader.js';
import { listEvidenceFiles } from '../evidence/store.js';
import { SnapshotBuilder, type BuildReport } from '../builder/snapshot-builder.js';
import { parseCacheDir } from '../builder/parse-cache.js';
import { removeStaleTempFiles } from '../common/temp-cleanup.js';

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
}

export interface SwapEvent {
  readonly previous: SnapshotView | null;
  readonly next: SnapshotView;
  readonly reason: 'start' | 'rebuild' | 'new-snapshot';
}

/**
 * Keeps the current SnapshotView and replaces it, whole, when new evidence
 * lands. Readers take `current` once per request: the swap is one
 * reference assignment, so a request in flight finishes on the snapshot it
 * started with and none ever sees a half-built index. Decoding happens on
 * a loader thread and building on the pool, never on the serving thread; a
 * snapshot built here is swapped in from the pool's shared memory as soon
 * as it is assembled, before its file is written.
 */
export class SnapshotService {
  #current: SnapshotView;
  readonly #options: SnapshotServiceOptions;
  readonly #logger: Logger;
  readonly #builder: SnapshotBuilder;
  readonly #listeners: ((event: SwapEvent) => void)[] = [];
  readonly #buildListeners: ((report: BuildReport) => void)[] = [];
  readonly #badSnapshots = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #watcher: FSWatcher | null = null;
  #refreshing: Promise<void> | null = null;
  #again = false;
  /** Why the last pass could not build (another process holds the lock); logged once, not at every poll. */
  #skippedBecause: string | null = null;
  #closed = false;
  #lastBuild: BuildReport | null = null;

  private constructor(options: SnapshotServiceOptions, builder: SnapshotBuilder, first: SnapshotView) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#builder = builder;
    this.#current = first;
  }

  /**
   * Start from the newest valid snapshot without rebuilding; build one first
   * when the data directory has none that loads.
   */
  static async start(options: SnapshotServiceOptions): Promise<SnapshotService> {
    const logger = options.logger ?? silentLogger;
    const builder = new SnapshotBuilder({
      niceIncrement: BACKGROUND_NICE,
      idleTimeoutMs: options.buildIdleMs ?? DEFAULT_BUILD_IDLE_MS,
      incremental: options.incrementalBuilds ?? true,
      // Looked up when needed: a server enables the collector after the service starts (EdgePool.start).
      collect: () => threadCollector()?.(),
      threads: options.buildThreads ?? defaultBuildThreads(),
    });
    try {
      // Before this process writes anything: temporary files left in the data directory by writers
      // that were killed (ingests, builds, earlier servers) are removed once, whoever left them.
      // Files of writers still running stay (temp-cleanup.ts). Each build sweeps its own folders again.
      const dir = options.dataDir;
      await removeStaleTempFiles([dir.evidence, dir.snapshots, dir.state, parseCacheDir(dir.state)], logger);
      let first = await loadNewest(options.dataDir, logger, new Set());
      let lastBuild: BuildReport | null = null;
      if (first === null) {
        logger.info({ dataDir: options.dataDir.root }, 'no loadable snapshot; building one');
        lastBuild = await builder.build(buildOptions(options));
        first = new SnapshotView(await loadSnapshotOffThread(lastBuild.path, background));
      }
      const service = new SnapshotService(options, builder, first);
      service.#lastBuild = lastBuild;
      logger.info(snapshotFields(first), 'serving snapshot');
      if (lastBuild === null) {
        // Read the evidence now, in the background, so the first rebuild after an ingest reads only the new file.
        const started = performance.now();
        builder.prime(options.dataDir).then(
          () => {
            if (builder.carriedBytes > 0) {
              logger.info({ ms: Math.round(performance.now() - started), carriedBytes: builder.carriedBytes }, 'stored evidence read ahead of rebuilds');
            }
          },
          (error: unknown) => logger.error({ err: String(error) }, 'reading stored evidence ahead of rebuilds failed; the next rebuild reads every file'),
        );
      }
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

  /** The snapshot answering now. Take it once per request and use that reference throughout. */
  get current(): SnapshotView {
    return this.#current;
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
    return this.#builder.reuseMemoryOf(data);
  }

  /** Build threads alive (SnapshotBuilder.liveThreads). */
  get buildThreads(): number {
    return this.#builder.liveThreads;
  }

  /** A replaced snapshot's memory held for the next rebuild's snapshot (reuseMemoryOf). */
  get reusableBytes(): number {
    return this.#builder.reusableBytes;
  }

  /** Memory kept so the next rebuild reads only new evidence files (0 with incrementalBuilds off). */
  get carriedBytes(): number {
    return this.#builder.carriedBytes;
  }

  get lastBuild(): BuildReport | null {
    return this.#lastBuild;
  }

  onSwap(listener: (event: SwapEvent) => void): void {
    this.#listeners.push(listener);
  }

  /** Called after every background build (for metrics). */
  onBuild(listener: (report: BuildReport) => void): void {
    this.#buildListeners.push(listener);
  }

  /**
   * Bring the served snapshot up to date: rebuild when the evidence folder
   * holds files the current snapshot was not built from, or adopt a newer
   * snapshot written by another process. Concurrent calls share one run,
   * and a call during a run makes it run once more afterwards.
   */
  refresh(): Promise<void> {
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

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#watcher?.close();
    await this.#refreshing?.catch(() => {});
    await this.#builder.close();
  }

  async #refresh(): Promise<void> {
    const dir = this.#options.dataDir;
    const newest = (await listSnapshots(dir))[0];
    if (newest !== undefined && !this.#badSnapshots.has(newest) && snapshotIdOf(newest) > this.#current.meta.id) {
      const adopted = await loadNewest(dir, this.#logger, this.#badSnapshots, this.#current.meta.id);
      if (adopted !== null) this.#swap(adopted, 'new-snapshot');
    }
    const files = await listEvidenceFiles(dir);
    if (sameFiles(files, this.#current.meta.evidenceFiles)) {
      this.#skippedBecause = null;
      return;
    }
    // Cleared for this attempt: only another refusal of the lock, for the same reason, keeps the log quiet.
    const skippedBefore = this.#skippedBecause;
    this.#skippedBecause = null;
    if (skippedBefore === null) {
      this.#logger.info({ files: files.length, known: this.#current.meta.evidenceFiles.length }, 'new evidence; rebuilding');
    }
    let report: BuildReport;
    // The new snapshot is served as soon as it is assembled, while its file is written.
    let servedEarly: string | null = null;
    const onAssembled = (data: SnapshotData) => {
      if (this.#closed || data.meta.id <= this.#current.meta.id) return;
      servedEarly = data.meta.id;
      this.#swap(new SnapshotView(data), 'rebuild');
    };
    try {
      report = await this.#builder.build({ ...buildOptions(this.#options), onAssembled });
    } catch (error) {
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
        this.#logger.error({ snapshot: servedEarly, err: String(error) }, 'snapshot served but its file was not written; a restart rebuilds it');
        return;
      }
      throw error;
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
      },
      'build finished',
    );
    if (servedEarly === report.meta.id) return;
    const next = new SnapshotView(await loadSnapshotOffThread(report.path, background));
    if (!this.#closed) this.#swap(next, 'rebuild');
  }

  #swap(next: SnapshotView, reason: SwapEvent['reason']): void {
    const previous = this.#current;
    this.#current = next;
    this.#logger.info({ ...snapshotFields(next), previous: previous.meta.id, reason }, 'snapshot swapped');
    for (const listener of this.#listeners) listener({ previous, next, reason });
  }

  /**
   * Start a rebuild as soon as an ingest renames a file into the evidence
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

  /** A refresh nobody waits for: a failure is logged, and the current snapshot stays. */
  #refreshInBackground(): Promise<void> {
    return this.refresh().catch((error: unknown) => this.#logger.error({ err: String(error) }, 'refresh failed; still serving the previous snapshot'));
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
 * reuse after a background build, ms: ingests a few minutes apart or less
 * then all find it, at the cost of that memory staying resident meanwhile.
 */
export const DEFAULT_BUILD_IDLE_MS = 120_000;
/** The longest wait `serve --build-idle-seconds` accepts, s: a day. */
export const MAX_BUILD_IDLE_SECONDS = 86_400;

function buildOptions(options: SnapshotServiceOptions) {
  return {
    dataDir: options.dataDir,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.urlMemberCap === undefined ? {} : { urlMemberCap: options.urlMemberCap }),
    ...(options.scoredAt === undefined ? {} : { scoredAt: options.scoredAt() }),
  };
}

/** Newest snapshot that loads (newer than `after` when given), skipping and remembering bad files. */
async function loadNewest(dir: DataDir, logger: Logger, bad: Set<string>, after = ''): Promise<SnapshotView | null> {
  const found = await loadNewestValidSnapshot(dir, {
    read: (path) => loadSnapshotOffThread(path, background),
    accept: (path) => !bad.has(path) && snapshotIdOf(path) > after,
    onSkip: (path, error) => {
      bad.add(path);
      logger.error({ path, code: (error as { code?: unknown }).code, err: (error as Error).message }, 'snapshot refused');
    },
  });
  return found === null ? null : new SnapshotView(found.data);
}

function snapshotIdOf(path: string): string {
  return basename(path).replace(/^snapshot-/, '').replace(/\.upisnap$/, '');
}

function sameFiles(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

function roundedPhases(phaseMs: BuildReport['phaseMs']): Record<string, number> {
  return Object.fromEntries(Object.entries(phaseMs).map(([phase, ms]) => [phase, Math.round(ms)]));
}

function snapshotFields(view: SnapshotView): Record<string, unknown> {
  const m = view.meta;
  return { snapshot: m.id, vpas: m.vpaCount, clusters: m.clusterCount, dataAsOf: m.dataAsOf };
}
