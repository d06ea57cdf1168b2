import { MessageChannel, Worker } from 'node:worker_threads';
import { createServer, type AddressInfo } from 'node:net';
import type { Logger } from '../common/logger.js';
import { UpiRiskError } from '../common/errors.js';
import { askThread } from './thread-ask.js';
import type { KeyRegistry } from '../access/key-store.js';
import type { Quota } from '../access/quota.js';
import { serveQuota } from '../access/remote-quota.js';
import { SharedWindowTable } from '../access/shared-windows.js';
import type { IntelligenceService } from '../service/intelligence-service.js';
import type { ServiceMetrics } from './metrics.js';
import type { MetricJson } from './request-stats.js';
import { RetiredSnapshots } from './snapshot-release.js';
import { enableCollector, threadCollector } from '../common/collector.js';
import type { EdgeWorkerData, FromEdge, ToEdge } from './edge-worker.js';

/** What every serving thread is configured with (EdgeWorkerData), plus what the main thread keeps. */
export interface EdgePoolOptions extends Omit<EdgeWorkerData, 'index' | 'quotaPort' | 'sharedWindows'> {
  readonly service: IntelligenceService;
  readonly keys: KeyRegistry;
  /** The main thread's quota: failed authentications per IP, asked by threads when there is no Redis. */
  readonly quota: Quota;
  /** The main thread's metrics (snapshot and build gauges). */
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
}

/**
 * `serve --threads N`: N serving threads on one port (the kernel spreads
 * connections over them), fed by this thread. Every snapshot swap is posted
 * to every thread; the arrays live in SharedArrayBuffers, so all threads read
 * one copy of the index.
 */
export class EdgePool {
  readonly port: number;
  readonly #workers: Worker[];
  readonly #options: EdgePoolOptions;
  readonly #draining: { value: boolean };

  private constructor(port: number, workers: Worker[], options: EdgePoolOptions, draining: { value: boolean }) {
    this.port = port;
    this.#workers = workers;
    this.#options = options;
    this.#draining = draining;
  }

  static async start(options: EdgePoolOptions): Promise<EdgePool> {
    if (!Number.isInteger(options.threads) || options.threads < 1 || options.threads > 256) {
      throw new RangeError(`threads must be an integer from 1 to 256, got ${options.threads}`);
    }
    const workers: Worker[] = [];
    // Before the threads start, so each has `gc` (collector.ts: why replaced snapshots need it).
    enableCollector();
    const collect = threadCollector();
    const retired = new RetiredSnapshots(
      options.threads,
      collect === undefined ? {} : { collect: () => options.logger.debug({ ms: collect() }, 'collected after letting go of a replaced snapshot') },
    );
    options.metrics.watchReplacedSnapshots(() => retired.held().length);
    // Several threads without Redis count key quotas in one shared table; one thread keeps its own.
    const sharedWindows = options.redis === null && options.threads > 1 ? new SharedWindowTable().buffer : null;
    let scrapeFromAll: (() => Promise<string>) | null = null;
    /** Set once drain() starts: threads exit from then on, and that is no failure. */
    const draining = { value: false };
    for (let index = 0; index < options.threads; index++) {
      const channel = new MessageChannel();
      serveQuota(channel.port1, options.quota);
      const { service: _service, keys: _keys, quota: _quota, metrics: _metrics, logger: _logger, ...shared } = options;
      const data: EdgeWorkerData = { ...shared, index, quotaPort: channel.port2, sharedWindows };
      const worker = new Worker(new URL('./edge-worker.js', import.meta.url), { workerData: data, transferList: [channel.port2] });
      worker.on('error', (error) => options.logger.error({ thread: index, err: error.stack ?? error.message }, 'serving thread failed'));
      worker.once('exit', (code) => {
        retired.exited(index);
        if (!draining.value) options.logger.error({ thread: index, code }, 'serving thread exited');
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
        }
      });
      workers.push(worker);
    }
    const send = (message: ToEdge) => {
      for (const worker of workers) worker.postMessage(message);
    };
    send({ type: 'snapshot', data: options.service.current.data });
    send({ type: 'keys', records: options.keys.records() });
    options.service.onSwap((event) => {
      send({ type: 'snapshot', data: event.next.data });
      // The old snapshot's memory is let go on this thread, not a serving one (snapshot-release.ts).
      if (event.previous !== null) retired.retire(event.previous.data);
    });
    options.keys.onChange((records) => send({ type: 'keys', records }));

    let nextId = 0;
    scrapeFromAll = async () => {
      options.metrics.observeSnapshot(options.service.current);
      const others: MetricJson[][] = [];
      for (const worker of workers) {
        // A thread that has stopped, or stops meanwhile, has nothing to report: the others still do.
        const reply = await askThread(worker, { type: 'metrics', id: nextId++ }, 'metrics').catch(() => null);
        if (reply !== null) others.push((reply as Extract<FromEdge, { type: 'metrics' }>).json as MetricJson[]);
      }
      return options.metrics.text(others);
    };

    // Threads share the port through SO_REUSEPORT, which uWS sets only for a concrete port.
    const port = options.port === 0 ? await freePort(options.host) : options.port;
    await Promise.all(workers.map((worker) => listenOn(worker, port)));
    return new EdgePool(port, workers, options, draining);
  }

  /** Stop accepting, let every thread answer what it has in flight, close its connections and end. */
  async drain(): Promise<void> {
    this.#draining.value = true;
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

/** A port nothing listens on now (asked of the kernel, then released). */
export async function freePort(host: string): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.listen(0, host, resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function listenOn(worker: Worker, port: number): Promise<number> {
  const reply = await askThread(worker, { type: 'listen', port }, 'listening', 'listen-failed');
  if (reply.type === 'listen-failed') throw new UpiRiskError('ERR_LISTEN', reply.message);
  return (reply as Extract<FromEdge, { type: 'listening' }>).port;
}
