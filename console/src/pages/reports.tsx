/**
 * Reports: what callers said happened after a payment, every key's, newest
 * first, those waiting for an analyst unless another status is chosen.
 * Accept makes a confirmed_fraud report one evidence item of its VPA (which
 * is FLAGGED from then on); Dismiss leaves everything as it was. A
 * false_positive report of a FLAGGED VPA opened a dispute, linked here:
 * that is where it is decided.
 */
import type { VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from '../api/client.js';
import { decideReport, listReports } from '../api/review.js';
import type { Report, ReportDecided, ReportStatus } from '../api/types.js';
import { ErrorMessage } from '../components/error-message.js';
import { OwnerKey } from '../components/owner-key.js';
import { PageHeading } from '../components/page-heading.js';
import { ReviewQueue, queueTitle } from '../components/review-queue.js';
import { ReviewBadge, StatusFilter } from '../components/status-filter.js';
import { Table } from '../components/table.js';
import { Time } from '../components/time.js';
import { Link, disputePath, screenPath } from '../router.js';
import { useCursorPages } from '../use-cursor-pages.js';
import { useLoad } from '../use-load.js';
import { loadKeysById, type KeysById } from '../watch/owned-watchlists.js';

const REPORTS_PER_PAGE = 50;
/** The service's limit on a note (docs/api.md, Review). */
const MAX_NOTE = 2000;

const REPORT_FILTERS: readonly (readonly [ReportStatus, string])[] = [
  ['RECEIVED', 'Received'],
  ['ACCEPTED', 'Accepted'],
  ['DISMISSED', 'Dismissed'],
];

type Decision = 'accept' | 'dismiss';

type Deciding =
  | { readonly kind: 'idle' }
  | { readonly kind: 'sending'; readonly report: Report; readonly decision: Decision }
  | { readonly kind: 'done'; readonly answer: ReportDecided }
  | { readonly kind: 'failed'; readonly message: string };

export function ReportsPage() {
  const [status, setStatus] = useState<ReportStatus | null>('RECEIVED');
  const keys = useLoad((signal) => loadKeysById(signal), []);
  const [deciding, setDeciding] = useState<Deciding>({ kind: 'idle' });
  const note = useRef<HTMLTextAreaElement>(null);

  /** Decide one report; the list is loaded again either way (a 409 means someone else decided it). */
  const decide = async (report: Report, decision: Decision, reload: () => Promise<void>) => {
    const text = note.current?.value.trim() ?? '';
    setDeciding({ kind: 'sending', report, decision });
    try {
      const answer = await decideReport(report.id, decision, text === '' ? null : text);
      if (note.current !== null) note.current.value = '';
      setDeciding({ kind: 'done', answer });
    } catch (error) {
      setDeciding({ kind: 'failed', message: describeError(error) });
    }
    await reload();
  };

  return (
    <>
      <PageHeading title="Reports" />
      <p>
        Callers report what happened after a payment. <strong>Accept</strong> makes a <code>confirmed_fraud</code> report one evidence item of its
        VPA, served at once; <strong>Dismiss</strong> changes nothing. A <code>false_positive</code> report of a FLAGGED VPA opened a dispute: decide
        that on Disputes.
      </p>
      <div class="field">
        <label for="decision-note">Decision note (optional)</label>
        <textarea id="decision-note" ref={note} rows={2} maxLength={MAX_NOTE} aria-describedby="decision-note-hint" />
        <span id="decision-note-hint" class="muted">
          Kept with the next report you accept or dismiss, and in the audit record.
        </span>
      </div>
      <p role="status" class="status">
        {deciding.kind === 'sending' ? `${deciding.decision === 'accept' ? 'Accepting' : 'Dismissing'} the report of ${deciding.report.upi}…` : ''}
      </p>
      <ErrorMessage message={deciding.kind === 'failed' ? deciding.message : null} />
      {deciding.kind === 'done' ? <DecisionOutcome answer={deciding.answer} /> : null}
      <StatusFilter options={REPORT_FILTERS} value={status} onChange={setStatus} />
      <ErrorMessage message={keys.error} />
      {keys.data === null ? (
        keys.loading ? <p role="status">Loading reports…</p> : null
      ) : (
        <ReportList key={status ?? 'all'} status={status} keys={keys.data} busy={deciding.kind === 'sending'} onDecide={decide} />
      )}
    </>
  );
}

interface ReportListProps {
  readonly status: ReportStatus | null;
  readonly keys: KeysById;
  readonly busy: boolean;
  readonly onDecide: (report: Report, decision: Decision, reload: () => Promise<void>) => Promise<void>;
}

function ReportList({ status, keys, busy, onDecide }: ReportListProps) {
  const reports = useCursorPages((cursor, signal) => listReports(status, REPORTS_PER_PAGE, cursor, signal));
  return (
    <ReviewQueue
      id="report-list-title"
      title={queueTitle(REPORT_FILTERS, status, 'reports', 'Every report')}
      pages={reports}
      count={(page) => page.reports.length}
      noun="reports"
      empty={status === 'RECEIVED' ? 'No report is waiting.' : 'None.'}
    >
      {(page, caption) => (
        <Table caption={caption} columns={['VPA', 'Outcome', 'Occurred', 'Reference', 'From key', 'Received', 'Status', 'What came of it', 'Decide']}>
          {page.reports.map((report) => {
            const rowId = `report-${report.id}`;
            return (
              <tr key={report.id}>
                <th scope="row" id={rowId} class="vpa">
                  <Link href={screenPath(report.upi)}>{report.upi}</Link>
                </th>
                <td>
                  {report.outcome}
                  {report.risk_category === null ? null : <span class="muted"> ({report.risk_category})</span>}
                </td>
                <td>
                  <Time iso={report.occurred_at} day />
                </td>
                <td>{report.reference ?? '—'}</td>
                <td>
                  <OwnerKey id={report.owner} keys={keys} />
                </td>
                <td>
                  <Time iso={report.created_at} day />
                </td>
                <td>
                  <ReviewBadge status={report.status} waiting={report.status === 'RECEIVED'} />
                </td>
                <td class="text">
                  <ReportResult report={report} />
                </td>
                <td class="actions">
                  {report.status !== 'RECEIVED' ? null : (
                    <>
                      {report.outcome === 'confirmed_fraud' ? (
                        <button type="button" aria-describedby={rowId} disabled={busy} onClick={() => void onDecide(report, 'accept', reports.loaded.reload)}>
                          Accept
                        </button>
                      ) : null}
                      <button type="button" class="secondary" aria-describedby={rowId} disabled={busy} onClick={() => void onDecide(report, 'dismiss', reports.loaded.reload)}>
                        Dismiss
                      </button>
                    </>
                  )}
                </td>
              </tr>
            );
          })}
        </Table>
      )}
    </ReviewQueue>
  );
}

/** The dispute a report opened, the evidence it became, the analyst's note. */
function ReportResult({ report }: { readonly report: Report }) {
  const parts: VNode[] = [];
  if (report.dispute_id !== null) {
    parts.push(
      <span key="dispute">
        Dispute <Link href={disputePath(report.dispute_id)}>{report.dispute_id}</Link>
      </span>,
    );
  }
  if (report.evidence_id !== null) {
    parts.push(
      <span key="evidence">
        Evidence <code>{report.evidence_id}</code>
      </span>,
    );
  }
  if (report.decision_note !== null) parts.push(<span key="note">“{report.decision_note}”</span>);
  if (parts.length === 0) return <>{report.status === 'RECEIVED' ? 'nothing yet' : '—'}</>;
  return <span class="parts">{parts}</span>;
}

function DecisionOutcome({ answer }: { readonly answer: ReportDecided }) {
  const heading = useRef<HTMLHeadingElement>(null);
  // The row's buttons are gone: focus goes to what came of the decision.
  useEffect(() => heading.current?.focus(), [answer]);
  const { report, data_version: version } = answer;
  const accepted = report.status === 'ACCEPTED';
  return (
    <section class="outcome" aria-labelledby="decision-title">
      <h2 id="decision-title" ref={heading} tabIndex={-1}>
        Report {accepted ? 'accepted' : 'dismissed'}
      </h2>
      <p>
        {accepted ? (
          <>
            The report of <span class="vpa">{report.upi}</span> is now evidence <code>{report.evidence_id ?? '—'}</code>, served from data version{' '}
            <code>{version ?? '—'}</code>.
          </>
        ) : (
          <>
            The report of <span class="vpa">{report.upi}</span> is dismissed: nothing changed.
          </>
        )}{' '}
        <Link href={screenPath(report.upi)}>Screen {report.upi}</Link>
      </p>
    </section>
  );
}
