/**
 * Verdicts as the batch answers them, one row each: the VPA (opening its
 * verdict on Screen), status, confidence and advice band, risk category,
 * cluster (a link to its graph) and the payment flow's recommended action.
 */
import type { ComponentChildren } from 'preact';
import { BAND_LABELS, bandAction, confidenceBand } from '../../../src/api/advice.js';
import type { BatchItem } from '../api/types.js';
import { formatConfidence, formatNumber } from '../format.js';
import { Link, screenPath } from '../router.js';
import { Table, numeric } from './table.js';
import { ClusterLink, StatusBadge } from './verdict-cells.js';

export interface BatchItemTableProps {
  readonly items: readonly BatchItem[];
  readonly caption: ComponentChildren;
  readonly class?: string;
}

export function BatchItemTable({ items, caption, class: className }: BatchItemTableProps) {
  return (
    <Table
      caption={caption}
      class={className}
      columns={['UPI', 'Status', numeric('Confidence'), 'Band', 'Risk category', 'Cluster', numeric('Cluster size'), numeric('Evidence'), 'Payment flow']}
    >
      {items.map((item) => {
        const band = confidenceBand(item.status, item.confidence);
        return (
          <tr key={item.upi}>
            <th scope="row" class="vpa">
              <Link href={screenPath(item.upi)}>{item.upi}</Link>
            </th>
            <td>
              <StatusBadge status={item.status} />
            </td>
            <td class="num">{formatConfidence(item.confidence)}</td>
            <td>{BAND_LABELS[band]}</td>
            <td>{item.risk_category ?? '—'}</td>
            <td>
              <ClusterLink clusterId={item.cluster_id} />
            </td>
            <td class="num">{formatNumber(item.cluster_size)}</td>
            <td class="num">{formatNumber(item.evidence_count)}</td>
            <td>{bandAction(band, 'payment')}</td>
          </tr>
        );
      })}
    </Table>
  );
}
