import type pg from 'pg';
import type { AuditLog } from '../access/audit-log.js';
import { StoreDesk } from '../corrections/store-desk.js';
import type { KeyRegistry } from '../access/key-registry.js';
import { PostgresSessionStore } from '../store/postgres-session-store.js';
import { PostgresUsageLedger } from '../store/postgres-usage-ledger.js';
import type { BuildRecord } from '../admin/intelligence-stats.js';
import { PostgresDisputeStore } from '../corrections/postgres-dispute-store.js';
import type { Logger } from '../common/logger.js';
import { StoreServedVersions } from '../store/served-versions.js';
import { HISTORY_OFF, historyKeepMs, unavailableVersions } from '../history/served-versions.js';
import { AnswerHistory } from '../history/answer-changes.js';
import { FollowerService } from '../fleet/follower-service.js';
import { HistoryRecorder } from '../fleet/history-recorder.js';
import { StoreAnswerHistory } from '../store/answer-history-store.js';
import { StoreMirror } from '../fleet/store-mirror.js';
import { takeEvidenceIntoLog } from '../fleet/log-intake.js';
import type { ServiceMetrics } from '../http/metrics.js';
import { storePool, type StoreLocation } from '../store/postgres.js';
import { keysChannel } from '../store/postgres-key-backend.js';
import { StoreNotifications } from '../store/store-notifications.js';
import { listPublications } from '../store/snapshot-publications.js';
import { PostgresWatchStore } from '../watch/postgres-watch-store.js';
import { StoreLease } from '../store/store-lease.js';
import { WatchService } from '../watch/watch-service.js';
import { deltaFigures, runServer, type ServeOptions, type ServedMode } from './serving-process.js';
import { startScreening, type Screening, type WatchSettings, type Watching } from './watch-screening.js';

/** The options of serve with a store. */
export interface FollowerServeOptions extends ServeOptions {
  readonly location: StoreLocation;
  /** The only key the mirror versions it serves may be recorded under (StoreMirrorOptions.publicKey). */
  readonly mirrorPublicKey?: string;
  /** Whether this follower may record the fleet's history of answers (taking its lease); default true. */
  readonly recordsHistory?: boolean;
}

/**
 * `upi-risk serve --store`: a follower of the store's published snapshots
 * and evidence log; keys, sessions, usage and watchlists in the store.
 */
export function serveFollower(options: FollowerServeOptions): Promise<number> {
  return runServer(options, {
    keyStore: options.location,
    keyPollMs: 1000,
    claimDataDir: null,
    // The versions the active builder signed, as it recorded them in the store.
    mirror: (logger) =>
      Promise.resolve(
        new StoreMirror({ location: options.location, logger, pollMs: options.pollMs, ...(options.mirrorPublicKey === undefined ? {} : { publicKey: options.mirrorPublicKey }) }),
      ),
    start: (logger, metrics, keys, audit) => startFollower(options, logger, metrics, keys, audit),
  });
}

async function startFollower(options: FollowerServeOptions, logger: Logger, metrics: ServiceMetrics, keys: KeyRegistry, audit: AuditLog): Promise<ServedMode> {
  const { location } = options;
  const intake = storePool(location, 4);
  const keepMs = historyKeepMs(options.historyDays);
  const versions = options.historyDays === 0 ? unavailableVersions(HISTORY_OFF) : new StoreServedVersions(intake, location, logger, keepMs);
  // One follower at a time records the fleet's history of answers; every follower reads it from the store.
  const history = options.historyDays === 0 || options.recordsHistory === false ? null : new HistoryRecorder({ location, path: options.dir.answerChanges, keepMs, logger });
  const follower = await FollowerService.start({ location, dataDir: options.dir, logger, pollMs: options.pollMs, versions, ...(history === null ? {} : { history }) }).catch(
    async (error: unknown) => {
      await intake.end().catch(() => {});
      throw error;
    },
  );
  history?.start(() => follower.recordTakenOver());
  const keyChanges = new StoreNotifications(location, [keysChannel(location)], () => void keys.check(), logger);
  metrics.observeSnapshot(follower.current);
  follower.onSwap((event) => metrics.observeSnapshot(event.next));
  const delta = () => deltaFigures(follower.delta, follower.delta.meta.bytes, follower.publication.createdAt.getTime());
  const storeState = () => ({ connected: follower.storeConnected, caughtUpAt: follower.caughtUpAt });
  metrics.watchDelta(delta);
  metrics.watchStore(storeState);
  metrics.watchHistoryRecording(() => history?.recording ?? false);
  const publications = async (): Promise<BuildRecord[]> =>
    (await listPublications(intake, location)).map((p) => ({
      finished_at: p.createdAt.toISOString(),
      duration_ms: null,
      outcome: 'published',
      snapshot: p.id,
      message: null,
    }));
  return {
    service: follower,
    stats: { mode: 'fleet', served: follower, delta, builds: publications, store: storeState },
    sessions: new PostgresSessionStore(intake, location),
    startWatching: (settings) => watchStore(intake, location, settings),
    usage: new PostgresUsageLedger(intake, location),
    ingest: (body) => takeEvidenceIntoLog(intake, location, follower, body),
    openDisputes: () => Promise.resolve(new PostgresDisputeStore(location)),
    compact: null,
    corrections: new StoreDesk({ pool: intake, location, follower, audit, nameOf: (keyId) => keys.records().find((k) => k.id === keyId)?.name }),
    versions,
    answers: options.historyDays === 0 ? AnswerHistory.unavailable(HISTORY_OFF, logger) : new StoreAnswerHistory(intake, location, keepMs, history),
    close: async () => {
      await keyChanges.close();
      await follower.close();
      await history?.close();
      await versions.close();
      await intake.end().catch(() => {});
    },
  };
}

/** The lease of screening watched VPAs (StoreLease). */
const WATCH_DUTY = { lock: 'watch', name: 'watchlist', duty: 'screens watched VPAs and delivers their events' } as const;

/** The store's watchlists: every follower keeps them; the one holding the lease screens, delivers and keeps the journal short. */
async function watchStore(pool: pg.Pool, location: StoreLocation, settings: WatchSettings): Promise<Watching> {
  const { served, allowed, logger } = settings;
  const store = await PostgresWatchStore.open(pool, location, logger);
  let running: Screening | null = null;
  store.onApplied(() => running?.delivery.wake());
  const lease = new StoreLease(location, WATCH_DUTY, logger, async () => {
    const started = startScreening(store, settings);
    started.rescreener.onPass(() => void store.compactIfGrown().catch((error: Error) => logger.error({ err: error.message }, 'watchlist journal not rewritten')));
    running = started;
    return async () => {
      running = null;
      await started.stop();
    };
  });
  lease.start();
  return {
    service: new WatchService({ store, served, wake: () => running?.delivery.wake(), allowed, logger }),
    close: async () => {
      await lease.close();
      await store.close();
    },
  };
}
