/**
 * A VPA's history under its verdict (GET /v1/verify/upi/history): every
 * change of its status, risk category, advice band or cluster, oldest
 * first, with the data version that first served it and why.
 */
import { BAND_LABELS, confidenceBand } from '../../../src/api/advice.js';
import type { ChangeCause } from '../../../src/api/history-paths.js';
import { lookUpHistory } from '../api/screening.js';
import { formatConfidence } from '../format.js';
import { Link, clusterPath } from '../router.js';
import { useLoad } from '../use-load.js';
import { ErrorMessage } from './error-message.js';
import { Table } from './table.js';
import { Time } from './time.js';

const CAUSES: Readonly<Record<ChangeCause, string>> = {
  evidence: 'new evidence',
  retraction: 'evidence retracted',
  clearance: 'cleared by an analyst',
  clearance_ended: 'clearance ended',
  expiry: 'evidence expired',
  compaction: 'compaction (clusters and scores made again)',
};

/** `version` names the answer shown above: the history is read again when it changes. */
export function AnswerTimeline({ upi, version }: { readonly upi: string; readonly version: string | null }) {
  const history = useLoad(async (signal) => (await lookUpHistory(upi, signal)).body, [upi, version]);
  const changes = history.data?.changes ?? null;
  return (
    <section aria-labelledby="timeline-title">
      <h3 id="timeline-title">History</h3>
      <ErrorMessage message={history.error} />
      {changes === null ? (
        history.error === null ? <p role="status">Reading the history…</p> : null
      ) : changes.length === 0 ? (
        <p>No change recorded: the service has not flagged this VPA within the history it keeps.</p>
      ) : (
        <Table caption={`Changes (${changes.length}), oldest first`} columns={['When', 'Status', 'Band', 'Confidence', 'Risk category', 'Cluster', 'Why', 'Data version']}>
          {changes.map((change, index) => (
            <tr key={`${change.data_version}-${index}`}>
              <td>
                <Time iso={change.at} />
              </td>
              <td>{change.status}</td>
              <td>{BAND_LABELS[confidenceBand(change.status, change.confidence)]}</td>
              <td>{formatConfidence(change.confidence)}</td>
              <td>{change.risk_category ?? '—'}</td>
              <td>{change.cluster_id === null ? '—' : <Link href={clusterPath(change.cluster_id)}>{change.cluster_id}</Link>}</td>
              <td>{CAUSES[change.cause]}</td>
              <td>
                <code>{change.data_version}</code>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
