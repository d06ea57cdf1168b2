import type { DataDir } from '../common/data-dir.js';
import type { Logger } from '../common/logger.js';
import { MemorySessionStore } from '../access/console-sessions.js';
import { FileUsageLedger, usageFilePath } from '../access/key-usage.js';
import { BuildHistory } from '../admin/intelligence-stats.js';
import { FileDisputeStore, disputeJournalPath } from '../corrections/file-dispute-store.js';
import type { ServiceMetrics } from '../http/metrics.js';
import { takeEvidence } from '../service/evidence-intake.js';
import { SnapshotService, type SnapshotServiceOptions } from '../service/snapshot-service.js';
import { FileWatchStore, watchJournalPath } from '../watch/file-watch-store.js';
import { WatchService } from '../watch/watch-service.js';
import { deltaFigures, runServer, type ServeOptions, type ServedMode } from './serving-process.js';
import { startScreening, type WatchSettings, type Watching } from './watch-screening.js';

/** The options of serve without a store: how this process builds and compacts. */
export interface EmbeddedServeOptions extends ServeOptions {
  readonly build: Omit<SnapshotServiceOptions, 'dataDir' | 'logger' | 'pollMs'>;
}

/**
 * `upi-risk serve --data-dir`: the data directory's snapshots and evidence,
 * builds and compactions in this process; keys in the key file or Redis.
 */
export function serveEmbedded(options: EmbeddedServeOptions): Promise<number> {
  return runServer(options, {
    keyStore: null,
    keyPollMs: 250,
    start: (logger, metrics) => startEmbedded(options, logger, metrics),
  });
}

async function startEmbedded(options: EmbeddedServeOptions, logger: Logger, metrics: ServiceMetrics): Promise<ServedMode> {
  const { dir } = options;
  const service = await SnapshotService.start({ dataDir: dir, logger, pollMs: options.pollMs, ...options.build });
  metrics.observeSnapshot(service.current);
  service.onSwap((event) => metrics.observeSnapshot(event.next));
  service.onBuild((report) => metrics.observeBuild(Date.now(), report));
  metrics.watchCarriedBytes(() => service.carriedBytes);
  metrics.watchReusableBytes(() => service.reusableBytes);
  metrics.watchBuildThreads(() => service.buildThreads);
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
    startWatching: (settings) => watchDataDir(dir, settings),
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
    close: () => service.close(),
  };
}

/** The data directory's watchlists, screened and delivered by this process. */
async function watchDataDir(dir: DataDir, settings: WatchSettings): Promise<Watching> {
  const store = await FileWatchStore.open(watchJournalPath(dir));
  const running = startScreening(store, settings);
  const { served, allowed, logger } = settings;
  return {
    service: new WatchService({ store, served, wake: () => running.delivery.wake(), allowed, logger }),
    close: async () => {
      await running.stop();
      await store.close();
    },
  };
}
