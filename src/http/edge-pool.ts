import { MessageChannel, Worker } from 'node:worker_threads';
import { createServer, type AddressInfo } from 'node:net';
import type { Logger } from '../common/logger.js';
import { UpiRiskError } from '../common/errors.js';
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

  private constructor(port: number, workers: Worker[], options: EdgePoolOptions) {
    this.port = port;
    this.#workers = workers;
    this.#options = options;
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
    for (let index = 0; index < options.threads; index++) {
      const channel = new MessageChannel();
      serveQuota(channel.port1, options.quota);
      const { service: _service, keys: _keys, quota: _quota, metrics: _metrics, logger: _logger, ...shared } = options;
      const data: EdgeWorkerData = { ...shared, index, quotaPort: channel.port2, sharedWindows };
      const worker = new Worker(new URL('./edge-worker.js', import.meta.url), { workerData: data, transferList: [channel.port2] });
      worker.on('error', (error) => options.logger.error({ thread: index, err: error.stack ?? error.message }, 'serving thread failed'));
      worker.on('message', (message: FromEdge) => {
        if (message.type === 'scrape') {
          // A thread that exits meanwhile fails the scrape; the asking thread answers 503 and lets the request go.
          scrapeFromAll!().then(
            (text) => worker.postMessage({ type: 'scraped', id: message.id, text } satisfies ToEdge),
            (error: Error) => worker.postMessage({ type: 'scrape-failed', id: message.id, message: error.message } satisfies ToEdge),
          );
        } else if (message.type === 'released') {
          retired.released(message.snapshot);
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
      for (const worker of workers) others.push((await ask(worker, { type: 'metrics', id: nextId++ }, 'metrics')) as MetricJson[]);
      return options.metrics.text(others);
    };

    // Threads share the port through SO_REUSEPORT, which uWS sets only for a concrete port.
    const port = options.port === 0 ? await freePort(options.host) : options.port;
    await Promise.all(workers.map((worker) => listenOn(worker, port)));
    return new EdgePool(port, workers, options);
  }

  /** Stop accepting, let every thread answer what it has in flight, close its connections and end. */
  async drain(): Promise<void> {
    const exits = this.#workers.map((worker) => new Promise((resolve) => worker.once('exit', resolve)));
    await Promise.all(this.#workers.map((worker) => ask(worker, { type: 'drain' }, 'drained')));
    await Promise.all(exits);
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
  const reply = (await ask(worker, { type: 'listen', port }, 'listening', 'listen-failed')) as FromEdge;
  if (reply.type === 'listen-failed') throw new UpiRiskError('ERR_LISTEN', reply.message);
  return (reply as { port: number }).port;
}

/** Post a message and wait for the first reply of one of the given types (with a matching id when the request has one). */
function ask(worker: Worker, message: ToEdge, ...types: FromEdge['type'][]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const id = 'id' in message ? message.id : undefined;
    const onMessage = (reply: FromEdge) => {
      if (!types.includes(reply.type)) return;
      if (id !== undefined && 'id' in reply && reply.id !== id) return;
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(reply.type === 'metrics' ? reply.json : reply);
    };
    const onExit = (code: number) => reject(new UpiRiskError('ERR_THREAD', `serving thread exited with ${code}`));
    worker.on('message', onMessage);
    worker.once('exit', onExit);
    worker.postMessage(message);
  });
}
