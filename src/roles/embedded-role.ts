import type { DataDir } from '../common/data-dir.js';
import type { Logger } from '../common/logger.js';
import type { AuditLog } from '../access/audit-log.js';
import { MemorySessionStore } from '../access/console-sessions.js';
import type { KeyRegistry } from '../access/key-registry.js';
import { JournalDesk } from '../corrections/desk.js';
import { correctionJournalPath } from '../corrections/journal.js';
import { FileUsageLedger, usageFilePath } from '../access/key-usage.js';
import { BuildHistory } from '../admin/intelligence-stats.js';
import { FileDisputeStore, disputeJournalPath } from '../corrections/file-dispute-store.js';
import type { ServiceMetrics } from '../http/metrics.js';
import { takeEvidence } from '../service/evidence-intake.js';
import { SnapshotService, type SnapshotServiceOptions } from '../service/snapshot-service.js';
import { VersionJournal, openVersionJournal } from '../history/version-journal.js';
import { AnswerHistory } from '../history/answer-changes.js';
import { HISTORY_OFF, historyKeepMs, unavailableVersions } from '../history/served-versions.js';
import { acquireServeLock } from '../service/serve-lock.js';
import { FileWatchStore, watchJournalPath } from '../watch/file-watch-store.js';
import { WatchService } from '../watch/watch-service.js';
import { deltaFigures, runServer, type ServeOptions, type ServedMode } from './serving-process.js';
import { startScreening, type WatchSettings, type Watching } from './watch-screening.js';

/** The options of serve without a store: how this process builds and compacts. */
export interface EmbeddedServeOptions extends ServeOptions {
  readonly build: Omit<SnapshotServiceOptions, 'dataDir' | 'logger' | 'pollMs'>;
  /** Where build.memoryLimitBytes came from, for the log. */
  readonly memoryLimitFrom?: 'max-memory' | 'cgroup';
}

/**
 * `upi-risk serve --data-dir`: the data directory's snapshots and evidence,
 * builds and compactions in this process; keys in the key file or Redis.
 */
export function serveEmbedded(options: EmbeddedServeOptions): Promise<number> {
  return runServer(options, {
    keyStore: null,
    keyPollMs: 250,
    // One server per data directory: a second one would fork its snapshots, journals and positions.
    claimDataDir: () => acquireServeLock(options.dir),
    mirror: 'data-dir',
    start: (logger, metrics, keys, audit) => startEmbedded(options, logger, metrics, keys, audit),
  });
}

/** How often the corrections journal is looked at for what `upi-risk retract` appended, ms: at most this, so it is served within a second. */
const CORRECTIONS_POLL_MS = 250;

async function startEmbedded(options: EmbeddedServeOptions, logger: Logger, metrics: ServiceMetrics, keys: KeyRegistry, audit: AuditLog): Promise<ServedMode> {
  const { dir } = options;
  // Before the engine: it starts with the corrections in force.
  const desk = await JournalDesk.open({
    path: correctionJournalPath(dir),
    audit,
    logger,
    pollMs: options.pollMs === 0 ? 0 : Math.min(options.pollMs, CORRECTIONS_POLL_MS),
    nameOf: (keyId) => keys.records().find((k) => k.id === keyId)?.name,
  });
  const limit = options.build.memoryLimitBytes;
  if (limit !== undefined) logger.info({ limitBytes: limit, from: options.memoryLimitFrom ?? 'max-memory' }, 'compactions plan their memory under a limit');
  const versions = options.historyDays === 0 ? unavailableVersions(HISTORY_OFF) : await openVersionJournal(dir.versions, logger, historyKeepMs(options.historyDays));
  // Read beside the record of versions, which says what was served: without it, neither is kept.
  const answers =
    versions instanceof VersionJournal
      ? await AnswerHistory.open(dir.answerChanges, versions.lastAt, historyKeepMs(options.historyDays), logger)
      : AnswerHistory.unavailable(versions.unavailable ?? HISTORY_OFF, logger);
  const service = await SnapshotService.start({ dataDir: dir, logger, pollMs: options.pollMs, ...options.build, corrections: desk.source, versions, answers });
  desk.attach(service);
  metrics.observeSnapshot(service.current);
  service.onSwap((event) => metrics.observeSnapshot(event.next));
  service.onBuild((report) => metrics.observeBuild(Date.now(), report));
  metrics.watchCarriedBytes(() => service.carriedBytes, () => service.carriedDiskBytes);
  metrics.watchReusableBytes(() => service.reusableBytes);
  metrics.watchBuildThreads(() => service.buildThreads);
  metrics.watchMemoryLimit(limit ?? null, () => service.leanBuilds);
  const delta = () => deltaFigures(service.delta, service.deltaBytes, service.lastCompaction);
  metrics.watchDelta(delta);
  const builds = new BuildHistory();
  // A build made at start, before there was anyone to tell.
  const first = service.lastBuild;
  if (first !== null) builds.built(first.meta.id, first.durationMs, new Date(first.meta.createdAt));
  service.onBuild((report) => builds.built(report.meta.id, report.durationMs));
  service.onBuildFailed((error, durationMs) => builds.failed(error, durationMs));
  return {
    service,
    stats: { mode: 'embedded', served: service, delta, builds: async () => builds.recent() },
    sessions: new MemorySessionStore(),
    startWatching: (settings) => watchDataDir(dir, settings, desk),
    usage: await FileUsageLedger.open(usageFilePath(dir)),
    ingest: (body) => takeEvidence(service, dir, body),
    openDisputes: () => FileDisputeStore.open(disputeJournalPath(dir)),
    compact: (why) => {
      const started = !service.compacting;
      const snapshot = service.current.meta.id;
      logger.info({ reason: why, started, snapshot }, 'compaction requested');
      // A failure is logged by the service.
      service.compact(why).catch(() => {});
      return { started, snapshot };
    },
    corrections: desk,
    versions,
    answers,
    close: async () => {
      await desk.close();
      await service.close();
      await versions.close();
      await answers.close();
    },
  };
}

/**
 * The data directory's watchlists, screened and delivered by this process:
 * after every change of what is served, and after every correction served
 * (the engine may serve one without a new delta or snapshot).
 */
async function watchDataDir(dir: DataDir, settings: WatchSettings, desk: JournalDesk): Promise<Watching> {
  const store = await FileWatchStore.open(watchJournalPath(dir));
  const running = startScreening(store, settings);
  const stopHearing = desk.onApplied(() => void running.rescreener.schedule());
  const { served, allowed, logger } = settings;
  return {
    service: new WatchService({ store, served, wake: () => running.delivery.wake(), allowed, logger }),
    close: async () => {
      stopHearing();
      await running.stop();
      await store.close();
    },
  };
}
