/**
 * The answer-building module against a fake snapshot: verdicts, batch items
 * and clusters from Intelligence. Encoding those answers is timed in
 * answer-json.bench.ts.
 *
 *   node --expose-gc dist/bench/intelligence.bench.js [--vpas 1000000] [--time 2000] [--json FILE]
 *
 * Queries are fresh flat strings (as a request parser makes them), a tenth
 * upper-cased and a tenth capitalised, cycled through pools larger than the
 * CPU caches. Uncached cluster assembly cycles through more distinct ids than
 * the cluster cache holds, so no call hits it; the cached case cycles through
 * a few hundred ids primed just before it runs.
 */
import { Bench } from 'tinybench';
import { Intelligence } from '../src/engine/intelligence.js';
import { formatClusterId } from '../src/engine/verdict.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { microOptions, taskRows, writeBenchReport } from './support/report.js';
import { knownVpas, shuffledOrder, unknownVpas } from './support/vpas.js';

const QUERIES = 1 << 18;
/** Must exceed the cluster cache (1024 entries) for the uncached case; 20k+ at 1M VPAs. */
const UNCACHED_CLUSTERS = 65_536;
/** Well below the cluster cache's 1024 entries, so every call is a hit. */
const CACHED_CLUSTERS = 512;
const CLUSTER_CACHE_SIZE = 1024;

const { vpas: vpaCount, time: taskTime, json } = microOptions();

const gc = (globalThis as { gc?: () => void }).gc;

// ---------------------------------------------------------------------------
// Cluster ids

/** Cluster ids in a shuffled order, so consecutive calls read unrelated parts of the snapshot. */
function clusterIds(intel: Intelligence, count: number, seed: number): string[] {
  const numbers = intel.data.clusterNumber;
  const order = shuffledOrder(numbers.length, seed);
  return Array.from(order.subarray(0, Math.min(count, order.length)), (ordinal) => formatClusterId(numbers[ordinal]!));
}

// ---------------------------------------------------------------------------
// Tasks

interface Counters {
  calls: number;
  /** Calls whose answer was the expected kind (flagged, cleared, found). */
  expected: number;
  sink: number;
}

function counters(): Counters {
  return { calls: 0, expected: 0, sink: 0 };
}

/** A task calling `call` on each item of `pool` in turn; `call` returns a number (0 = not as expected). */
function cycling<T>(pool: readonly T[], c: Counters, call: (item: T) => number): () => void {
  const n = pool.length;
  let next = 0;
  return () => {
    const result = call(pool[next]!);
    next = next + 1 === n ? 0 : next + 1;
    c.calls++;
    if (result !== 0) c.expected++;
    c.sink += result;
  };
}

// ---------------------------------------------------------------------------
// Run

function main(): void {
  const t0 = performance.now();
  const intel = new Intelligence(fakeSnapshot(vpaCount));
  const t1 = performance.now();
  const clusterCount = intel.meta.clusterCount;
  if (clusterCount <= CLUSTER_CACHE_SIZE) {
    throw new Error(`${clusterCount} clusters; the uncached case needs more than ${CLUSTER_CACHE_SIZE} (--vpas of 25000 or more)`);
  }
  const flaggedQ = knownVpas(intel.data, QUERIES, 1);
  const unknownQ = unknownVpas(intel, QUERIES, 2);
  const uncachedIds = clusterIds(intel, UNCACHED_CLUSTERS, 3);
  const cachedIds = clusterIds(intel, CACHED_CLUSTERS, 4);
  const t2 = performance.now();
  console.log(
    `node ${process.version}, ${vpaCount} VPAs, ${clusterCount} clusters (snapshot ${Math.round(t1 - t0)} ms, pools ${Math.round(t2 - t1)} ms), gc ${gc ? 'exposed' : 'not exposed'}`,
  );
  if (uncachedIds.length < 20_000) console.log(`note: only ${uncachedIds.length} cluster ids to cycle; 20k+ needs --vpas 400000 or more`);

  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  const collect = { beforeAll: () => gc?.() };
  const tasks: { name: string; counters: Counters }[] = [];
  const add = <T>(name: string, pool: readonly T[], call: (item: T) => number, options: { beforeAll: () => void } = collect): void => {
    const c = counters();
    bench.add(name, cycling(pool, c, call), options);
    tasks.push({ name, counters: c });
  };

  add('verdict, flagged', flaggedQ, (q) => {
    const v = intel.verdict(q);
    return v.status === 'FLAGGED' ? v.sources.length : 0;
  });
  add('verdict, unknown', unknownQ, (q) => (intel.verdict(q).status === 'CLEARED' ? 1 : 0));
  add('batchItem, flagged', flaggedQ, (q) => {
    const item = intel.batchItem(q);
    return item.status === 'FLAGGED' ? item.evidence_count : 0;
  });
  // FIFO eviction at 1024 entries and a cycle of more distinct ids than that:
  // each id was evicted before it comes round again, so every call assembles.
  add(`cluster, uncached (${uncachedIds.length} ids)`, uncachedIds, (id) => intel.cluster(id)?.size ?? 0);
  // Primed before each phase, so the first calls hit as well.
  const primeCache = (): void => {
    gc?.();
    for (const id of cachedIds) intel.cluster(id);
  };
  add(`cluster, cached (${cachedIds.length} ids)`, cachedIds, (id) => intel.cluster(id)?.size ?? 0, { beforeAll: primeCache });
  bench.runSync();

  for (const { name, counters: c } of tasks) {
    if (c.expected !== c.calls) throw new Error(`${name}: ${c.calls - c.expected} of ${c.calls} answers not as expected`);
  }
  // The uncached case really missed: a cache hit returns the object it
  // returned before, so two passes over the cycle must share no object.
  const firstPass = uncachedIds.map((id) => intel.cluster(id));
  const hits = uncachedIds.filter((id, i) => intel.cluster(id) === firstPass[i]).length;
  if (hits !== 0) throw new Error(`cluster, uncached: ${hits} of ${uncachedIds.length} calls hit the cache`);

  const rows = taskRows(bench);
  console.table(rows);

  if (json !== undefined) {
    writeBenchReport(json, 'intelligence', vpaCount, {
      rows,
      clusters: clusterCount,
      queriesPerPool: QUERIES,
      uncachedClusterIds: uncachedIds.length,
      cachedClusterIds: cachedIds.length,
    });
  }
  // The sinks feed every result somewhere observable, so no call is dead code.
  if (tasks.reduce((sum, t) => sum + t.counters.sink, 0) === 0.5) console.log('unreachable');
}

main();
