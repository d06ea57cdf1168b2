/**
 * The answer-building module against a fake snapshot: verdicts, batch items
 * and clusters from Intelligence, then the JSON encoding of those answers.
 *
 *   node --expose-gc dist/bench/intelligence.bench.js [--vpas 1000000] [--time 2000] [--json FILE]
 *
 * Queries are fresh flat strings (as a request parser makes them), a tenth
 * upper-cased and a tenth capitalised, cycled through pools larger than the
 * CPU caches. Uncached cluster assembly cycles through more distinct ids than
 * the cluster cache holds, so no call hits it; the cached case cycles through
 * a few hundred ids primed just before it runs. The objects encoded are built
 * before timing; the mean encoded size is printed next to each encoding.
 * Having survived into the old generation they are colder than the fresh
 * answers a request encodes, so these encoding times likely run high.
 */
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { NOT_FOUND } from '../src/common/brand.js';
import { Intelligence } from '../src/engine/intelligence.js';
import { formatClusterId, type BatchItem, type BatchResponse, type Cluster, type VpaVerdict } from '../src/engine/verdict.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { taskRows, wholeNumberOption, writeReport, type Row } from './support/report.js';

const QUERIES = 1 << 18;
/** Objects per encoding pool: distinct answers, a few MB of them. */
const OBJECTS = 4096;
const BATCH = 100;
/** Must exceed the cluster cache (1024 entries) for the uncached case; 20k+ at 1M VPAs. */
const UNCACHED_CLUSTERS = 65_536;
/** Well below the cluster cache's 1024 entries, so every call is a hit. */
const CACHED_CLUSTERS = 512;
const CLUSTER_CACHE_SIZE = 1024;

const { values: args } = parseArgs({
  options: {
    vpas: { type: 'string', default: '1000000' },
    time: { type: 'string', default: '2000' },
    json: { type: 'string' },
  },
  strict: true,
});
const vpaCount = wholeNumberOption('vpas', args.vpas);
const taskTime = wholeNumberOption('time', args.time);

const gc = (globalThis as { gc?: () => void }).gc;

// ---------------------------------------------------------------------------
// Queries

const PROVIDERS = ['ybl', 'okaxis', 'paytm', 'ibl', 'axl', 'apl', 'okicici', 'oksbi', 'okhdfcbank', 'upi', 'axisbank', 'kotak'];
const FIRST = ['rahul', 'priya', 'amit', 'sneha', 'vikram', 'anita', 'suresh', 'deepa', 'arjun', 'kavya', 'rohan', 'meera'];
const LAST = ['sharma', 'verma', 'patel', 'reddy', 'iyer', 'nair', 'singh', 'khan', 'gupta', 'das', 'rao', 'joshi'];

/** A well-mixed uint32 of i (murmur3 finaliser), for per-item choices. */
function mix(i: number): number {
  let h = Math.imul(i ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function pick<T>(list: readonly T[], r: number): T {
  return list[r % list.length]!;
}

/** A valid payee VPA, mostly outside the fake snapshot's key space (a word and a short base-36 id). */
function payeeVpa(i: number): string {
  const r = mix(i);
  const n = mix(i ^ 0x5bd1e995);
  const provider = pick(PROVIDERS, r >>> 4);
  switch (r % 4) {
    case 0:
    case 1:
      return `${6_000_000_000 + (n % 4_000_000_000)}@${provider}`;
    case 2:
      return `${pick(FIRST, r >>> 8)}.${pick(LAST, r >>> 16)}${n % 10_000}@${provider}`;
    default:
      return `q${100_000_000 + (n % 900_000_000)}@ybl`;
  }
}

/** Case varied as users type, then copied through bytes so the string is flat, not a rope. */
function asQuery(vpa: string, r: number): string {
  const style = r % 10;
  const varied = style === 0 ? vpa.toUpperCase() : style === 1 ? vpa[0]!.toUpperCase() + vpa.slice(1) : vpa;
  return Buffer.from(varied, 'latin1').toString('latin1');
}

function flaggedQueries(intel: Intelligence, count: number, seed: number): string[] {
  const { keyBytes, keyOffsets } = intel.data;
  const bytes = Buffer.from(keyBytes.buffer, keyBytes.byteOffset, keyBytes.byteLength);
  const pool: string[] = [];
  for (let n = 0; n < count; n++) {
    const r = mix(n * 2 + seed);
    const id = r % vpaCount;
    pool.push(asQuery(bytes.toString('latin1', keyOffsets[id]!, keyOffsets[id + 1]!), r >>> 8));
  }
  return pool;
}

function unknownQueries(intel: Intelligence, count: number, seed: number): string[] {
  const pool: string[] = [];
  for (let i = seed * 1_000_003; pool.length < count; i++) {
    const vpa = payeeVpa(i);
    if (intel.lookup(vpa) === NOT_FOUND) pool.push(asQuery(vpa, mix(~i)));
  }
  return pool;
}

/** Cluster ids in a shuffled order, so consecutive calls read unrelated parts of the snapshot. */
function clusterIds(intel: Intelligence, count: number, seed: number): string[] {
  const numbers = intel.data.clusterNumber;
  const order = Uint32Array.from({ length: numbers.length }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = mix(i + seed) % (i + 1);
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
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

function meanJsonBytes(pool: readonly object[]): number {
  let total = 0;
  for (const item of pool) total += Buffer.byteLength(JSON.stringify(item));
  return Math.round(total / pool.length);
}

function batchResponse(intel: Intelligence, flaggedQ: readonly string[], unknownQ: readonly string[], at: number, flaggedEvery: number): BatchResponse {
  const results: BatchItem[] = [];
  let flagged = 0;
  for (let j = 0; j < BATCH; j++) {
    const k = at * BATCH + j;
    const isFlagged = j % flaggedEvery === 0;
    const item = intel.batchItem(isFlagged ? flaggedQ[k % flaggedQ.length]! : unknownQ[k % unknownQ.length]!);
    if (item.status === 'FLAGGED') flagged++;
    results.push(item);
  }
  return { results, total: BATCH, flagged_count: flagged, cleared_count: BATCH - flagged };
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
  const flaggedQ = flaggedQueries(intel, QUERIES, 1);
  const unknownQ = unknownQueries(intel, QUERIES, 2);
  const uncachedIds = clusterIds(intel, UNCACHED_CLUSTERS, 3);
  const cachedIds = clusterIds(intel, CACHED_CLUSTERS, 4);

  const flaggedVerdicts: VpaVerdict[] = flaggedQ.slice(0, OBJECTS).map((q) => intel.verdict(q));
  const clearedVerdicts: VpaVerdict[] = unknownQ.slice(0, OBJECTS).map((q) => intel.verdict(q));
  const mixedBatches: BatchResponse[] = [];
  const flaggedBatches: BatchResponse[] = [];
  for (let b = 0; b < OBJECTS / 4; b++) {
    mixedBatches.push(batchResponse(intel, flaggedQ, unknownQ, b, 20));
    flaggedBatches.push(batchResponse(intel, flaggedQ, unknownQ, b, 1));
  }
  const clusters: Cluster[] = uncachedIds.slice(0, OBJECTS).map((id) => intel.cluster(id)!);
  const t2 = performance.now();
  console.log(
    `node ${process.version}, ${vpaCount} VPAs, ${clusterCount} clusters (snapshot ${Math.round(t1 - t0)} ms, pools ${Math.round(t2 - t1)} ms), gc ${gc ? 'exposed' : 'not exposed'}`,
  );
  if (uncachedIds.length < 20_000) console.log(`note: only ${uncachedIds.length} cluster ids to cycle; 20k+ needs --vpas 400000 or more`);

  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  const collect = { beforeAll: () => gc?.() };
  const tasks: { name: string; counters: Counters; meanBytes?: number }[] = [];
  const add = <T>(name: string, pool: readonly T[], call: (item: T) => number, options: { beforeAll: () => void } = collect, meanBytes?: number): void => {
    const c = counters();
    bench.add(name, cycling(pool, c, call), options);
    tasks.push(meanBytes === undefined ? { name, counters: c } : { name, counters: c, meanBytes });
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
  const encode = (answer: object): number => JSON.stringify(answer).length;
  add('JSON.stringify verdict, flagged', flaggedVerdicts, encode, collect, meanJsonBytes(flaggedVerdicts));
  add('JSON.stringify verdict, cleared', clearedVerdicts, encode, collect, meanJsonBytes(clearedVerdicts));
  add(`JSON.stringify batch of ${BATCH}, 5% flagged`, mixedBatches, encode, collect, meanJsonBytes(mixedBatches));
  add(`JSON.stringify batch of ${BATCH}, all flagged`, flaggedBatches, encode, collect, meanJsonBytes(flaggedBatches));
  add('JSON.stringify cluster', clusters, encode, collect, meanJsonBytes(clusters));
  bench.runSync();

  for (const { name, counters: c } of tasks) {
    if (c.expected !== c.calls) throw new Error(`${name}: ${c.calls - c.expected} of ${c.calls} answers not as expected`);
  }
  // The uncached case really missed: a cache hit returns the object it
  // returned before, so two passes over the cycle must share no object.
  const firstPass = uncachedIds.map((id) => intel.cluster(id));
  const hits = uncachedIds.filter((id, i) => intel.cluster(id) === firstPass[i]).length;
  if (hits !== 0) throw new Error(`cluster, uncached: ${hits} of ${uncachedIds.length} calls hit the cache`);

  const rows: (Row & { 'mean B'?: number })[] = taskRows(bench).map((row, i) => {
    const meanBytes = tasks[i]!.meanBytes;
    return meanBytes === undefined ? row : { ...row, 'mean B': meanBytes };
  });
  console.table(rows);

  if (args.json !== undefined) {
    writeReport(args.json, {
      benchmark: 'intelligence',
      node: process.version,
      date: new Date().toISOString(),
      vpas: vpaCount,
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
