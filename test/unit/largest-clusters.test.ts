import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rankClusters, largestClusters } from '../../src/api/cluster-graph.js';
import { NO_CLUSTER, type SnapshotData } from '../../src/engine/snapshot-data.js';
import { formatClusterId } from '../../src/engine/verdict.js';
import { fakeSnapshot } from '../fixtures/fake-snapshot.js';
import { buildInProcess, evidence } from '../helpers.js';

/** The slow way: count every VPA's cluster, sort every cluster by size, then cluster number. */
function naive(data: SnapshotData, count: number): number[] {
  const sizes = new Array<number>(data.clusterNumber.length).fill(0);
  for (const ordinal of data.vpaCluster) if (ordinal !== NO_CLUSTER) sizes[ordinal]!++;
  return [...sizes.keys()].sort((a, b) => sizes[b]! - sizes[a]! || data.clusterNumber[a]! - data.clusterNumber[b]!).slice(0, count);
}

test('the largest clusters, ties by cluster number, as counting every VPA finds them', () => {
  for (const seed of [1, 2, 3]) {
    const data = fakeSnapshot(20_000, { seed });
    const clusters = data.clusterNumber.length;
    for (const count of [0, 1, 7, 100, 1000, clusters, clusters + 5]) {
      const { order, sizes } = rankClusters(data, count);
      const expected = naive(data, count);
      assert.deepEqual([...order], expected, `seed ${seed}, ${count} of ${clusters}`);
      for (const ordinal of expected) assert.equal(sizes[ordinal], data.vpaCluster.filter((c) => c === ordinal).length);
    }
  }
});

test('clusters built from evidence are listed by size with their ids', () => {
  // Three VPAs on one url, two on another, one alone: clusters of 3 and 2.
  const view = buildInProcess([
    evidence('a1@ybl', 'https://one.example/x'),
    evidence('a2@ybl', 'https://one.example/x'),
    evidence('a3@ybl', 'https://one.example/x'),
    evidence('b1@ybl', 'https://two.example/y'),
    evidence('b2@ybl', 'https://two.example/y'),
    evidence('c1@ybl', 'https://three.example/z'),
  ]);
  const listed = largestClusters(view, 10);
  assert.deepEqual(
    listed.map((c) => c.size),
    naive(view.data, 10).map((o) => view.data.vpaCluster.filter((c) => c === o).length),
  );
  assert.deepEqual(listed.map((c) => c.size).slice(0, 2), [3, 2]);
  assert.equal(listed[0]!.cluster_id, view.verdict('a1@ybl').cluster_id);
  assert.equal(listed[0]!.cluster_id, formatClusterId(view.data.clusterNumber[naive(view.data, 1)[0]!]!));
  // Asked again for fewer: the same ranking, cut.
  assert.deepEqual(largestClusters(view, 1), listed.slice(0, 1));
});
