/** Clusters: the largest, each a link to its graph. */
import { listClusters } from '../api/admin.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { formatConfidence, formatNumber } from '../format.js';
import { Link, clusterPath } from '../router.js';
import { useLoad } from '../use-load.js';
import { Table, numeric } from '../components/table.js';

const LISTED = 50;

export function ClustersPage() {
  const clusters = useLoad((signal) => listClusters(LISTED, signal), []);
  return (
    <>
      <PageHeading title="Clusters" />
      <p>Accounts that appear on the same pages form a cluster: often one gang’s rotating collection accounts.</p>
      <ErrorMessage message={clusters.error} />
      {clusters.data === null ? (
        clusters.loading ? <p role="status">Loading clusters…</p> : null
      ) : clusters.data.length === 0 ? (
        <p>No clusters in the snapshot yet.</p>
      ) : (
        <Table caption={`The ${formatNumber(clusters.data.length)} largest clusters`} columns={['Cluster', numeric('Size'), 'Risk category', numeric('Confidence')]}>
          {clusters.data.map((cluster) => (
            <tr key={cluster.cluster_id}>
              <th scope="row">
                <Link href={clusterPath(cluster.cluster_id)}>{cluster.cluster_id}</Link>
              </th>
              <td class="num">{formatNumber(cluster.size)}</td>
              <td>{cluster.risk_category}</td>
              <td class="num">{formatConfidence(cluster.confidence)}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
