/** One VPA's verdict: every field, the spec's recommended actions, the sources as links, the cluster as a link. */
import { bandAction, confidenceBand, BAND_LABELS } from '../../../src/api/advice.js';
import type { Verdict } from '../api/types.js';
import { formatConfidence, formatNumber } from '../format.js';
import { Link, clusterPath } from '../router.js';
import { ExternalLink } from './external-link.js';
import { Time } from './time.js';
import { Table } from './table.js';

export interface VerdictViewProps {
  readonly verdict: Verdict;
  readonly requestId: string | null;
  readonly dataVersion: string | null;
}

export function VerdictView({ verdict, requestId, dataVersion }: VerdictViewProps) {
  const band = confidenceBand(verdict.status, verdict.confidence);
  const flagged = verdict.status === 'FLAGGED';
  return (
    <section class={`verdict ${flagged ? 'flagged' : 'cleared'}`} aria-labelledby="verdict-title">
      <h2 id="verdict-title">
        <span class="vpa">{verdict.upi}</span> <span class={`badge ${flagged ? 'flagged' : 'cleared'}`}>{verdict.status}</span>
      </h2>
      {flagged ? null : (
        <p>CLEARED means only that this VPA was absent from the intelligence when it was asked; it is not a guarantee of safety.</p>
      )}
      <h3>Recommended action</h3>
      <dl class="pairs advice">
        <dt>Payment flow</dt>
        <dd>{bandAction(band, 'payment')}</dd>
        <dt>Merchant onboarding</dt>
        <dd>{bandAction(band, 'onboarding')}</dd>
        <dt>Advice band</dt>
        <dd>{BAND_LABELS[band]}</dd>
      </dl>
      <h3>Verdict</h3>
      <dl class="pairs">
        <dt>UPI</dt>
        <dd class="vpa">{verdict.upi}</dd>
        <dt>Status</dt>
        <dd>{verdict.status}</dd>
        <dt>Confidence</dt>
        <dd>{formatConfidence(verdict.confidence)}</dd>
        <dt>Risk category</dt>
        <dd>{verdict.risk_category ?? '—'}</dd>
        <dt>Cluster</dt>
        <dd>{verdict.cluster_id === null ? '—' : <Link href={clusterPath(verdict.cluster_id)}>{verdict.cluster_id}</Link>}</dd>
        <dt>Cluster size</dt>
        <dd>{formatNumber(verdict.cluster_size)}</dd>
        <dt>First seen</dt>
        <dd>
          <Time iso={verdict.first_seen} />
        </dd>
        <dt>Last seen</dt>
        <dd>
          <Time iso={verdict.last_seen} />
        </dd>
        <dt>Evidence count</dt>
        <dd>{formatNumber(verdict.evidence_count)}</dd>
        <dt>Request id</dt>
        <dd>
          <code>{requestId ?? '—'}</code>
        </dd>
        <dt>Data version</dt>
        <dd>
          <code>{dataVersion ?? '—'}</code>
        </dd>
      </dl>
      {verdict.sources.length === 0 ? null : (
        <Table caption={`Sources (${verdict.sources.length})`} columns={['URL', 'Category', 'Captured', 'Screenshot']}>
          {verdict.sources.map((source, index) => (
            <tr key={`${source.url}-${index}`}>
              <td class="url">
                <ExternalLink url={source.url} />
              </td>
              <td>{source.category}</td>
              <td>
                <Time iso={source.captured_at} />
              </td>
              <td>{source.screenshot_available ? 'archived (ask support)' : 'none'}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
