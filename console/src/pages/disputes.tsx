/**
 * Disputes: every key's disputes of FLAGGED verdicts, newest first, the
 * open ones unless another status is chosen, a page at a time; each opens
 * its review, where an analyst upholds or rejects it.
 */
import { useState } from 'preact/hooks';
import { listDisputes } from '../api/review.js';
import type { DisputeStatus } from '../api/types.js';
import { ErrorMessage } from '../components/error-message.js';
import { OwnerKey } from '../components/owner-key.js';
import { PageHeading } from '../components/page-heading.js';
import { ReviewQueue, queueTitle } from '../components/review-queue.js';
import { ReviewBadge, StatusFilter } from '../components/status-filter.js';
import { Table } from '../components/table.js';
import { Time } from '../components/time.js';
import { Link, disputePath } from '../router.js';
import { useCursorPages } from '../use-cursor-pages.js';
import { useLoad } from '../use-load.js';
import { loadKeysById, type KeysById } from '../watch/owned-watchlists.js';

const DISPUTES_PER_PAGE = 50;
/** Longest `details` shown in the list; the review shows all of it. */
const DETAILS_SHOWN = 120;

const DISPUTE_FILTERS: readonly (readonly [DisputeStatus, string])[] = [
  ['OPEN', 'Open'],
  ['UPHELD', 'Upheld'],
  ['REJECTED', 'Rejected'],
];

export function DisputesPage() {
  const [status, setStatus] = useState<DisputeStatus | null>('OPEN');
  const keys = useLoad((signal) => loadKeysById(signal), []);
  return (
    <>
      <PageHeading title="Disputes" />
      <p>
        Callers dispute a FLAGGED verdict they think wrong; a <code>false_positive</code> report opens one too. Open a dispute to uphold it (the VPA
        is cleared, or the evidence you choose is retracted) or reject it.
      </p>
      <StatusFilter options={DISPUTE_FILTERS} value={status} onChange={setStatus} />
      <ErrorMessage message={keys.error} />
      {/* Keyed, so another status starts again on its first page. */}
      {keys.data === null ? keys.loading ? <p role="status">Loading disputes…</p> : null : <DisputeList key={status ?? 'all'} status={status} keys={keys.data} />}
    </>
  );
}

function DisputeList({ status, keys }: { readonly status: DisputeStatus | null; readonly keys: KeysById }) {
  const disputes = useCursorPages((cursor, signal) => listDisputes(status, DISPUTES_PER_PAGE, cursor, signal));
  return (
    <ReviewQueue
      id="dispute-list-title"
      title={queueTitle(DISPUTE_FILTERS, status, 'disputes', 'Every dispute')}
      pages={disputes}
      count={(page) => page.disputes.length}
      noun="disputes"
      empty={status === 'OPEN' ? 'No dispute is open.' : 'None.'}
    >
      {(page, caption) => (
        <Table caption={caption} columns={['VPA', 'Status', 'Reason', 'Details', 'Reference', 'Opened by', 'Opened']}>
          {page.disputes.map((dispute) => (
            <tr key={dispute.id}>
              <th scope="row" class="vpa">
                <Link href={disputePath(dispute.id)}>{dispute.upi}</Link>
              </th>
              <td>
                <ReviewBadge status={dispute.status} waiting={dispute.status === 'OPEN'} />
              </td>
              <td>{dispute.reason}</td>
              <td class="text">{shorten(dispute.details)}</td>
              <td>{dispute.reference ?? '—'}</td>
              <td>
                <OwnerKey id={dispute.owner} keys={keys} />
              </td>
              <td>
                <Time iso={dispute.created_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
    </ReviewQueue>
  );
}

function shorten(text: string): string {
  if (text === '') return '—';
  return text.length <= DETAILS_SHOWN ? text : `${text.slice(0, DETAILS_SHOWN - 1)}…`;
}
