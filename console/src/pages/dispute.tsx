/**
 * One dispute: what the caller said, beside its VPA's verdict now and the
 * evidence behind it; while it is open, a note and Uphold (the VPA is
 * cleared, or the evidence chosen is retracted) or Reject (the verdict
 * stands). After the decision, what it did and the verdict again.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, describeError } from '../api/client.js';
import { fetchDisputeReview, resolveDispute } from '../api/review.js';
import type { AdminDispute, DisputeResolved, DisputeReview } from '../api/types.js';
import { ErrorMessage } from '../components/error-message.js';
import { EvidenceTable } from '../components/evidence-table.js';
import { OwnerKey } from '../components/owner-key.js';
import { PageHeading } from '../components/page-heading.js';
import { ReviewBadge } from '../components/status-filter.js';
import { Time } from '../components/time.js';
import { VerdictView } from '../components/verdict-view.js';
import { BASE, Link } from '../router.js';
import { useLoad } from '../use-load.js';
import { loadKeysById, type KeysById } from '../watch/owned-watchlists.js';

/** The service's limit on a note (docs/api.md, Review). */
const MAX_NOTE = 2000;

export function DisputePage({ disputeId }: { readonly disputeId: string }) {
  const review = useLoad(async (signal) => {
    const [answer, keys] = await Promise.all([fetchDisputeReview(disputeId, signal), loadKeysById(signal)]);
    return { review: answer.body, requestId: answer.requestId, keys };
  }, [disputeId]);
  const upi = review.data?.review.dispute.upi;
  return (
    <>
      <PageHeading title={upi === undefined ? `Dispute ${disputeId}` : `Dispute of ${upi}`} />
      <p>
        <Link href={`${BASE}disputes`}>All disputes</Link>
      </p>
      <ErrorMessage message={review.error} />
      {review.data === null ? (
        review.loading ? <p role="status">Loading the dispute…</p> : null
      ) : (
        <ReviewView review={review.data.review} requestId={review.data.requestId} keys={review.data.keys} onChanged={review.reload} />
      )}
    </>
  );
}

interface ReviewViewProps {
  readonly review: DisputeReview;
  readonly requestId: string | null;
  readonly keys: KeysById;
  /** Loads the review again: the dispute resolved, the verdict as it is now. */
  readonly onChanged: () => Promise<void>;
}

function ReviewView({ review, requestId, keys, onChanged }: ReviewViewProps) {
  const { dispute, evidence } = review;
  const open = dispute.status === 'OPEN';
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set());
  const choose = (evidenceId: string, on: boolean) =>
    setChosen((current) => {
      const next = new Set(current);
      if (on) next.add(evidenceId);
      else next.delete(evidenceId);
      return next;
    });

  return (
    <>
      <div class="review-layout">
        <section aria-labelledby="dispute-title">
          <h2 id="dispute-title">The dispute</h2>
          <DisputeFields dispute={dispute} keys={keys} />
        </section>
        <div>
          <VerdictView verdict={review.verdict} requestId={requestId} dataVersion={review.data_version} />
          <section aria-labelledby="evidence-title">
            <h3 id="evidence-title">Evidence</h3>
            {evidence === null ? (
              <p>This server keeps no corrections: it lists no evidence, and a dispute cannot be upheld here.</p>
            ) : evidence.length === 0 ? (
              <p>No evidence of this VPA is stored.</p>
            ) : (
              <EvidenceTable
                items={evidence}
                caption={`Evidence of ${dispute.upi} (${evidence.length})`}
                chosen={open ? chosen : undefined}
                onChoose={open ? choose : undefined}
              />
            )}
          </section>
        </div>
      </div>
      <Resolution dispute={dispute} keys={keys} retract={[...chosen].filter((id) => evidence?.some((item) => item.evidence_id === id) ?? false)} onChanged={onChanged} />
    </>
  );
}

function DisputeFields({ dispute, keys }: { readonly dispute: AdminDispute; readonly keys: KeysById }) {
  return (
    <dl class="pairs">
      <dt>Id</dt>
      <dd>
        <code>{dispute.id}</code>
      </dd>
      <dt>VPA</dt>
      <dd class="vpa">{dispute.upi}</dd>
      <dt>Status</dt>
      <dd>
        <ReviewBadge status={dispute.status} waiting={dispute.status === 'OPEN'} />
      </dd>
      <dt>Reason</dt>
      <dd>{dispute.reason}</dd>
      <dt>Details</dt>
      <dd class="text">{dispute.details === '' ? '—' : dispute.details}</dd>
      <dt>Reference</dt>
      <dd>{dispute.reference ?? '—'}</dd>
      <dt>Opened by</dt>
      <dd>
        <OwnerKey id={dispute.owner} keys={keys} />
      </dd>
      <dt>Opened</dt>
      <dd>
        <Time iso={dispute.created_at} />
      </dd>
    </dl>
  );
}

interface ResolutionProps {
  readonly dispute: AdminDispute;
  readonly keys: KeysById;
  /** Evidence ids chosen to retract instead of clearing the VPA. */
  readonly retract: readonly string[];
  readonly onChanged: () => Promise<void>;
}

type Decision = { readonly kind: 'idle' } | { readonly kind: 'sending' } | { readonly kind: 'done'; readonly answer: DisputeResolved } | { readonly kind: 'failed'; readonly message: string };

/** The form while the dispute is open; what its resolution did once it is not. */
function Resolution({ dispute, keys, retract, onChanged }: ResolutionProps) {
  const note = useRef<HTMLTextAreaElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const [decision, setDecision] = useState<Decision>({ kind: 'idle' });
  const resolved = decision.kind === 'done' && decision.answer.dispute.id === dispute.id ? decision.answer : null;
  // The answer of a resolution made here stands for the dispute until the review, loaded again, shows it.
  const shown = resolved !== null && dispute.status === 'OPEN' ? resolved.dispute : dispute;
  const open = shown.status === 'OPEN';
  const wasOpen = useRef(open);

  // When the form goes (resolved here, or by someone else meanwhile), focus goes to this section's heading, not back to the page's start.
  useEffect(() => {
    if (wasOpen.current && !open) heading.current?.focus();
    wasOpen.current = open;
  }, [open]);

  const resolve = (outcome: 'upheld' | 'rejected') => {
    const text = note.current?.value.trim() ?? '';
    if (text === '') {
      setDecision({ kind: 'failed', message: `Write a note first: why the dispute is ${outcome}.` });
      note.current?.focus();
      return;
    }
    setDecision({ kind: 'sending' });
    const chosen = outcome === 'upheld' && retract.length > 0 ? { retract } : {};
    resolveDispute(dispute.id, { outcome, note: text, ...chosen }).then(
      (answer) => {
        setDecision({ kind: 'done', answer });
        void onChanged();
      },
      (error: unknown) => {
        setDecision({ kind: 'failed', message: describeError(error) });
        // Resolved by someone else meanwhile: show what they decided.
        if (error instanceof ApiError && error.status === 409) void onChanged();
      },
    );
  };

  const effect =
    retract.length === 0
      ? 'Uphold clears the VPA: the evidence it has now stops counting.'
      : `Uphold retracts the ${retract.length === 1 ? 'evidence item' : `${retract.length} evidence items`} chosen above instead; the VPA keeps its other evidence.`;

  return (
    <section aria-labelledby="resolution-title">
      <h2 id="resolution-title" ref={heading} tabIndex={-1}>
        {open ? 'Resolve' : 'Resolution'}
      </h2>
      {open ? (
        <form class="stack" onSubmit={(event) => event.preventDefault()}>
          <div class="field">
            <label for="resolution-note">Note</label>
            <textarea id="resolution-note" ref={note} rows={3} maxLength={MAX_NOTE} aria-describedby="resolution-note-hint" />
            <span id="resolution-note-hint" class="muted">
              Why: kept with the dispute and in the audit record.
            </span>
          </div>
          <p id="resolution-effect">{effect} Reject leaves the verdict as it is.</p>
          <div class="button-row">
            <button type="button" aria-describedby="resolution-effect" disabled={decision.kind === 'sending'} onClick={() => resolve('upheld')}>
              Uphold
            </button>
            <button type="button" class="secondary" disabled={decision.kind === 'sending'} onClick={() => resolve('rejected')}>
              Reject
            </button>
          </div>
        </form>
      ) : (
        <ResolutionFields dispute={shown} keys={keys} dataVersion={resolved?.data_version} />
      )}
      <p role="status" class="status">
        {decision.kind === 'sending' ? 'Resolving…' : resolved !== null ? describeResolution(resolved) : ''}
      </p>
      <ErrorMessage message={decision.kind === 'failed' ? decision.message : null} />
    </section>
  );
}

function ResolutionFields({ dispute, keys, dataVersion }: { readonly dispute: AdminDispute; readonly keys: KeysById; readonly dataVersion: string | null | undefined }) {
  return (
    <dl class="pairs">
      <dt>Outcome</dt>
      <dd>
        <ReviewBadge status={dispute.status} waiting={false} />
      </dd>
      <dt>Resolved</dt>
      <dd>
        <Time iso={dispute.resolved_at} />
      </dd>
      <dt>By</dt>
      <dd>{dispute.resolved_by === null ? '—' : <OwnerKey id={dispute.resolved_by} keys={keys} />}</dd>
      <dt>Note</dt>
      <dd class="text">{dispute.resolution_note ?? '—'}</dd>
      <dt>Clearance</dt>
      <dd>
        <code>{dispute.clearance_id ?? '—'}</code>
      </dd>
      <dt>Retracted</dt>
      <dd>{dispute.retracted === null ? '—' : <code>{dispute.retracted.join(', ')}</code>}</dd>
      {dataVersion === undefined ? null : (
        <>
          <dt>Data version</dt>
          <dd>
            <code>{dataVersion ?? '— (nothing changed)'}</code>
          </dd>
        </>
      )}
    </dl>
  );
}

function describeResolution({ dispute, data_version: version }: DisputeResolved): string {
  if (dispute.status === 'REJECTED') return 'Rejected: the verdict stands.';
  const served = version === null ? '' : `, served from data version ${version}`;
  if (dispute.retracted !== null) return `Upheld: ${dispute.retracted.length === 1 ? '1 evidence item' : `${dispute.retracted.length} evidence items`} retracted${served}.`;
  return `Upheld: ${dispute.upi} is cleared by ${dispute.clearance_id ?? 'a clearance'}${served}.`;
}
