import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLUSTER_ANSWERS_KEPT, ClusterAnswerCache, clusterAnswerJson } from '../../src/api/cluster-answer-cache.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { formatClusterId } from '../../src/engine/verdict.js';
import { fakeSnapshot } from '../fixtures/fake-snapshot.js';

// Cluster answers are served as JSON text, kept per snapshot for clusters
// asked for again: the text is JSON.stringify's, whether kept or not.

function clusterIds(view: SnapshotView): string[] {
  return Array.from(view.data.clusterNumber, formatClusterId);
}

test('a cluster answer is the JSON of the assembled cluster, asked for once or again, kept or not', () => {
  const view = new SnapshotView(fakeSnapshot(3000, { seed: 7 }));
  const cache = new ClusterAnswerCache(view);
  for (const id of clusterIds(view).slice(0, 50)) {
    const expected = JSON.stringify(view.cluster(id));
    for (let asked = 0; asked < 3; asked++) assert.equal(cache.json(id), expected, `${id}, ask ${asked + 1}`);
  }
  assert.equal(cache.json('MC-4294967295'), null, 'no such cluster');
  assert.equal(cache.json('MC-0'), null, 'not a canonical id');
  assert.equal(cache.json('mc-1'), null);
});

test('an answer is kept only when its cluster is asked for a second time, and at most CLUSTER_ANSWERS_KEPT are', () => {
  const view = new SnapshotView(fakeSnapshot(200_000, { seed: 3 }));
  const ids = clusterIds(view);
  assert.ok(ids.length > 4 * CLUSTER_ANSWERS_KEPT, `${ids.length} clusters`);
  const cache = new ClusterAnswerCache(view);

  cache.json(ids[0]!);
  assert.equal(cache.size, 0, 'asked once: answered, not kept');
  cache.json(ids[0]!);
  assert.equal(cache.size, 1, 'asked again soon after: kept');
  assert.ok(cache.isKept(ids[0]!));
  cache.json(ids[0]!);
  assert.equal(cache.size, 1);

  // Lookups spread over many clusters, each asked for once, keep next to
  // nothing: only the filter's false positives, near 0.1 %.
  const once = ids.slice(1, 1 + 2 * CLUSTER_ANSWERS_KEPT);
  for (const id of once) cache.json(id);
  assert.ok(cache.size - 1 <= once.length * 0.005, `${cache.size - 1} of ${once.length} kept`);

  // Clusters asked for twice in a row are kept, up to the bound, first in first out.
  const twice = ids.slice(1 + once.length, 1 + once.length + CLUSTER_ANSWERS_KEPT + 10);
  for (const id of twice) {
    cache.json(id);
    cache.json(id);
    assert.ok(cache.isKept(id), id);
  }
  assert.equal(cache.size, CLUSTER_ANSWERS_KEPT);
  assert.ok(!cache.isKept(twice[0]!) && cache.isKept(twice.at(-1)!), 'the first kept went first');
});

test('answers are kept per snapshot: a swap never serves the old snapshot answer', () => {
  const older = new SnapshotView(fakeSnapshot(3000, { seed: 1 }));
  const newer = new SnapshotView(fakeSnapshot(3000, { seed: 2 }));
  const newerNumbers = new Set(newer.data.clusterNumber);
  const shared = older.data.clusterNumber.find((n) => newerNumbers.has(n));
  assert.ok(shared !== undefined, 'a cluster id both snapshots have');
  const id = formatClusterId(shared);
  for (let asked = 0; asked < 3; asked++) {
    assert.equal(clusterAnswerJson(older, id), JSON.stringify(older.cluster(id)));
    assert.equal(clusterAnswerJson(newer, id), JSON.stringify(newer.cluster(id)));
  }
  assert.notEqual(clusterAnswerJson(older, id), clusterAnswerJson(newer, id));
});
