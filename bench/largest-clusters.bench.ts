/**
 * The console's list of the largest clusters (GET /v1/admin/clusters), as a
 * serving thread works it out once per snapshot: every cluster's size from
 * its member bitmap's header and a selection of the largest
 * (cluster-graph.ts, rankClusters), against the pass over every VPA's
 * cluster and the sort of every cluster it replaced, in the same run.
 *
 *   node --expose-gc dist/bench/largest-clusters.bench.js [--vpas 10000000] [--time 2000] [--json FILE]
 */
import { Bench } from 'tinybench';
import { MAX_CLUSTER_LIST, rankClusters } from '../src/api/cluster-graph.js';
import { NO_CLUSTER, type SnapshotData } from '../src/engine/snapshot-data.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { microOptions, taskRows, writeBenchReport } from './support/report.js';

const { vpas: vpaCount, time: taskTime, json } = microOptions();
const gc = (globalThis as { gc?: () => void }).gc;

/** What the list did before: count every VPA's cluster, then sort every cluster. */
function everyVpa(data: SnapshotData): Uint32Array {
  const sizes = new Uint32Array(data.clusterNumber.length);
  for (let i = 0; i < data.vpaCluster.length; i++) {
    const ordinal = data.vpaCluster[i]!;
    if (ordinal !== NO_CLUSTER) sizes[ordinal]!++;
  }
  return Uint32Array.from(sizes.keys()).sort((a, b) => sizes[b]! - sizes[a]! || data.clusterNumber[a]! - data.clusterNumber[b]!);
}

function main(): void {
  const data = fakeSnapshot(vpaCount);
  console.log(`node ${process.version}, ${vpaCount} VPAs, ${data.clusterNumber.length} clusters, gc ${gc ? 'exposed' : 'not exposed'}`);
  // Both ways find the same list.
  const selected = rankClusters(data, MAX_CLUSTER_LIST).order;
  const sorted = everyVpa(data).subarray(0, MAX_CLUSTER_LIST);
  if (selected.some((ordinal, i) => ordinal !== sorted[i])) throw new Error('the two ways rank the clusters differently');

  let found = 0;
  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  bench.add(`bitmap headers and a selection (${MAX_CLUSTER_LIST} largest)`, () => void (found += rankClusters(data, MAX_CLUSTER_LIST).order.length), { beforeAll: () => gc?.() });
  bench.add('every VPA counted, every cluster sorted', () => void (found += everyVpa(data).length), { beforeAll: () => gc?.() });
  bench.runSync();
  const rows = taskRows(bench);
  console.table(rows);
  if (json !== undefined) writeBenchReport(json, 'largest-clusters', vpaCount, { rows, clusters: data.clusterNumber.length });
  if (found === 0.5) console.log('unreachable');
}

main();
