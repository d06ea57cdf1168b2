/**
 * Cluster answers as the cluster route serves them (cluster-answer-cache.ts):
 * a cluster asked for once (assembled from the snapshot, encoded, not kept),
 * and one asked for again (the kept JSON text).
 *
 *   node --expose-gc dist/bench/cluster-answer-cache.bench.js [--vpas 1000000] [--time 2000] [--json FILE]
 *
 * The first case cycles through tens of thousands of cluster ids in a
 * shuffled order: far more than the filter of recent asks remembers between
 * clearings, so no call finds its answer kept (bar the filter's false
 * positives, counted and reported). The second cycles through a few hundred
 * ids, each asked for three times before timing starts.
 */
import { Bench } from 'tinybench';
import { CLUSTER_ANSWERS_KEPT, ClusterAnswerCache } from '../src/api/cluster-answer-cache.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { microOptions, taskRows, writeBenchReport } from './support/report.js';
import { shuffledClusterIds } from './support/vpas.js';

/** Ids cycled through for first asks: many times the filter's window, so none is remembered when it comes round. */
const FIRST_ASK_IDS = 65_536;
/** Well below CLUSTER_ANSWERS_KEPT, so every call finds its answer kept. */
const KEPT_IDS = 512;

const { vpas: vpaCount, time: taskTime, json } = microOptions();
const gc = (globalThis as { gc?: () => void }).gc;

function main(): void {
  const view = new SnapshotView(fakeSnapshot(vpaCount));
  const firstAskIds = shuffledClusterIds(view.data, FIRST_ASK_IDS, 3);
  const keptIds = shuffledClusterIds(view.data, KEPT_IDS, 4);
  if (firstAskIds.length < 16 * CLUSTER_ANSWERS_KEPT) {
    throw new Error(`${firstAskIds.length} clusters; first asks need ${16 * CLUSTER_ANSWERS_KEPT} or more (--vpas 400000 or more)`);
  }
  console.log(`node ${process.version}, ${vpaCount} VPAs, ${view.meta.clusterCount} clusters, gc ${gc ? 'exposed' : 'not exposed'}`);

  const cache = new ClusterAnswerCache(view);
  let bytes = 0;
  const cycling = (ids: readonly string[]) => {
    let next = 0;
    return () => {
      bytes += cache.json(ids[next]!)!.length;
      next = next + 1 === ids.length ? 0 : next + 1;
    };
  };
  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  bench.add(`first ask: assemble and encode (${firstAskIds.length} ids)`, cycling(firstAskIds), { beforeAll: () => gc?.() });
  bench.add(`asked again: kept text (${keptIds.length} ids)`, cycling(keptIds), {
    beforeAll: () => {
      gc?.();
      // Three rounds: the filter of recent asks may be cleared between the first two.
      for (let asked = 0; asked < 3; asked++) for (const id of keptIds) cache.json(id);
    },
  });
  bench.runSync();

  // The kept case was all hits, and the first-ask case kept next to nothing (the filter's false positives).
  const notKept = keptIds.filter((id) => !cache.isKept(id)).length;
  if (notKept > 0) throw new Error(`${notKept} of ${keptIds.length} clusters asked for again are not kept`);
  const keptFromFirstAsks = firstAskIds.filter((id) => cache.isKept(id) && !keptIds.includes(id)).length;
  const rows = taskRows(bench);
  console.table(rows);
  console.log(`first-ask ids kept (false positives): ${keptFromFirstAsks} of ${firstAskIds.length}`);
  if (json !== undefined) writeBenchReport(json, 'cluster-answer-cache', vpaCount, { rows, firstAskIds: firstAskIds.length, keptIds: keptIds.length, keptFromFirstAsks });
  if (bytes === 0.5) console.log('unreachable');
}

main();
