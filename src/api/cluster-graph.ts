import { CONFIDENCE_SCALE, type SnapshotData } from '../engine/snapshot-data.js';
import { portableCardinality } from '../engine/roaring-portable.js';
import type { SnapshotView } from '../engine/snapshot-view.js';
import type { ServingView } from '../engine/serving-view.js';
import { formatClusterId, type Cluster } from '../engine/verdict.js';
import { RISK_CATEGORIES, type RiskCategory } from '../vpa/categories.js';

/** What the console lists and draws of clusters (GET /v1/admin/clusters, .../graph). */
export interface ClusterSummary {
  readonly cluster_id: string;
  readonly size: number;
  readonly risk_category: RiskCategory;
  readonly confidence: number;
}

export interface ClusterGraph {
  readonly cluster: Cluster;
  readonly members: readonly {
    readonly upi: string;
    readonly confidence: number | null;
    readonly risk_category: string | null;
    readonly first_seen: string | null;
    readonly last_seen: string | null;
    readonly evidence_count: number;
  }[];
  readonly urls: readonly { readonly url: string; readonly category: string }[];
  readonly sightings: readonly { readonly upi: string; readonly url: string; readonly captured_at: string }[];
}

/** Members a graph draws at most; the cluster answer inside it still lists every member. */
export const MAX_GRAPH_MEMBERS = 1000;
export const MAX_CLUSTER_LIST = 1000;

/** The MAX_CLUSTER_LIST largest clusters of a snapshot: ordinals largest first, and their sizes in that order; found once per snapshot. */
const ranked = new WeakMap<SnapshotView, { order: Uint32Array; sizes: Uint32Array }>();

/**
 * Every cluster's size, read from the header of its member bitmap (no pass
 * over the VPAs), and the largest `count` of them, ties by cluster number:
 * a count of clusters by size finds the smallest size among the largest
 * `count`, so only those are sorted, not every cluster. Cheap enough for a
 * serving thread at 10M VPAs (bench/MEASUREMENTS.md, "The largest clusters").
 */
export function rankClusters(data: SnapshotData, count: number): { order: Uint32Array; sizes: Uint32Array } {
  const clusters = data.clusterNumber.length;
  const sizes = new Uint32Array(clusters);
  let largest = 0;
  for (let o = 0; o < clusters; o++) {
    const size = portableCardinality(data.clusterMembersBlob.subarray(data.clusterMembersOffsets[o]!, data.clusterMembersOffsets[o + 1]!));
    sizes[o] = size;
    if (size > largest) largest = size;
  }
  const wanted = Math.min(count, clusters);
  // Clusters by size; then the smallest size the largest `wanted` reach down to.
  const bySize = new Uint32Array(largest + 1);
  for (let o = 0; o < clusters; o++) bySize[sizes[o]!]!++;
  let threshold = largest;
  for (let above = 0; threshold > 0; threshold--) {
    above += bySize[threshold]!;
    if (above >= wanted) break;
  }
  // Above the threshold, all of them, sorted; at it, the first by ordinal (ordinals follow cluster numbers) until enough.
  const above: number[] = [];
  for (let o = 0; o < clusters; o++) if (sizes[o]! > threshold) above.push(o);
  above.sort((a, b) => sizes[b]! - sizes[a]! || a - b);
  const order = new Uint32Array(wanted);
  order.set(above);
  let filled = above.length;
  for (let o = 0; o < clusters && filled < wanted; o++) if (sizes[o] === threshold) order[filled++] = o;
  return { order, sizes };
}

/** The `limit` largest clusters of a snapshot (ties by cluster id), limit at most MAX_CLUSTER_LIST. */
export function largestClusters(snapshot: SnapshotView, limit: number): ClusterSummary[] {
  let found = ranked.get(snapshot);
  if (found === undefined) {
    // Only the listed clusters' sizes are kept: every cluster's would be 4 bytes a cluster per snapshot and thread.
    const { order, sizes } = rankClusters(snapshot.data, MAX_CLUSTER_LIST);
    found = { order, sizes: Uint32Array.from(order, (ordinal) => sizes[ordinal]!) };
    ranked.set(snapshot, found);
  }
  const d = snapshot.data;
  const out: ClusterSummary[] = [];
  for (let i = 0; i < Math.min(limit, found.order.length); i++) {
    const ordinal = found.order[i]!;
    out.push({
      cluster_id: formatClusterId(d.clusterNumber[ordinal]!),
      size: found.sizes[i]!,
      risk_category: RISK_CATEGORIES[d.clusterRiskCategory[ordinal]!]!,
      confidence: d.clusterConfidence[ordinal]! / CONFIDENCE_SCALE,
    });
  }
  return out;
}

/**
 * A cluster as a graph: its members (the first MAX_GRAPH_MEMBERS, with
 * their verdicts from the view, live delta included), the urls they were
 * seen on and one sighting per member and url. Null when there is no such
 * cluster.
 */
export function clusterGraph(view: ServingView, clusterId: string): ClusterGraph | null {
  const cluster = view.cluster(clusterId);
  if (cluster === null) return null;
  const members: ClusterGraph['members'][number][] = [];
  const urls = new Map<string, string>();
  const sightings: ClusterGraph['sightings'][number][] = [];
  for (const member of cluster.members.slice(0, MAX_GRAPH_MEMBERS)) {
    const verdict = view.verdict(member.upi);
    members.push({
      upi: member.upi,
      confidence: verdict.confidence,
      risk_category: verdict.risk_category,
      first_seen: verdict.first_seen,
      last_seen: verdict.last_seen,
      evidence_count: verdict.evidence_count,
    });
    for (const source of verdict.sources) {
      urls.set(source.url, source.category);
      sightings.push({ upi: member.upi, url: source.url, captured_at: source.captured_at });
    }
  }
  return { cluster, members, urls: [...urls].map(([url, category]) => ({ url, category })), sightings };
}
