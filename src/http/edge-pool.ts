import { MessageChannel, Worker } from 'node:worker_threads';
import type { Logger } from '../common/logger.js';
import { ErrorCode, ServingError } from '../common/errors.js';
import { askThread } from './thread-ask.js';
import { claimFreePort, refuseTakenPort } from './port-claim.js';
import type { KeyRegistry } from '../access/key-registry.js';
import type { Quota } from '../access/quota.js';
import { serveQuota } from '../access/remote-quota.js';
import { SharedWindowTable } from '../access/shared-windows.js';
import type { ServedData } from '../service/served-data.js';
import type { HashRangeKeeper } from '../service/hash-range-keeper.js';
import type { MirrorPublications } from '../mirror/mirror-publication.js';
import type { IntakeResult } from '../service/evidence-intake.js';
import { stableCodeOf } from '../api/http-error.js';
import type { AdminAnswer, AdminRequest } from '../api/admin-requests.js';
import { readUsageEntries, type UsageEntry } from '../access/key-usage.js';
import type { ServiceMetrics } from './metrics.js';
import type { MetricJson } from './request-stats.js';
import { RetiredSnapshots } from './snapshot-release.js';
import { enableCollector, threadCollector } from '../common/collector.js';
import { droppedDeltas } from '../common/dropped-shared-memory.js';
import type { DeltaData } from '../engine/delta-data.js';
import type { SnapshotData } from '../engine/snapshot-data.js';
import type { EdgeWorkerData, FromEdge, ToEdge } from './edge-worker.js';

/** What every serving thread is configured with (EdgeWorkerData), plus what the main thread keeps. */
export interface EdgePoolOptions extends Omit<EdgeWorkerData, 'index' | 'quotaPort' | 'sharedWindows' | 'mirrorUnavailable'> {
  readonly service: ServedData;
  readonly keys: KeyRegistry;
  /** The main thread's quota: failed authentications per IP, asked by threads when there is no Redis. */
  readonly quota: Quota;
  /** The main thread's metrics (snapshot and build gauges). */
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** How failed serving threads are replaced (default DEFAULT_RESTARTS). */
  readonly restarts?: RestartPolicy;
  /**
   * Called once when serving threads fail faster than `restarts` allows and
   * the pool stops replacing them: the process should stop, so that what
   * supervises it starts it afresh (serve exits with status 1).
   */
  readonly onGiveUp?: (error: ServingError) => void;
  /** Store and serve evidence a serving thread received over HTTP (POST /v1/admin/evidence). */
  readonly ingest: (body: Uint8Array) => Promise<IntakeResult>;
  /** Answer an admin request a serving thread received (the admin API, console sessions). */
  readonly admin?: (request: AdminRequest) => Promise<AdminAnswer>;
  /** Each serving thread's key usage counts, every few seconds. */
  readonly onUsage?: (entries: readonly UsageEntry[]) => void;
  /** What is served by hash, for range lookups: handed to the threads with each snapshot and delta. */
  readonly hashes?: HashRangeKeeper;
  /** The local mirror's versions, handed to the threads as each is made. */
  readonly mirror?: MirrorPublications;
  /** Why there is no `mirror`, for its routes' 503. */
  readonly mirrorUnavailable?: string;
}

/**
 * A serving thread that fails is replaced after `firstDelayMs`, doubling
 * with each replacement made within the last `windowMs` up to `maxDelayMs`,
 * so a thread failing on every start cannot spin. `max` replacements per
 * serving thread may fall within `windowMs` (one fault reaching every
 * thread at once, a bad message, costs one each); at the next failure the
 * pool gives up.
 */
export interface RestartPolicy {
  readonly max: number;
  readonly windowMs: number;
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RESTARTS: RestartPolicy = { max: 10, windowMs: 60_000, firstDelayMs: 100, maxDelayMs: 5_000 };

/**
 * `serve --threads N`: N serving threads on one port (the kernel spreads
 * connections over them), fed by this thread. Every snapshot swap is posted
 * to every thread; the arrays live in SharedArrayBuffers, so all threads read
 * one copy of the index. A thread that fails (edge-worker.ts) is replaced by
 * a fresh one on the same port, given the current snapshot and keys.
 */
export class EdgePool {
  readonly port: number;
  readonly #workers: Worker[];
  readonly #options: EdgePoolOptions;
  readonly #draining: { value: boolean };
  readonly #replacements: Set<NodeJS.Timeout>;

  private constructor(port: number, workers: Worker[], options: EdgePoolOptions, draining: { value: boolean }, replacements: Set<NodeJS.Timeout>) {
    this.port = port;
    this.#workers = workers;
    this.#options = options;
    this.#draining = draining;
    this.#replacements = replacements;
  }

  static async start(options: EdgePoolOptions): Promise<EdgePool> {
    if (!Number.isInteger(options.threads) || options.threads < 1 || options.threads > 256) {
      throw new RangeError(`threads must be an integer from 1 to 256, got ${options.threads}`);
    }
    const policy = options.restarts ?? DEFAULT_RESTARTS;
    // Before the threads start, so each has `gc` (collector.ts: why replaced snapshots need it).
    enableCollector();
    const collect = threadCollector();
    const retired = new RetiredSnapshots(options.threads, {
      ...(collect === undefined ? {} : { collect: () => options.logger.debug({ ms: collect() }, 'collected after letting go of a replaced snapshot') }),
      // Once no serving thread reads a replaced snapshot, its memory carries the next rebuild's.
      reuse: (data) => {
        const kept = options.service.reuseMemoryOf(data);
        if (kept) options.logger.debug({ snapshot: data.meta.id }, 'replaced snapshot let go; its memory is kept for the next build');
        return kept;
      },
    });
    options.metrics.watchReplacedSnapshots(() => retired.held().length);
    // Several threads without Redis count key quotas in one shared table; one thread keeps its own.
    const sharedWindows = options.redis === null && options.threads > 1 ? new SharedWindowTable().buffer : null;
    const {
      service: _service,
      keys: _keys,
      quota: _quota,
      metrics: _metrics,
      logger: _logger,
      restarts: _restarts,
      onGiveUp: _onGiveUp,
      ingest: _ingest,
      admin: _admin,
      onUsage: _onUsage,
      hashes: _hashes,
      mirror: _mirror,
      mirrorUnavailable,
      ...shared
    } = options;
    // Threads share the port through SO_REUSEPORT, which uWS sets only for a concrete port: one is chosen, and claimed
    // so that another server choosing at the same moment cannot share it.
    const port = options.port === 0 ? await claimFreePort(options.host) : options.port;
    const workers: Worker[] = [];
    let scrapeFromAll: (() => Promise<string>) | null = null;
    /** Set once drain() starts: threads exit from then on, and that is no failure. */
    const draining = { value: false };
    /** Replacements waiting for their delay. */
    const replacements = new Set<NodeJS.Timeout>();
    /** When each recent replacement was made (Date.now), oldest first. */
    const recentRestarts: number[] = [];
    const maxRestarts = policy.max * options.threads;
    let gaveUp = false;
    /**
     * Each thread's metrics as of the last scrape, and the counters and
     * histograms of threads that have failed since: a replacement counts
     * from 0, and without what its predecessor had counted the summed
     * request counters would go down, which Prometheus reads as a reset.
     */
    const lastMetrics: (MetricJson[] | undefined)[] = [];
    const departedMetrics: MetricJson[][] = [];

    const startThread = (index: number): Worker => {
      const channel = new MessageChannel();
      serveQuota(channel.port1, options.quota);
      const data: EdgeWorkerData = { ...shared, index, quotaPort: channel.port2, sharedWindows, mirrorUnavailable: options.mirror === undefined ? (mirrorUnavailable ?? 'this server does not serve the mirror') : null };
      const worker = new Worker(new URL('./edge-worker.js', import.meta.url), { workerData: data, transferList: [channel.port2] });
      worker.on('error', (error) => options.logger.error({ thread: index, err: error.stack ?? error.message }, 'serving thread failed'));
      worker.once('exit', (code) => {
        channel.port1.close();
        retired.exited(index);
        if (draining.value || workers[index] !== worker) return;
        options.logger.error({ thread: index, code }, 'serving thread exited');
        const last = lastMetrics[index];
        if (last !== undefined) departedMetrics.push(last.filter((metric) => metric.type !== 'gauge'));
        lastMetrics[index] = undefined;
        replace(index);
      });
      worker.on('message', (message: FromEdge) => {
        if (message.type === 'scrape') {
          // Should the scrape fail, the asking thread answers 503 and lets the request go.
          scrapeFromAll!().then(
            (text) => worker.postMessage({ type: 'scraped', id: message.id, text } satisfies ToEdge),
            (error: Error) => worker.postMessage({ type: 'scrape-failed', id: message.id, message: error.message } satisfies ToEdge),
          );
        } else if (message.type === 'released') {
          retired.released(message.snapshot, index);
        } else if (message.type === 'admin') {
          const answered = options.admin === undefined ? Promise.reject(new Error('no admin API in this server')) : options.admin(message.request);
          answered.then(
            (answer) => worker.postMessage({ type: 'admin-answer', id: message.id, answer } satisfies ToEdge),
            (error: Error) => {
              options.logger.error({ thread: index, op: message.request.op, err: error.message }, 'admin request failed');
              worker.postMessage({ type: 'admin-failed', id: message.id, code: stableCodeOf(error) } satisfies ToEdge);
            },
          );
        } else if (message.type === 'usage') {
          // From a thread of this process, checked all the same: it is counted into what the console shows.
          options.onUsage?.(readUsageEntries(message.entries, (why) => new TypeError(`usage from thread ${index}: ${why}`)));
        } else if (message.type === 'ingest') {
          options.ingest(message.body).then(
            (result) => worker.postMessage({ type: 'ingested', id: message.id, result } satisfies ToEdge),
            (error: Error) => {
              options.logger.error({ thread: index, err: error.message }, 'evidence sent over HTTP was not stored');
              worker.postMessage({ type: 'ingest-failed', id: message.id, code: stableCodeOf(error) } satisfies ToEdge);
            },
          );
        }
      });
      return worker;
    };

    /** Start a thread in place of thread `index`, which failed, after the policy's delay; or give up. */
    const replace = (index: number): void => {
      if (gaveUp) return;
      const now = Date.now();
      while (recentRestarts.length > 0 && recentRestarts[0]! <= now - policy.windowMs) recentRestarts.shift();
      if (recentRestarts.length >= maxRestarts) {
        gaveUp = true;
        const message = `a serving thread failed again after ${maxRestarts} replacements within ${policy.windowMs / 1000} s; no more are started`;
        options.logger.error({ thread: index }, message);
        options.onGiveUp?.(new ServingError(ErrorCode.THREADS_FAILING, message));
        return;
      }
      const delay = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** recentRestarts.length);
      recentRestarts.push(now);
      const timer = setTimeout(() => {
        replacements.delete(timer);
        options.metrics.servingThreadRestarts.inc();
        const worker = startThread(index);
        workers[index] = worker;
        retired.started(index);
        worker.postMessage(snapshotMessage(options.service.current.data, options.service.delta));
        worker.postMessage({ type: 'keys', records: options.keys.records() } satisfies ToEdge);
        const publication = options.mirror?.publication ?? null;
        if (publication !== null) worker.postMessage({ type: 'mirror', publication } satisfies ToEdge);
        listenOn(worker, port).then(
          () => options.logger.warn({ thread: index, afterMs: delay }, 'serving thread replaced'),
          (error: Error) => {
            // Stopped by drain() before it listened: nothing went wrong.
            if (draining.value) return;
            options.logger.error({ thread: index, err: error.message }, 'replacement serving thread did not listen');
            // Its exit counts as another failure, and the policy decides what comes next.
            worker.postMessage({ type: 'drain' } satisfies ToEdge);
          },
        );
      }, delay);
      replacements.add(timer);
    };

    const snapshotMessage = (data: SnapshotData, delta: DeltaData): ToEdge => ({
      type: 'snapshot',
      data,
      delta,
      ranges: options.hashes?.rangesOf(data) ?? null,
      deltaHashes: options.hashes?.hashesOf(delta) ?? null,
    });
    for (let index = 0; index < options.threads; index++) workers.push(startThread(index));
    const send = (message: ToEdge) => {
      for (const worker of workers) worker.postMessage(message);
    };
    send(snapshotMessage(options.service.current.data, options.service.delta));
    // Each new delta replaces one in shared memory, here as on the serving threads (dropped-shared-memory.ts).
    const dropped = droppedDeltas(collect);
    let served = options.service.delta;
    const replaceDelta = (delta: DeltaData) => {
      if (delta !== served) dropped.dropped(served.meta.bytes);
      served = delta;
    };
    options.service.onDelta((delta) => {
      send({ type: 'delta', delta, deltaHashes: options.hashes?.hashesOf(delta) ?? null });
      replaceDelta(delta);
    });
    send({ type: 'keys', records: options.keys.records() });
    options.service.onSwap((event) => {
      send(snapshotMessage(event.next.data, event.delta));
      replaceDelta(event.delta);
      // The old snapshot's memory is let go on this thread, not a serving one (snapshot-release.ts).
      if (event.previous !== null) retired.retire(event.previous.data);
    });
    options.keys.onChange((records) => send({ type: 'keys', records }));
    options.hashes?.onRanges((made) => send({ type: 'ranges', ranges: made.ranges }));
    options.mirror?.onPublication((publication) => send({ type: 'mirror', publication }));

    let nextId = 0;
    scrapeFromAll = async () => {
      options.metrics.observeSnapshot(options.service.current);
      const others: MetricJson[][] = [...departedMetrics];
      for (const [index, worker] of workers.entries()) {
        // A thread that has stopped, or stops meanwhile, has nothing to report: the others still do.
        const reply = await askThread(worker, { type: 'metrics', id: nextId++ }, 'metrics').catch(() => null);
        if (reply === null) continue;
        const json = (reply as Extract<FromEdge, { type: 'metrics' }>).json as MetricJson[];
        // Not kept for a thread replaced while this scrape waited: the exit handler has moved its figures already.
        if (workers[index] === worker) lastMetrics[index] = json;
        others.push(json);
      }
      return options.metrics.text(others);
    };

    const pool = new EdgePool(port, workers, options, draining, replacements);
    try {
      // Again right before the threads bind, `serve` having tried at its start: the gap is one message to each thread.
      if (options.port !== 0) await refuseTakenPort(options.host, port);
      await Promise.all(workers.map((worker) => listenOn(worker, port)));
    } catch (error) {
      // No pool is handed out to stop later: stop every thread now, and replace none.
      await pool.drain();
      throw error;
    }
    return pool;
  }

  /** Stop accepting, let every thread answer what it has in flight, close its connections and end. */
  async drain(): Promise<void> {
    this.#draining.value = true;
    for (const timer of this.#replacements) clearTimeout(timer);
    this.#replacements.clear();
    await Promise.all(
      this.#workers.map(async (worker) => {
        // A thread that stopped earlier has nothing to drain, and its 'exit' will not come again.
        if (worker.threadId === -1) return;
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        // One that stops meanwhile has nothing left to drain either: wait for its exit all the same.
        await askThread(worker, { type: 'drain' }, 'drained').catch(() => {});
        await exited;
      }),
    );
    this.#options.logger.info({ threads: this.#workers.length }, 'serving threads stopped');
  }
}

async function listenOn(worker: Worker, port: number): Promise<number> {
  const reply = await askThread(worker, { type: 'listen', port }, 'listening', 'listen-failed');
  if (reply.type === 'listen-failed') throw new ServingError(ErrorCode.LISTEN, reply.message);
  return (reply as Extract<FromEdge, { type: 'listening' }>).port;
}
