import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, get } from 'node:http';
import { createServer } from 'node:net';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import type { DeltaData } from '../../src/engine/delta-data.js';
import { emptyDelta } from '../../src/builder/delta-merge.js';
import type { SnapshotData } from '../../src/engine/snapshot-data.js';
import type { ServedData, SwapEvent } from '../../src/service/served-data.js';
import type { KeyRegistry } from '../../src/access/key-registry.js';
import { QuotaService } from '../../src/access/quota.js';
import { loadPlans } from '../../src/access/plans.js';
import type { UpiRiskError } from '../../src/common/errors.js';
import type { Logger } from '../../src/common/logger.js';
import { EdgePool, type RestartPolicy } from '../../src/http/edge-pool.js';
import { ServiceMetrics } from '../../src/http/metrics.js';
import { buildInProcess, evidence, readyOverNewConnection, snapshotsByThread } from '../helpers.js';

/**
 * A serving thread that throws outside any request handler (here: it is
 * handed a snapshot it cannot read) must not take the process down with it.
 * These run the pool in the test process: were a failed thread to end with
 * its sockets open, Node would abort this very process.
 */

/** The service side the pool uses: the current snapshot and its swaps, which a test hands out itself. */
class SnapshotSource {
  current: { readonly data: SnapshotData };
  /** Ids of the replaced snapshots handed on for the next build's memory, in order. */
  readonly reused: string[] = [];
  readonly #listeners: ((event: SwapEvent) => void)[] = [];

  constructor(current: SnapshotView) {
    this.current = current;
  }

  onSwap(listener: (event: SwapEvent) => void): void {
    this.#listeners.push(listener);
  }

  /** No delta here: every change is a swap. */
  get delta(): DeltaData {
    return deltaOver(this.current.data);
  }

  onDelta(): void {}

  /**
   * Swap every serving thread to `data` without making it the current
   * snapshot; with `previous`, that one is retired, to be handed on once no
   * thread holds it.
   */
  push(data: SnapshotData, previous?: SnapshotData): void {
    const event: SwapEvent = {
      previous: previous === undefined ? null : ({ data: previous } as SnapshotView),
      next: { data } as SnapshotView,
      delta: deltaOver(data),
      reason: 'rebuild',
    };
    for (const listener of this.#listeners) listener(event);
  }

  /** As ServedData.reuseMemoryOf: never the snapshot served. */
  reuseMemoryOf(data: SnapshotData): boolean {
    if (data === this.current.data) return false;
    this.reused.push(data.meta.id);
    return true;
  }
}

/** An empty delta over `data`; over nothing for unservable data, whose thread fails on the snapshot first. */
function deltaOver(data: SnapshotData): DeltaData {
  return data.meta === null ? ({ meta: { baseId: '', vpaCount: 0 } } as DeltaData) : emptyDelta(data, 0);
}

interface LogLine {
  readonly level: string;
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

function recordingLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => lines.push({ level, fields, message });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Snapshot data no thread can make a SnapshotView of. */
function unreadable(data: SnapshotData): SnapshotData {
  return { ...data, meta: null } as unknown as SnapshotData;
}

/** Two serving threads fed by `source`; what they log and each time the pool gives up are recorded. */
async function startPool(source: SnapshotSource, restarts: RestartPolicy, port = 0) {
  const lines: LogLine[] = [];
  const gaveUp: UpiRiskError[] = [];
  const plans = await loadPlans();
  const metrics = new ServiceMetrics();
  const keys = { records: () => [], onChange: () => {} } as unknown as KeyRegistry;
  const pool = await EdgePool.start({
    threads: 2,
    host: '127.0.0.1',
    port,
    tls: null,
    version: 'test',
    metricsToken: undefined,
    logLevel: 'silent',
    plans,
    redis: null,
    service: source as unknown as ServedData,
    keys,
    quota: new QuotaService({ plans }),
    metrics,
    logger: recordingLogger(lines),
    restarts,
    onGiveUp: (error) => gaveUp.push(error),
    console: null,
    ingest: () => Promise.reject(new Error('no evidence here')),
  });
  return { pool, metrics, lines, gaveUp };
}

async function eventually(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Keep-alive connections left open to the threads, so a failing thread has live sockets to close. */
async function openKeepAlive(port: number): Promise<Agent> {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  await Promise.all(
    Array.from(
      { length: 8 },
      () =>
        new Promise<void>((resolve, reject) => {
          get(`http://127.0.0.1:${port}/healthz`, { agent }, (res) => res.resume().on('end', resolve)).on('error', reject);
        }),
    ),
  );
  return agent;
}

/** The process-wide total of upi_risk_http_requests_total, from GET /metrics (loopback, no token). */
function requestsTotal(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    get(`http://127.0.0.1:${port}/metrics`, { agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        const values = [...text.matchAll(/^upi_risk_http_requests_total\{[^}]*\} (\S+)$/gm)].map((m) => Number(m[1]));
        resolve(values.reduce((a, b) => a + b, 0));
      });
    }).on('error', reject);
  });
}

async function restartCount(metrics: ServiceMetrics): Promise<number> {
  return (await metrics.servingThreadRestarts.get()).values[0]?.value ?? 0;
}

const view = buildInProcess([evidence('failing.thread@ybl', 'https://t.example/a')]);

test('a serving thread that fails is replaced on the same port, serving the current snapshot', { timeout: 60_000 }, async () => {
  const source = new SnapshotSource(view);
  const { pool, metrics, lines, gaveUp } = await startPool(source, { max: 10, windowMs: 60_000, firstDelayMs: 20, maxDelayMs: 100 });
  try {
    const before = await snapshotsByThread(`http://127.0.0.1:${pool.port}`, 2);
    assert.deepEqual([...before.entries()].sort(), [[0, view.meta.id], [1, view.meta.id]]);
    const idle = await openKeepAlive(pool.port);
    const countedBefore = await requestsTotal(pool.port);
    assert.ok(countedBefore >= 10);

    source.push(unreadable(view.data));
    await eventually(() => lines.filter((l) => l.message === 'serving thread replaced').length === 2, 'both threads replaced');

    const exits = lines.filter((l) => l.message === 'serving thread exited');
    assert.deepEqual(exits.map((l) => l.fields.thread).sort(), [0, 1]);
    assert.ok(exits.every((l) => l.fields.code === 1), 'a failed thread exits with status 1');
    const after = await snapshotsByThread(`http://127.0.0.1:${pool.port}`, 2);
    assert.deepEqual([...after.entries()].sort(), [[0, view.meta.id], [1, view.meta.id]], 'both threads answer again, from the current snapshot');
    assert.equal(await restartCount(metrics), 2);
    assert.ok((await requestsTotal(pool.port)) > countedBefore, 'the request counters keep what the failed threads had counted');
    assert.deepEqual(gaveUp, []);
    idle.destroy();
  } finally {
    await pool.drain();
  }
});

test('serving threads that keep failing make the pool give up, once, and stop replacing them', { timeout: 60_000 }, async () => {
  const source = new SnapshotSource(view);
  const { pool, metrics, lines, gaveUp } = await startPool(source, { max: 3, windowMs: 60_000, firstDelayMs: 10, maxDelayMs: 40 });
  try {
    // Every replacement is handed the current snapshot, and this one fails each of them.
    const broken = unreadable(view.data);
    source.current = { data: broken };
    source.push(broken);
    await eventually(() => gaveUp.length > 0, 'the pool to give up');
    assert.equal(gaveUp[0]!.code, 'ERR_THREADS_FAILING');
    // Three replacements per thread: the failure after the sixth gives up.
    assert.match(gaveUp[0]!.message, /failed again after 6 replacements within 60 s/);

    // Both threads end up stopped, and nothing more is started.
    await eventually(() => lines.filter((l) => l.message === 'serving thread exited').length === 8, 'the last thread to exit');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await restartCount(metrics), 6);
    assert.equal(gaveUp.length, 1);
    await assert.rejects(readyOverNewConnection(`http://127.0.0.1:${pool.port}/readyz`), { code: 'ECONNREFUSED' }, 'nothing serves once every thread has stopped');
  } finally {
    await pool.drain();
  }
});

test('a pool whose threads cannot listen stops them all and rejects, replacing none', { timeout: 60_000 }, async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as { port: number };
  const source = new SnapshotSource(view);
  try {
    await assert.rejects(startPool(source, { max: 10, windowMs: 60_000, firstDelayMs: 10, maxDelayMs: 40 }, port), { code: 'ERR_LISTEN' });
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
});

test('threads started in place of failed ones hold the snapshot they serve until they drop it: only then is its memory handed on', { timeout: 60_000 }, async () => {
  // Snapshots are told apart by id.
  const named = (id: string) => ({ data: { ...view.data, meta: { ...view.data.meta, id } }, meta: { id } }) as unknown as SnapshotView;
  const [first, second, third] = [named('first'), named('second'), named('third')];
  const source = new SnapshotSource(first);
  const { pool, lines } = await startPool(source, { max: 10, windowMs: 60_000, firstDelayMs: 20, maxDelayMs: 100 });
  try {
    source.current = second;
    source.push(second.data, first.data);
    await eventually(() => source.reused.includes(first.meta.id), 'the first snapshot handed on once both threads dropped it');

    // Both threads fail; their replacements are handed the current snapshot, the second.
    source.push(unreadable(second.data));
    await eventually(() => lines.filter((l) => l.message === 'serving thread replaced').length === 2, 'both threads replaced');
    const served = await snapshotsByThread(`http://127.0.0.1:${pool.port}`, 2);
    assert.deepEqual([...served.values()], [second.meta.id, second.meta.id]);
    assert.deepEqual(source.reused, [first.meta.id], 'nothing the replacements serve is handed on');

    // Replaced again, the second is handed on only once the new threads report it dropped.
    source.current = third;
    source.push(third.data, second.data);
    assert.deepEqual(source.reused, [first.meta.id], 'the new threads may still read it');
    await eventually(() => source.reused.includes(second.meta.id), 'the second snapshot handed on');
    const after = await snapshotsByThread(`http://127.0.0.1:${pool.port}`, 2);
    assert.deepEqual([...after.values()], [third.meta.id, third.meta.id]);
    assert.deepEqual(source.reused, [first.meta.id, second.meta.id]);
  } finally {
    await pool.drain();
  }
});
