import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import type { DataDir } from '../common/data-dir.js';
import type { Logger } from '../common/logger.js';
import { missingGlibcTunables, runsOnGlibc } from '../common/malloc-tuning.js';
import { KeyRegistry } from '../access/key-registry.js';
import { loadPlans, type PlansConfig } from '../access/plans.js';
import { QuotaService } from '../access/quota.js';
import { KeyAdmin } from '../access/key-admin.js';
import type { SessionStore } from '../access/console-sessions.js';
import type { AuditLog } from '../access/audit-log.js';
import type { UsageLedger } from '../access/key-usage.js';
import { AdminService } from '../admin/admin-service.js';
import { IntelligenceStats, type StatsSources } from '../admin/intelligence-stats.js';
import { isCorrectionRequest, isDisputeRequest, isHistoryRequest, isWatchRequest } from '../api/admin-requests.js';
import { CorrectionRequests, type ListingDesk } from '../corrections/requests.js';
import type { DisputeStore } from '../corrections/dispute-store.js';
import { DisputeService } from '../corrections/disputes.js';
import type { DeltaData } from '../engine/delta-data.js';
import { ServiceMetrics } from '../http/metrics.js';
import { checkTlsFiles, createTlsApp, ensureSelfSignedCertificate, type TlsFiles } from '../http/tls.js';
import { EdgePool } from '../http/edge-pool.js';
import { claimPort } from '../http/port-claim.js';
import { HashRangeKeeper } from '../service/hash-range-keeper.js';
import { MirrorKeeper } from '../service/mirror-keeper.js';
import { loadMirrorKey } from '../mirror/signing-key.js';
import type { MirrorPublications } from '../mirror/mirror-publication.js';
import { MirrorVersionFile } from '../mirror/version-record.js';
import { loadConsoleAssets } from '../http/console-assets.js';
import type { IntakeResult } from '../service/evidence-intake.js';
import type { DeltaFigures, ServedData } from '../service/served-data.js';
import type { StoreLocation } from '../store/postgres.js';
import { chooseKeyBackend } from './key-backends.js';
import type { WatchSettings, Watching } from './watch-screening.js';
import { HistoryRequests } from '../history/history-requests.js';
import type { ServedVersions } from '../history/served-versions.js';
import type { AnswerReader } from '../history/answer-changes.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The options of `upi-risk serve` both modes take, checked. */
export interface ServeOptions {
  readonly dir: DataDir;
  readonly host: string;
  readonly port: number;
  /** A certificate and key given, a self-signed one generated into the data directory, or plain HTTP. */
  readonly tls: TlsFiles | 'self-signed' | 'plain-http';
  readonly plansFile: string | URL;
  /** Bearer token for GET /metrics; without one, /metrics answers loopback clients only. */
  readonly metricsToken: string | undefined;
  /** How often to look for new evidence and snapshots, ms. */
  readonly pollMs: number;
  /** Serving threads on the shared port. */
  readonly threads: number;
  readonly logLevel: LogLevel;
  /** --redis and --redis-prefix as given; the URL falls back to $REDIS_URL. */
  readonly redisUrl: string | undefined;
  readonly redisPrefix: string | undefined;
  /** Hosts webhooks may reach although they are private or loopback. */
  readonly webhookAllow: ReadonlySet<string>;
  readonly webhookFirstRetryMs: number;
  /** The least time between two mirror versions, ms. */
  readonly mirrorIntervalMs: number;
  /** How long the record of data versions served is kept, days; 0: not recorded. */
  readonly historyDays: number;
}

/** What a mode serves: the data, how evidence sent over HTTP is taken, watchlists, disputes and reports, SIGUSR2, and the end. */
export interface ServedMode {
  readonly service: ServedData;
  /** What the console's Intelligence page shows of this mode. */
  readonly stats: StatsSources;
  /** Where console sessions and key usage are kept: this process and its data directory, or the fleet's store. */
  readonly sessions: SessionStore;
  readonly usage: UsageLedger;
  /** Watchlists kept in the data directory's journal, or in the store's. */
  readonly startWatching: (settings: WatchSettings) => Promise<Watching>;
  readonly ingest: (body: Uint8Array) => Promise<IntakeResult>;
  /** Disputes and reports kept in the data directory's journal, or in the store's tables. */
  readonly openDisputes: () => Promise<DisputeStore>;
  /** Start a compaction (SIGUSR2, POST /v1/admin/compaction); null where this server builds nothing (a follower). */
  readonly compact: ((why: string) => { readonly started: boolean; readonly snapshot: string }) | null;
  /** Where retractions and clearances are recorded: the data directory's journal, or the store's log. */
  readonly corrections: ListingDesk;
  /** The record of the data versions served, in the data directory or the store (GET /v1/data-versions/{version}). */
  readonly versions: ServedVersions;
  /** How each VPA's answer changed (GET /v1/verify/upi/history). */
  readonly answers: AnswerReader;
  close(): Promise<void>;
}

/** One of serve's modes, as the serving process both run needs it. */
export interface ServingMode {
  /** The fleet store that keeps the keys, or null for the data directory (or Redis). */
  readonly keyStore: StoreLocation | null;
  /** How often the keys are read again, ms: a follower also hears of changes from the store, so its poll is a fallback. */
  readonly keyPollMs: number;
  /**
   * Take the data directory for this process, resolving to its release;
   * null where the mode needs no hold on it (a follower keeps only its
   * downloaded snapshot there, and the store is the truth).
   */
  readonly claimDataDir: (() => Promise<() => Promise<void>>) | null;
  /**
   * Where the mirror's versions come from: 'data-dir' makes them in this
   * process with the data directory's signing key (embedded); a function
   * opens a source of versions made elsewhere (a follower serves what the
   * fleet's builder signed, which no single follower may sign).
   */
  readonly mirror: 'data-dir' | ((logger: Logger) => Promise<MirrorPublications>);
  /** `audit`: where changes are recorded with who made them (the console's audit log). */
  start(logger: Logger, metrics: ServiceMetrics, keys: KeyRegistry, audit: AuditLog): Promise<ServedMode>;
}

/**
 * Serves the v1 API over the serving threads until SIGTERM or SIGINT (exit
 * status 0), or until serving threads keep failing (status 1); ends the
 * process.
 */
export async function runServer(options: ServeOptions, mode: ServingMode): Promise<number> {
  // Synchronous: lines are out before the process exits, and a log reader that has gone away
  // (EPIPE) only silences the log. An asynchronous stream is flushed at exit by a loop that
  // retries EPIPE for ever, so a shutdown could hang.
  const logger: Logger = pino({ level: options.logLevel, base: { service: 'upi-risk' } }, pino.destination({ dest: 2, sync: true }));
  // Standard output carries a line or two for people. Unhandled, a reader that has gone away
  // (EPIPE) would end the process as an uncaught error, and with the serving threads' sockets
  // still open Node aborts it (SIGABRT) instead of the server shutting down when asked.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') logger.error({ err: error.message }, 'standard output failed');
  });

  // The operator's own files first: a set-up that cannot work fails at once, whoever holds the data directory.
  const plans = await loadPlans(options.plansFile);
  const givenTls = typeof options.tls === 'object' ? options.tls : null;
  if (givenTls !== null) {
    await checkTlsFiles(givenTls);
    // Before loading or building a snapshot (each serving thread loads it again).
    createTlsApp(givenTls);
  }
  // Then the data directory, before anything of it is read or written (a self-signed certificate
  // generated into it included) and long before the port is bound: a second server of the
  // directory refuses to start, instead of sharing the port with the first (SO_REUSEPORT).
  const release = mode.claimDataDir === null ? null : await mode.claimDataDir();
  let status: number;
  try {
    status = await serveUntilStopped(options, mode, logger, plans, givenTls);
  } finally {
    // Also when the start failed: the error is printed and the process ends right after.
    await release?.();
  }
  // Idle keep-alive connections would hold the event loop open; everything in flight is answered.
  process.exit(status);
}

/** The server's life: started, served until stopped, and everything closed; resolves to the exit status. */
async function serveUntilStopped(options: ServeOptions, mode: ServingMode, logger: Logger, plans: PlansConfig, givenTls: TlsFiles | null): Promise<number> {
  const { dir, host, threads } = options;
  // A port another process listens on or claims fails now, not after the snapshot is loaded (EdgePool probes again before binding).
  if (options.port !== 0) await claimPort(host, options.port);
  const tls = givenTls ?? (await generatedTls(options, logger));
  const missingTunables = missingGlibcTunables(process.env.GLIBC_TUNABLES, runsOnGlibc());
  if (missingTunables.length > 0) {
    logger.info(
      { missing: missingTunables.join(':') },
      'GLIBC_TUNABLES lacks allocator settings the service is measured with: expect more resident memory after builds (docs/operations.md, Memory)',
    );
  }

  const store = await chooseKeyBackend(dir, { redis: options.redisUrl, 'redis-prefix': options.redisPrefix }, logger, undefined, mode.keyStore);
  const keys = new KeyRegistry(store.backend, (error) => logger.error({ err: error.message, keys: store.backend.description }, 'keys not reloaded; previous keys stay in force'));
  try {
    await keys.load();
  } catch (error) {
    // Only a store that cannot be read at all gets here (Redis down at start): keep retrying.
    if (store.redis === null) throw error;
    logger.error({ err: (error as Error).message }, 'keys not loaded yet; retrying');
  }
  keys.onChange((records) => logger.info({ activeKeys: records.length, store: store.backend.description }, 'API keys reloaded'));
  keys.watch(mode.keyPollMs);
  const metrics = new ServiceMetrics();
  metrics.watchResidentBytes();
  const served = await mode.start(logger, metrics, keys, store.audit);
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
  const corrections = new CorrectionRequests({ desk: served.corrections, logger });
  const history = new HistoryRequests(served.versions, served.answers, logger);
  metrics.watchVersionRecord(() => served.versions.unavailable);
  metrics.watchAnswerHistory(() => served.answers.unavailable, () => served.answers.bytes, () => served.answers.indexBytes);
  const watch = await served.startWatching({ served: service, logger, allowed: options.webhookAllow, firstRetryMs: options.webhookFirstRetryMs, ownerActive: (id) => keys.isActive(id) });
  const ingest = async (body: Uint8Array): Promise<IntakeResult> => {
    const started = performance.now();
    const result = await served.ingest(body);
    if (result.kind === 'stored') stats.noteIngest(result.items, Math.round(performance.now() - started));
    return result;
  };
  const disputes = new DisputeService({ store: await served.openDisputes(), served: service, audit: store.audit, ingest, desk: served.corrections, logger });
  // Built by `npm ci` (and `npm start`); without it the API is served alone.
  const consoleAssets = await loadConsoleAssets();
  const quota = new QuotaService({ plans, ...(store.redis === null ? {} : { redis: store.redis, redisPrefix: store.prefix }) });
  const version = packageVersion();
  // Serving runs on worker threads even when there is one: builds and snapshot loads
  // hand large buffers to this thread, and the full collections those cause then
  // stall no request (see bench/MEASUREMENTS.md, 'Giving a replaced snapshot's memory back').
  const redisUrl = options.redisUrl ?? process.env.REDIS_URL;
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
  const mirrorKey = mode.mirror === 'data-dir' ? await loadMirrorKey(dir.mirror) : null;
  // Hashed on as many threads as serve: at 10M that is seconds after each swap.
  const hashes = new HashRangeKeeper(service, { threads: Math.max(1, Math.min(threads, availableParallelism())), logger });
  metrics.watchHashRanges(() => hashes.bytes);
  const mirror: MirrorPublications | null =
    mode.mirror !== 'data-dir'
      ? await mode.mirror(logger)
      : mirrorKey === null
        ? null
        : await MirrorKeeper.start(service, hashes, { record: new MirrorVersionFile(dir.mirror), key: mirrorKey, logger, intervalMs: options.mirrorIntervalMs });
  const noMirror = 'the mirror is not served: the data directory holds no signing key (upi-risk mirror-key create)';
  const pool = await EdgePool.start({
    threads,
    hashes,
    ...(mirror === null ? { mirrorUnavailable: noMirror } : { mirror }),
    host,
    port: options.port,
    tls,
    version,
    metricsToken: options.metricsToken,
    logLevel: options.logLevel,
    plans,
    redis: store.redis === null || redisUrl === undefined ? null : { url: redisUrl, prefix: store.prefix },
    service,
    keys,
    quota,
    metrics,
    logger,
    // A process whose serving threads fail over and over is best started afresh by whatever runs it.
    onGiveUp: (error) => stop({ reason: error.message }, 1),
    ingest,
    admin: (request) =>
      isWatchRequest(request)
        ? watch.service.handle(request)
        : isCorrectionRequest(request)
          ? corrections.handle(request)
          : isDisputeRequest(request)
            ? disputes.handle(request)
            : isHistoryRequest(request)
              ? history.handle(request)
              : admin.handle(request),
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
  await mirror?.close();
  hashes.close();
  stats.stop();
  await watch.close();
  await disputes.close();
  await admin.close();
  await served.close();
  await store.close();
  logger.info({ status }, 'stopped');
  return status;
}

/** The self-signed certificate generated into the data directory, checked; null for plain HTTP. Given files are checked before. */
async function generatedTls(options: ServeOptions, logger: Logger): Promise<TlsFiles | null> {
  if (options.tls === 'plain-http') {
    logger.warn({}, '--plain-http: serving unencrypted HTTP; the spec requires TLS 1.3, so put a TLS-terminating proxy in front');
    if (options.metricsToken === undefined) {
      // A proxy on this host connects from loopback: /metrics would answer whoever the proxy forwards.
      logger.warn({}, '--plain-http without --metrics-token: GET /metrics answers every loopback connection, a proxy on this host included; set --metrics-token');
    }
    return null;
  }
  const generated = await ensureSelfSignedCertificate(options.dir);
  logger.warn({ cert: generated.certFile }, 'no --tls-cert given: serving a self-signed certificate for localhost');
  // Before loading or building a snapshot, so a TLS set-up that cannot work fails at once.
  createTlsApp(generated);
  return generated;
}

/** The live delta's figures for metrics and the console. */
export function deltaFigures(delta: DeltaData, bytes: number, lastCompaction: number): DeltaFigures {
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
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
