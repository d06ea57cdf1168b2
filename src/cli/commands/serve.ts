import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { dataDir } from '../../common/data-dir.js';
import { ConfigError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { missingGlibcTunables, runsOnGlibc } from '../../common/malloc-tuning.js';
import { KeyRegistry } from '../../access/key-registry.js';
import { chooseKeyBackend, REDIS_OPTIONS } from '../key-backend-options.js';
import { loadPlans, DEFAULT_PLANS_FILE } from '../../access/plans.js';
import { QuotaService } from '../../access/quota.js';
import { DEFAULT_BUILD_IDLE_MS, DEFAULT_COMPACTION, SnapshotService, MAX_BUILD_IDLE_SECONDS, type SnapshotServiceOptions } from '../../service/snapshot-service.js';
import { MAX_BUILD_THREADS } from '../../builder/snapshot-builder.js';
import { ServiceMetrics } from '../../http/metrics.js';
import type { DeltaData } from '../../engine/delta-data.js';
import { checkTlsFiles, createTlsApp, ensureSelfSignedCertificate, type TlsFiles } from '../../http/tls.js';
import { intOption, parseCommandArgs, type Command } from '../command.js';
import { availableParallelism } from 'node:os';
import { EdgePool } from '../../http/edge-pool.js';
import { takeEvidence, type IntakeResult } from '../../service/evidence-intake.js';
import type { DeltaFigures, ServedData } from '../../service/served-data.js';
import type { DataDir } from '../../common/data-dir.js';
import { FollowerService } from '../../fleet/follower-service.js';
import { takeEvidenceIntoLog } from '../../fleet/log-intake.js';
import { storePool, type StoreLocation } from '../../store/postgres.js';
import { keysChannel } from '../../store/postgres-key-backend.js';
import { StoreNotifications } from '../../store/store-notifications.js';
import { STORE_OPTIONS, STORE_USAGE, chooseStore } from '../store-options.js';
import { KeyAdmin } from '../../access/key-admin.js';
import { MemorySessionStore, type SessionStore } from '../../access/console-sessions.js';
import { FileUsageLedger, usageFilePath, type UsageLedger } from '../../access/key-usage.js';
import { AdminService } from '../../admin/admin-service.js';
import { BuildHistory, IntelligenceStats, type BuildRecord, type StatsSources } from '../../admin/intelligence-stats.js';
import { loadConsoleAssets } from '../../http/console-assets.js';
import { isWatchRequest } from '../../api/admin-requests.js';
import type pg from 'pg';
import type { WatchStore } from '../../watch/watch-store.js';
import { PostgresWatchStore } from '../../watch/postgres-watch-store.js';
import { WatchLease } from '../../watch/watch-lease.js';
import { FileWatchStore, watchJournalPath } from '../../watch/file-watch-store.js';
import { Rescreener } from '../../watch/rescreen.js';
import { WatchService } from '../../watch/watch-service.js';
import { DEFAULT_DELIVERY, WebhookDelivery } from '../../watch/webhook-delivery.js';
import { listPublications } from '../../store/snapshot-publications.js';
import { PostgresSessionStore } from '../../store/postgres-session-store.js';
import { PostgresUsageLedger } from '../../store/postgres-usage-ledger.js';

const usage = `Usage: upi-risk serve [options]

Serve the v1 API over HTTPS (TLS 1.3 only) from the newest valid snapshot in
DIR, building one first if there is none. New evidence ingested into DIR is
served within a second from a live delta beside the snapshot; the delta is
folded into a new snapshot in the background (a compaction) when it grows
past --compact-vpas or --compact-minutes, on SIGUSR2, or when
\`upi-risk build\` writes one. API keys created, rotated or revoked with
\`upi-risk keys\` take effect within a second.

Options:
  --data-dir DIR        data directory (default: $UPI_RISK_DATA_DIR or var/data)
  --host HOST           address to listen on (default: 127.0.0.1)
  --port PORT           port (default: 8443 with TLS, 8080 with --plain-http; 0 picks a free one)
  --tls-cert FILE       PEM certificate (chain) for TLS
  --tls-key FILE        PEM private key for TLS
                        without both, a self-signed certificate for localhost
                        is generated once into DIR/tls/
  --plain-http          serve plain HTTP instead (behind a TLS-terminating
                        load balancer, or for benchmarks); prints a warning
  --plans FILE          rate-limit plans (default: config/plans.json)
  --redis URL           share quotas and keep API keys in Redis, for several
                        replicas (default: $REDIS_URL; without it everything
                        stays in this process and the key file)
  --redis-prefix P      prefix of every Redis key (default: upi-risk)
  --metrics-token TOKEN bearer token for GET /metrics (default: $UPI_RISK_METRICS_TOKEN;
                        without one, /metrics answers loopback clients only)
  --poll-ms MS          how often to look for new evidence and snapshots (default: 1000)
  --threads N           serving threads on the shared port (default: every core);
                        all read one shared copy of the index, quotas stay per key
  --build-threads N     threads for background builds (default: every core but
                        one, at least one: a core stays with the serving threads)
  --compact-vpas N      compact once the live delta holds more than N VPAs
                        (default: 100000; 0 compacts after every ingest)
  --compact-minutes M   compact once the oldest evidence in the live delta
                        is M minutes old (default: 10)
  --full-rebuilds       no live delta: rebuild the snapshot from every
                        evidence file on every ingest, instead of keeping
                        the deduplicated records and evidence ids in memory
                        (upi_risk_build_carried_bytes) so that an ingest
                        reads only the new file
  --build-idle-seconds S
                        how long the build threads, with the working memory
                        they keep and the memory of the snapshot last
                        replaced, wait for the next build (default: 120;
                        threads live at least a second after a build);
                        0 holds no replaced snapshot and lets the threads go
                        a second after each build, where memory is tighter
                        than rebuild time (with --full-rebuilds as well,
                        nothing is kept for the next build)
  --webhook-allow HOSTS hosts (comma-separated) webhooks may reach although they
                        are private or loopback; plain http is allowed to them
                        (docs/watchlists.md, Safe targets)
  --webhook-first-retry-seconds S
                        wait before a failed webhook is sent again; each
                        retry doubles it, up to 15 minutes (default: 10)
  --log-level LEVEL     fatal, error, warn, info, debug or trace (default: info)

Fleet mode (docs/deployment.md): with a store, serve is a follower. It
never builds: it serves the newest snapshot a builder published, with every
evidence item logged after it as its live delta, and follows new evidence
and new snapshots; keys live in the store, and --redis only shares quotas.
It listens once it serves the newest snapshot and the log after it. The
build and compaction options above do not apply; DIR keeps the downloaded
snapshot.
${STORE_USAGE}

Operations endpoints (no key, outside the quotas): GET /healthz, GET /readyz,
GET /metrics (Prometheus). Stops on SIGTERM or SIGINT after answering the
requests in flight; compacts on SIGUSR2. A serving thread that fails is replaced by a new one;
after 10 replacements per serving thread within a minute, the next failure
stops serve with exit status 1.`;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'serve the v1 API',
  usage,
  async run(argv) {
    const { values } = parseCommandArgs(argv, {
      'data-dir': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'plain-http': { type: 'boolean' },
      plans: { type: 'string' },
      'metrics-token': { type: 'string' },
      'poll-ms': { type: 'string' },
      'build-threads': { type: 'string' },
      'full-rebuilds': { type: 'boolean' },
      'compact-vpas': { type: 'string' },
      'compact-minutes': { type: 'string' },
      'build-idle-seconds': { type: 'string' },
      threads: { type: 'string' },
      'log-level': { type: 'string' },
      'webhook-allow': { type: 'string' },
      'webhook-first-retry-seconds': { type: 'string' },
      ...REDIS_OPTIONS,
      ...STORE_OPTIONS,
    });
    const location = chooseStore(values);
    if (location !== null) {
      for (const option of EMBEDDED_ONLY) {
        if (values[option] !== undefined) throw new ConfigError(`--${option} is for the embedded mode: a follower (--store) never builds`);
      }
    }
    const dir = dataDir(values['data-dir']);
    const plain = values['plain-http'] === true;
    const host = values.host ?? '127.0.0.1';
    const port = intOption('port', values.port, plain ? 8080 : 8443, 0, 65535);
    const pollMs = intOption('poll-ms', values['poll-ms'], 1000, 50, 3_600_000);
    const buildThreads = values['build-threads'] === undefined ? undefined : intOption('build-threads', values['build-threads'], 1, 1, MAX_BUILD_THREADS);
    const threads = intOption('threads', values.threads, availableParallelism(), 1, 256);
    const buildIdleSeconds = intOption('build-idle-seconds', values['build-idle-seconds'], DEFAULT_BUILD_IDLE_MS / 1000, 0, MAX_BUILD_IDLE_SECONDS);
    const compaction = {
      vpas: intOption('compact-vpas', values['compact-vpas'], DEFAULT_COMPACTION.vpas, 0, 100_000_000),
      afterMs: intOption('compact-minutes', values['compact-minutes'], DEFAULT_COMPACTION.afterMs / 60_000, 1, 7 * 24 * 60) * 60_000,
    };
    const webhookAllow = new Set((values['webhook-allow'] ?? '').split(',').map((h) => h.trim().toLowerCase().replace(/^\[|\]$/g, '')).filter((h) => h !== ''));
    const firstRetrySeconds = intOption('webhook-first-retry-seconds', values['webhook-first-retry-seconds'], DEFAULT_DELIVERY.firstRetryMs / 1000, 1, 3600);
    const level = values['log-level'] ?? 'info';
    if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace'].includes(level)) throw new ConfigError(`--log-level must be fatal, error, warn, info, debug or trace`);
    if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) throw new ConfigError('--tls-cert and --tls-key go together');
    if (plain && values['tls-cert'] !== undefined) throw new ConfigError('--plain-http and --tls-cert exclude each other');
    const metricsToken = values['metrics-token'] ?? process.env.UPI_RISK_METRICS_TOKEN;
    // Synchronous: lines are out before the process exits, and a log reader that has gone away
    // (EPIPE) only silences the log. An asynchronous stream is flushed at exit by a loop that
    // retries EPIPE for ever, so a shutdown could hang.
    const logger: Logger = pino({ level, base: { service: 'upi-risk' } }, pino.destination({ dest: 2, sync: true }));
    // Standard output carries a line or two for people. Unhandled, a reader that has gone away
    // (EPIPE) would end the process as an uncaught error, and with the serving threads' sockets
    // still open Node aborts it (SIGABRT) instead of the server shutting down when asked.
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') logger.error({ err: error.message }, 'standard output failed');
    });

    const plans = await loadPlans(values.plans ?? DEFAULT_PLANS_FILE);
    let tls: TlsFiles | null = null;
    if (!plain) {
      if (values['tls-cert'] !== undefined) {
        tls = { certFile: values['tls-cert'], keyFile: values['tls-key']! };
        await checkTlsFiles(tls);
      } else {
        tls = await ensureSelfSignedCertificate(dir);
        logger.warn({ cert: tls.certFile }, 'no --tls-cert given: serving a self-signed certificate for localhost');
      }
    } else {
      logger.warn({}, '--plain-http: serving unencrypted HTTP; the spec requires TLS 1.3, so put a TLS-terminating proxy in front');
    }
    const missingTunables = missingGlibcTunables(process.env.GLIBC_TUNABLES, runsOnGlibc());
    if (missingTunables.length > 0) {
      logger.info(
        { missing: missingTunables.join(':') },
        'GLIBC_TUNABLES lacks allocator settings the service is measured with: expect more resident memory after builds (docs/operations.md, Memory)',
      );
    }
    // Before loading or building a snapshot, so a TLS set-up that cannot work fails at once
    // (each serving thread loads it again).
    if (tls !== null) createTlsApp(tls);

    const store = await chooseKeyBackend(dir, values, logger, undefined, location);
    const keys = new KeyRegistry(store.backend, (error) => logger.error({ err: error.message, keys: store.backend.description }, 'keys not reloaded; previous keys stay in force'));
    try {
      await keys.load();
    } catch (error) {
      // Only a store that cannot be read at all gets here (Redis down at start): keep retrying.
      if (store.redis === null) throw error;
      logger.error({ err: (error as Error).message }, 'keys not loaded yet; retrying');
    }
    keys.onChange((records) => logger.info({ activeKeys: records.length, store: store.backend.description }, 'API keys reloaded'));
    // A follower hears of key changes from the store (serveFollower); the poll is then only the fallback.
    keys.watch(location === null ? 250 : 1000);
    const metrics = new ServiceMetrics();
    const served =
      location === null
        ? await serveEmbedded(dir, logger, metrics, {
            pollMs,
            incrementalBuilds: values['full-rebuilds'] !== true,
            buildIdleMs: buildIdleSeconds * 1000,
            compaction,
            ...(buildThreads === undefined ? {} : { buildThreads }),
          })
        : await serveFollower(dir, logger, metrics, location, pollMs, keys);
    const service = served.service;
    const stats = new IntelligenceStats(served.stats);
    stats.start();
    const admin = new AdminService({
      registry: keys,
      keyAdmin: new KeyAdmin(store.backend, store.audit),
      audit: store.audit,
      sessions: served.sessions,
      usage: served.usage,
      plans,
      stats,
      compact: served.compact,
      logger,
    });
    const watch = await startWatching(served.watch, service, logger, webhookAllow, firstRetrySeconds * 1000);
    // Built by `npm ci` (and `npm start`); without it the API is served alone.
    const consoleAssets = await loadConsoleAssets();
    const quota = new QuotaService({ plans, ...(store.redis === null ? {} : { redis: store.redis, redisPrefix: store.prefix }) });
    const version = packageVersion();
    // Serving runs on worker threads even when there is one: builds and snapshot loads
    // hand large buffers to this thread, and the full collections those cause then
    // stall no request (see bench/MEASUREMENTS.md, 'Giving a replaced snapshot's memory back').
    const redisUrl = values.redis ?? process.env.REDIS_URL;
    /** Stops serving: by a signal (status 0), or when serving threads keep failing (status 1). */
    let stop: (why: { signal: string } | { reason: string }, status: number) => void = () => {};
    const stopped = new Promise<number>((resolve) => {
      let stopping = false;
      stop = (why, status) => {
        if (stopping) return;
        stopping = true;
        logger.info(why, 'shutting down: no new connections, finishing requests in flight');
        keys.close();
        resolve(status);
      };
    });
    const pool = await EdgePool.start({
      threads,
      host,
      port,
      tls,
      version,
      metricsToken,
      logLevel: level,
      plans,
      redis: store.redis === null || redisUrl === undefined ? null : { url: redisUrl, prefix: store.prefix },
      service,
      keys,
      quota,
      metrics,
      logger,
      // A process whose serving threads fail over and over is best started afresh by whatever runs it.
      onGiveUp: (error) => stop({ reason: error.message }, 1),
      ingest: async (body) => {
        const started = performance.now();
        const result = await served.ingest(body);
        if (result.kind === 'stored') stats.noteIngest(result.items, Math.round(performance.now() - started));
        return result;
      },
      admin: (request) => (isWatchRequest(request) ? watch.service.handle(request) : admin.handle(request)),
      onUsage: (entries) => admin.recordUsage(entries),
      console: consoleAssets,
    });
    const boundPort = pool.port;
    const stopServing = () => pool.drain();
    // Before the server says it listens: a signal sent as soon as it does must find its handler.
    process.once('SIGTERM', () => stop({ signal: 'SIGTERM' }, 0));
    process.once('SIGINT', () => stop({ signal: 'SIGINT' }, 0));
    logger.info({ host, port: boundPort, threads, tls: tls !== null, keys: keys.size, snapshot: service.current.meta.id }, 'listening');
    // An IPv6 address goes in brackets in a URL (RFC 3986), or the port cannot be told apart.
    const urlHost = host.includes(':') ? `[${host}]` : host;
    const base = `${tls === null ? 'http' : 'https'}://${urlHost}:${boundPort}`;
    process.stdout.write(`upi-risk listening on ${base}\n`);
    if (consoleAssets !== null) process.stdout.write(`console: ${base}/console/ (sign in with an admin-scoped API key)\n`);
    else logger.warn({}, 'the console is not built (dist/console); serving the API alone');

    process.on('SIGUSR2', () => {
      if (served.compact === null) logger.info({ signal: 'SIGUSR2' }, 'a follower does not compact: SIGUSR2 the active builder (upi-risk builder)');
      else served.compact('SIGUSR2');
    });
    const status = await stopped;
    await stopServing();
    stats.stop();
    await watch.close();
    await admin.close();
    await served.close();
    await store.close();
    logger.info({ status }, 'stopped');
    // Idle keep-alive connections would hold the event loop open; everything in flight is answered.
    process.exit(status);
  },
};

/** Watchlists of the data directory: screened on every change of what is served, their events delivered. */
async function startWatching(where: ServedMode['watch'], served: ServedData, logger: Logger, allowed: ReadonlySet<string>, firstRetryMs: number) {
  const policy = { ...DEFAULT_DELIVERY, firstRetryMs };
  const run = (store: WatchStore) => {
    const delivery = new WebhookDelivery(store, { allowed, logger, policy });
    const rescreener = new Rescreener(store, served, { logger, onEvents: () => delivery.wake() });
    rescreener.start();
    delivery.wake();
    return {
      delivery,
      rescreener,
      stop: async () => {
        await rescreener.close();
        await delivery.close();
      },
    };
  };
  if (where.kind === 'embedded') {
    const store = await FileWatchStore.open(watchJournalPath(where.dir));
    const running = run(store);
    return {
      service: new WatchService({ store, served, wake: () => running.delivery.wake(), allowed, logger }),
      close: async () => {
        await running.stop();
        await store.close();
      },
    };
  }
  // In the fleet every follower keeps the watchlists; the one holding the lease screens, delivers and keeps the journal short.
  const store = await PostgresWatchStore.open(where.pool, where.location, logger);
  let running: ReturnType<typeof run> | null = null;
  store.onApplied(() => running?.delivery.wake());
  const lease = new WatchLease(where.location, logger, async () => {
    const started = run(store);
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

/** Options serve takes only without a store: a follower builds nothing. */
const EMBEDDED_ONLY = ['build-threads', 'full-rebuilds', 'compact-vpas', 'compact-minutes', 'build-idle-seconds'] as const;

/** What serve serves, whichever the mode: the data, how evidence sent over HTTP is taken, SIGUSR2, and the end. */
interface ServedMode {
  readonly service: ServedData;
  /** What the console's Intelligence page shows of this mode. */
  readonly stats: StatsSources;
  /** Where console sessions and key usage are kept: this process and its data directory, or the fleet's store. */
  readonly sessions: SessionStore;
  readonly usage: UsageLedger;
  /** Where watchlists are kept: the data directory's journal, or the store's. */
  readonly watch: { readonly kind: 'embedded'; readonly dir: DataDir } | { readonly kind: 'fleet'; readonly pool: pg.Pool; readonly location: StoreLocation };
  readonly ingest: (body: Uint8Array) => Promise<IntakeResult>;
  /** Start a compaction (SIGUSR2, POST /v1/admin/compaction); null where this server builds nothing (a follower). */
  readonly compact: ((why: string) => { readonly started: boolean; readonly snapshot: string }) | null;
  close(): Promise<void>;
}

/** The embedded mode: the data directory's snapshots and evidence, builds and compactions in this process. */
async function serveEmbedded(
  dir: DataDir,
  logger: Logger,
  metrics: ServiceMetrics,
  options: Omit<SnapshotServiceOptions, 'dataDir' | 'logger'>,
): Promise<ServedMode> {
  const service = await SnapshotService.start({ dataDir: dir, logger, ...options });
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
    watch: { kind: 'embedded', dir },
    usage: await FileUsageLedger.open(usageFilePath(dir)),
    ingest: (body) => takeEvidence(service, dir, body),
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

/** The fleet mode: a follower of the store's published snapshots and evidence log. */
async function serveFollower(dir: DataDir, logger: Logger, metrics: ServiceMetrics, location: StoreLocation, pollMs: number, keys: KeyRegistry): Promise<ServedMode> {
  const follower = await FollowerService.start({ location, dataDir: dir, logger, pollMs });
  const intake = storePool(location, 4);
  const keyChanges = new StoreNotifications(location, [keysChannel(location)], () => void keys.check(), logger);
  metrics.observeSnapshot(follower.current);
  follower.onSwap((event) => metrics.observeSnapshot(event.next));
  const delta = () => deltaFigures(follower.delta, follower.delta.meta.bytes, follower.publication.createdAt.getTime());
  const storeState = () => ({ connected: follower.storeConnected, caughtUpAt: follower.caughtUpAt });
  metrics.watchDelta(delta);
  metrics.watchStore(storeState);
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
    watch: { kind: 'fleet', pool: intake, location },
    usage: new PostgresUsageLedger(intake, location),
    ingest: (body) => takeEvidenceIntoLog(intake, location, follower, body),
    compact: null,
    close: async () => {
      await keyChanges.close();
      await follower.close();
      await intake.end().catch(() => {});
    },
  };
}

function deltaFigures(delta: DeltaData, bytes: number, lastCompaction: number): DeltaFigures {
  const meta = delta.meta;
  const now = Date.now();
  return {
    vpas: meta.vpaCount,
    evidenceItems: meta.evidenceItems,
    bytes,
    ageSeconds: meta.vpaCount === 0 ? 0 : Math.max(0, (now - meta.since) / 1000),
    secondsSinceCompaction: Math.max(0, (now - lastCompaction) / 1000),
  };
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
