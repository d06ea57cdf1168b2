import { CONFIDENCE_SCALE, NO_CLUSTER } from '../engine/snapshot-data.js';
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

/** Cluster ordinals of a snapshot by size, largest first, worked out once per snapshot (a pass over every VPA). */
const bySize = new WeakMap<SnapshotView, { order: Uint32Array; sizes: Uint32Array }>();

/** The `limit` largest clusters of a snapshot (ties by cluster id). */
export function largestClusters(snapshot: SnapshotView, limit: number): ClusterSummary[] {
  let ranked = bySize.get(snapshot);
  if (ranked === undefined) {
    const d = snapshot.data;
    const sizes = new Uint32Array(d.clusterNumber.length);
    for (let i = 0; i < d.vpaCluster.length; i++) {
      const ordinal = d.vpaCluster[i]!;
      if (ordinal !== NO_CLUSTER) sizes[ordinal]!++;
    }
    const order = Uint32Array.from(sizes.keys()).sort((a, b) => sizes[b]! - sizes[a]! || d.clusterNumber[a]! - d.clusterNumber[b]!);
    ranked = { order, sizes };
    bySize.set(snapshot, ranked);
  }
  const d = snapshot.data;
  const out: ClusterSummary[] = [];
  for (let i = 0; i < Math.min(limit, ranked.order.length); i++) {
    const ordinal = ranked.order[i]!;
    out.push({
      cluster_id: formatClusterId(d.clusterNumber[ordinal]!),
      size: ranked.sizes[ordinal]!,
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
