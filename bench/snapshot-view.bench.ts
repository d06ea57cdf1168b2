/**
 * The answer-building module against a fake snapshot: verdicts, batch items
 * and clusters from SnapshotView. Encoding those answers is timed in
 * answer-json.bench.ts.
 *
 *   node --expose-gc dist/bench/snapshot-view.bench.js [--vpas 1000000] [--time 2000] [--json FILE]
 *
 * Queries are fresh flat strings (as a request parser makes them), a tenth
 * upper-cased and a tenth capitalised, cycled through pools larger than the
 * CPU caches. Cluster assembly cycles through tens of thousands of ids in a
 * shuffled order. Keeping answers, and serving kept ones, is timed in
 * cluster-answer-cache.bench.ts.
 */
import { Bench } from 'tinybench';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { microOptions, taskRows, writeBenchReport } from './support/report.js';
import { knownVpas, shuffledClusterIds, unknownVpas } from './support/vpas.js';

const QUERIES = 1 << 18;
/** Cluster ids cycled through; 20k+ at 1M VPAs. */
const CLUSTERS = 65_536;

const { vpas: vpaCount, time: taskTime, json } = microOptions();

const gc = (globalThis as { gc?: () => void }).gc;

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
  const view = new SnapshotView(fakeSnapshot(vpaCount));
  const t1 = performance.now();
  const clusterCount = view.meta.clusterCount;
  if (clusterCount === 0) throw new Error(`no clusters at ${vpaCount} VPAs; use --vpas 100 or more`);
  const flaggedQ = knownVpas(view.data, QUERIES, 1);
  const unknownQ = unknownVpas(view, QUERIES, 2);
  const ids = shuffledClusterIds(view.data, CLUSTERS, 3);
  const t2 = performance.now();
  console.log(
    `node ${process.version}, ${vpaCount} VPAs, ${clusterCount} clusters (snapshot ${Math.round(t1 - t0)} ms, pools ${Math.round(t2 - t1)} ms), gc ${gc ? 'exposed' : 'not exposed'}`,
  );
  if (ids.length < 20_000) console.log(`note: only ${ids.length} cluster ids to cycle; 20k+ needs --vpas 400000 or more`);

  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  const collect = { beforeAll: () => gc?.() };
  const tasks: { name: string; counters: Counters }[] = [];
  const add = <T>(name: string, pool: readonly T[], call: (item: T) => number, options: { beforeAll: () => void } = collect): void => {
    const c = counters();
    bench.add(name, cycling(pool, c, call), options);
    tasks.push({ name, counters: c });
  };

  add('verdict, flagged', flaggedQ, (q) => {
    const v = view.verdict(q);
    return v.status === 'FLAGGED' ? v.sources.length : 0;
  });
  add('verdict, unknown', unknownQ, (q) => (view.verdict(q).status === 'CLEARED' ? 1 : 0));
  add('batchItem, flagged', flaggedQ, (q) => {
    const item = view.batchItem(q);
    return item.status === 'FLAGGED' ? item.evidence_count : 0;
  });
  add(`cluster (${ids.length} ids)`, ids, (id) => view.cluster(id)?.size ?? 0);
  bench.runSync();

  for (const { name, counters: c } of tasks) {
    if (c.expected !== c.calls) throw new Error(`${name}: ${c.calls - c.expected} of ${c.calls} answers not as expected`);
  }
  const rows = taskRows(bench);
  console.table(rows);

  if (json !== undefined) {
    writeBenchReport(json, 'snapshot-view', vpaCount, {
      rows,
      clusters: clusterCount,
      queriesPerPool: QUERIES,
      clusterIds: ids.length,
    });
  }
  // The sinks feed every result somewhere observable, so no call is dead code.
  if (tasks.reduce((sum, t) => sum + t.counters.sink, 0) === 0.5) console.log('unreachable');
}

main();
