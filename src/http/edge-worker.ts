import { performance } from 'node:perf_hooks';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { pino } from 'pino';
import uWS from 'uWebSockets.js';
import { SnapshotView } from '../engine/snapshot-view.js';
import { ServingView } from '../engine/serving-view.js';
import type { SnapshotData } from '../engine/snapshot-data.js';
import type { DeltaData } from '../engine/delta-data.js';
import type { DeltaHashes, HashRanges } from '../engine/hash-ranges.js';
import type { MirrorPublication } from '../mirror/mirror-publication.js';
import type { KeyRecord } from '../access/key-record.js';
import { ActiveKeys } from '../access/active-keys.js';
import { QuotaService, type Quota } from '../access/quota.js';
import { RemoteQuota } from '../access/remote-quota.js';
import { SharedWindowTable } from '../access/shared-windows.js';
import type { PlansConfig } from '../access/plans.js';
import { createRedisClient, redisReady } from '../common/redis.js';
import { silentLogger } from '../common/logger.js';
import { createApiApp } from './app.js';
import type { RangeSource } from './route-kit.js';
import { ServiceMetrics } from './metrics.js';
import { listen, type Listening } from './server.js';
import { createTlsApp, type TlsFiles } from './tls.js';
import { ReleaseWatch } from './snapshot-release.js';
import { startIncrementalMarking, threadCollector } from '../common/collector.js';
import { droppedDeltas } from '../common/dropped-shared-memory.js';
import { serviceUnavailable, unavailableAfter } from '../api/http-error.js';
import type { IntakeResult } from '../service/evidence-intake.js';
import type { AdminAnswer, AdminRequest } from '../api/admin-requests.js';
import { UsageCounter, type UsageEntry } from '../access/key-usage.js';
import type { ConsoleAssets } from './console-assets.js';

/**
 * One serving thread of `serve --threads N`: a uWebSockets.js app on the
 * shared port. Everything heavy stays with the main thread: snapshots arrive
 * as SharedArrayBuffer-backed arrays (one copy of the index for all threads),
 * keys arrive whenever they change, key quotas are counted in a table all
 * serving threads share (or in Redis in the shared mode), and failed
 * authentications per IP are counted by the main thread.
 */
export interface EdgeWorkerData {
  readonly index: number;
  /** Serving threads in all: a thread that is alone keeps its quotas itself. */
  readonly threads: number;
  readonly host: string;
  readonly port: number;
  readonly tls: TlsFiles | null;
  readonly version: string;
  readonly metricsToken: string | undefined;
  readonly logLevel: string;
  readonly plans: PlansConfig;
  readonly redis: { readonly url: string; readonly prefix: string } | null;
  readonly quotaPort: MessagePort;
  /** The key quota table of all serving threads (SharedWindowTable), when there are several and no Redis. */
  readonly sharedWindows: SharedArrayBuffer | null;
  /** The console's files, when it is built. */
  readonly console: ConsoleAssets | null;
  /** Why this server serves no mirror, or null when it does (its versions come as 'mirror' messages). */
  readonly mirrorUnavailable: string | null;
}

export type ToEdge =
  /** A snapshot and the delta over it, served together from now on. */
  | { readonly type: 'snapshot'; readonly data: SnapshotData; readonly delta: DeltaData; readonly ranges: HashRanges | null; readonly deltaHashes: DeltaHashes | null }
  /** A new state of the delta over the snapshot served. */
  | { readonly type: 'delta'; readonly delta: DeltaData; readonly deltaHashes: DeltaHashes | null }
  /** The served snapshot's ranges, made after it was first served. */
  | { readonly type: 'ranges'; readonly ranges: HashRanges }
  /** The local mirror's newest version. */
  | { readonly type: 'mirror'; readonly publication: MirrorPublication }
  | { readonly type: 'keys'; readonly records: readonly KeyRecord[] }
  | { readonly type: 'listen'; readonly port: number }
  | { readonly type: 'drain' }
  | { readonly type: 'metrics'; readonly id: number }
  | { readonly type: 'scraped'; readonly id: number; readonly text: string }
  | { readonly type: 'scrape-failed'; readonly id: number; readonly message: string }
  | { readonly type: 'ingested'; readonly id: number; readonly result: IntakeResult }
  | { readonly type: 'ingest-failed'; readonly id: number; readonly code: string | null }
  | { readonly type: 'admin-answer'; readonly id: number; readonly answer: AdminAnswer }
  | { readonly type: 'admin-failed'; readonly id: number; readonly code: string | null };

export type FromEdge =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'listen-failed'; readonly message: string }
  | { readonly type: 'drained' }
  | { readonly type: 'metrics'; readonly id: number; readonly json: unknown }
  | { readonly type: 'scrape'; readonly id: number }
  | { readonly type: 'released'; readonly snapshot: string }
  /** Evidence sent to POST /v1/admin/evidence, for the main thread to store and serve. */
  | { readonly type: 'ingest'; readonly id: number; readonly body: Uint8Array }
  /** An admin request (routes/admin.ts, routes/watchlists.ts) for the main thread, which holds keys, sessions and records. */
  | { readonly type: 'admin'; readonly id: number; readonly request: AdminRequest }
  /** Key usage counted since the last hand-over. */
  | { readonly type: 'usage'; readonly entries: readonly UsageEntry[] };

/**
 * Under constant load, how long a serving thread leaves incremental marking
 * (and idle moments) to free a replaced snapshot before it pauses for a full
 * collection, ms: marking frees it within a second unless a request still
 * holds it, and a large snapshot is not to be kept for long.
 */
const FORCED_COLLECTION_MS = 10_000;
/**
 * How much later each serving thread (by index) may start marking for a
 * replaced snapshot than the one before it, ms. Threads look every quarter
 * second (snapshot-release.ts), so the first marks 250 ms after the swap
 * and the second at 500 ms: long enough for one thread's marking and its
 * closing pause to end before the next starts (see bench/MEASUREMENTS.md,
 * 'Giving a replaced snapshot's memory back').
 */
const MARKING_TURN_MS = 500;

const config = workerData as EdgeWorkerData;
const port = parentPort!;
const post = (message: FromEdge) => port.postMessage(message);
// Written synchronously: a serving thread logs little (never per request), and a thread that
// fails must have its last line out before it exits (an asynchronous write may be dropped).
const logger = pino({ level: config.logLevel, base: { service: 'upi-risk', thread: config.index } }, pino.destination({ dest: 2, sync: true }));
const keys = new ActiveKeys();
const holder: { current: ServingView } = { current: null as unknown as ServingView };
const metrics = new ServiceMetrics(String(config.index));
/** The served snapshot's hash ranges once made, and each view's delta hashes (for range lookups). */
const hashed = { ranges: null as HashRanges | null, deltas: new WeakMap<ServingView, DeltaHashes | null>() };
const mirror: { current: MirrorPublication | null; readonly unavailable: string | null } = { current: null, unavailable: config.mirrorUnavailable };
const ranges: RangeSource = {
  rangesFor(view) {
    const made = hashed.ranges;
    if (made === null || made.snapshotId !== view.base.meta.id) return null;
    const delta = hashed.deltas.get(view);
    return delta === undefined ? null : { ranges: made, delta };
  },
};
const collect = threadCollector();
/** When this thread last replaced its snapshot (performance.now): the collection log says how long after it each step came. */
let swappedAt = 0;
const sinceSwapMs = (): number => Math.round(performance.now() - swappedAt);
const releases = new ReleaseWatch(
  (snapshot) => post({ type: 'released', snapshot }),
  collect === undefined
    ? undefined
    : {
        collect: () => {
          const since = sinceSwapMs();
          logger.debug({ ms: collect(), sinceSwapMs: since }, 'collected after a snapshot swap');
        },
        startMarking: () => {
          if (startIncrementalMarking()) logger.debug({ sinceSwapMs: sinceSwapMs() }, 'started incremental marking after a snapshot swap');
        },
        answered: () => metrics.requests.answered,
        inFlight: () => api.inFlight(),
        // Threads a second apart: under constant load they pause one at a time.
        forceAfterMs: FORCED_COLLECTION_MS + config.index * 1000,
        // In turns, so that under load the marking of one has ended before the next starts.
        markAfterMs: config.index * MARKING_TURN_MS,
      },
);
/** Replaced deltas, collected once enough have piled up (dropped-shared-memory.ts), without a long pause. */
const replacedDeltas = droppedDeltas(collect);
let quota: Quota;
if (config.redis === null && config.threads === 1) {
  // The only serving thread: its quotas are the process's, decided here without a message per request.
  // A thread started in place of a failed one starts its windows afresh (EdgePool); with several
  // threads the shared table outlives any one of them.
  quota = new QuotaService({ plans: config.plans });
} else if (config.redis === null) {
  // Key quotas decided here, at once, from the table every serving thread shares (shared-windows.ts
  // says why at once); the rarer failed authentications are counted per IP by the main thread.
  const table = new SharedWindowTable(config.sharedWindows ?? undefined);
  quota = new RemoteQuota(config.quotaPort, new QuotaService({ plans: config.plans, sharedWindows: table }));
} else {
  // The main thread logs Redis outages and recoveries once for the process.
  const redis = createRedisClient(config.redis.url, silentLogger);
  await redisReady(redis, 5_000);
  quota = new QuotaService({ plans: config.plans, redis, redisPrefix: config.redis.prefix });
}

/** Scrapes waiting for the main thread's text, by id; each is settled by 'scraped' or 'scrape-failed'. */
const scrapes = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
let nextScrape = 0;
/** Evidence bodies waiting for the main thread, by id; each is settled by 'ingested' or 'ingest-failed'. */
const intakes = new Map<number, { resolve: (result: IntakeResult) => void; reject: (error: Error) => void }>();
let nextIntake = 0;
/** Admin requests waiting for the main thread, by id; each is settled by 'admin-answer' or 'admin-failed'. */
const adminRequests = new Map<number, { resolve: (answer: AdminAnswer) => void; reject: (error: Error) => void }>();
let nextAdminRequest = 0;
const usage = new UsageCounter();
/** How often key usage goes to the main thread, ms: the console's "last used" is this coarse. */
const USAGE_HAND_OVER_MS = 5_000;
const handOverUsage = (): void => {
  const entries = usage.drain();
  if (entries.length > 0) post({ type: 'usage', entries });
};
setInterval(handOverUsage, USAGE_HAND_OVER_MS).unref();
const api = createApiApp(
  {
    served: holder,
    ranges,
    mirror,
    keys,
    quota,
    logger,
    metrics,
    version: config.version,
    ...(config.threads > 1 ? { thread: config.index } : {}),
    ...(config.metricsToken === undefined ? {} : { metricsToken: config.metricsToken }),
    usage,
    ...(config.console === null ? {} : { console: config.console }),
    admin: (request) =>
      new Promise<AdminAnswer>((resolve, reject) => {
        const id = nextAdminRequest++;
        adminRequests.set(id, { resolve, reject });
        post({ type: 'admin', id, request });
      }),
    ingest: (body) =>
      new Promise<IntakeResult>((resolve, reject) => {
        const id = nextIntake++;
        intakes.set(id, { resolve, reject });
        post({ type: 'ingest', id, body });
      }),
    scrape: () =>
      new Promise<string>((resolve, reject) => {
        const id = nextScrape++;
        scrapes.set(id, { resolve, reject });
        post({ type: 'scrape', id });
      }),
  },
  config.tls === null ? uWS.App() : createTlsApp(config.tls),
);
let listening: Listening | null = null;

/**
 * A thread must not end with uWS sockets open: Node aborts the whole process
 * when a worker's loop still has handles. app.close() (present at run time,
 * missing from the typings) closes the listener and every connection, idle
 * keep-alives included.
 */
const closeApp = (): void => (api.app as unknown as { close(): void }).close();

/**
 * An error no handler caught (a bug, or a broken message from the main
 * thread) leaves this thread in a state nobody can vouch for, so it stops
 * and the main thread starts a fresh one in its place (EdgePool). Left to
 * Node, the thread would end with uWS sockets open, and Node aborts the
 * whole process when a worker's loop still has handles: every thread's
 * connections would go down with it. Closing the app first drops only this
 * thread's connections; the kernel sends new ones to the other threads.
 * A promise rejected with no handler arrives here too (Node's default).
 */
let failed = false;
process.on('uncaughtException', (thrown: unknown) => {
  if (failed) return;
  failed = true;
  const error = thrown instanceof Error ? thrown : new Error(String(thrown));
  // Each close on its own: an error escaping this handler would leave the sockets open.
  try {
    listening?.close();
  } catch {}
  try {
    closeApp();
  } catch {}
  logger.fatal({ err: error.stack ?? error.message }, 'serving thread failed; its connections are closed');
  // As drained() does: a moment for uWS to finish closing before the thread ends.
  setTimeout(() => process.exit(1), 20);
});

port.on('message', (message: ToEdge) => {
  // A failed thread only waits to exit: above all, it must not start listening again.
  if (failed) return;
  switch (message.type) {
    case 'snapshot': {
      // The arrays are views of shared memory: nothing is copied here.
      const started = performance.now();
      const previous = holder.current as ServingView | null;
      holder.current = new ServingView(new SnapshotView(message.data), message.delta);
      hashed.ranges = message.ranges ?? (hashed.ranges?.snapshotId === message.data.meta.id ? hashed.ranges : null);
      hashed.deltas.set(holder.current, message.deltaHashes);
      swappedAt = performance.now();
      metrics.observeSwap((swappedAt - started) / 1000);
      if (previous !== null) releases.watch(previous.base.data);
      break;
    }
    case 'delta': {
      // The same snapshot beside a new delta; one sent for a snapshot replaced since is dropped.
      const current = holder.current as ServingView | null;
      if (current === null || message.delta.meta.baseId !== current.base.meta.id) break;
      holder.current = new ServingView(current.base, message.delta);
      hashed.deltas.set(holder.current, message.deltaHashes);
      replacedDeltas.dropped(current.deltaMeta?.bytes ?? 0);
      break;
    }
    case 'mirror':
      mirror.current = message.publication;
      break;
    case 'ranges':
      if (message.ranges.snapshotId === holder.current.base.meta.id) hashed.ranges = message.ranges;
      break;
    case 'keys':
      keys.replace(message.records);
      break;
    case 'listen':
      listen(api.app, config.host, message.port).then(
        (l) => {
          if (failed) {
            l.close();
            return;
          }
          listening = l;
          post({ type: 'listening', port: l.port });
        },
        (error: Error) => post({ type: 'listen-failed', message: error.message }),
      );
      break;
    case 'drain':
      listening?.close();
      api.drain();
      void drained();
      break;
    case 'metrics':
      // The main thread waits for an answer: a failure answers with no figures, as a stopped thread's would.
      metrics.json().then(
        (json) => post({ type: 'metrics', id: message.id, json }),
        (error: unknown) => {
          logger.error({ err: String(error) }, "this thread's metrics could not be read; the scrape goes on without them");
          post({ type: 'metrics', id: message.id, json: [] });
        },
      );
      break;
    case 'scraped':
      scrapes.get(message.id)?.resolve(message.text);
      scrapes.delete(message.id);
      break;
    case 'scrape-failed':
      scrapes.get(message.id)?.reject(serviceUnavailable(`metrics are unavailable: ${message.message}`));
      scrapes.delete(message.id);
      break;
    case 'ingested':
      intakes.get(message.id)?.resolve(message.result);
      intakes.delete(message.id);
      break;
    case 'admin-answer':
      adminRequests.get(message.id)?.resolve(message.answer);
      adminRequests.delete(message.id);
      break;
    case 'admin-failed':
      adminRequests.get(message.id)?.reject(unavailableAfter('the admin request failed', message));
      adminRequests.delete(message.id);
      break;
    case 'ingest-failed':
      intakes.get(message.id)?.reject(unavailableAfter('the evidence was not stored', message));
      intakes.delete(message.id);
      break;
  }
});

async function drained(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (api.inFlight() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  closeApp();
  handOverUsage();
  post({ type: 'drained' });
  setTimeout(() => process.exit(0), 20);
}
