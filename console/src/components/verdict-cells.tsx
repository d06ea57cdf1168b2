/** Pieces of a verdict that tables share: the status as a badge, the cluster as a link. */
import type { BatchItem } from '../api/types.js';
import { Link, clusterPath } from '../router.js';

export function StatusBadge({ status }: { readonly status: BatchItem['status'] }) {
  return <span class={`badge ${status === 'FLAGGED' ? 'flagged' : 'cleared'}`}>{status}</span>;
}

/** The cluster page's link, or a dash for a VPA in no cluster. */
export function ClusterLink({ clusterId }: { readonly clusterId: string | null }) {
  return clusterId === null ? <span>—</span> : <Link href={clusterPath(clusterId)}>{clusterId}</Link>;
}
