/**
 * Retract evidence: items found wrong are withdrawn by id
 * (POST /v1/admin/retractions) and never count again; the answer comes once
 * the retraction is served. The service wants a key with the ingest scope:
 * a session whose key lacks it is told so before and after.
 */
import { useRef, useState } from 'preact/hooks';
import { ApiError, describeError } from '../api/client.js';
import { retractEvidence } from '../api/corrections.js';
import type { RetractionOutcome, Session } from '../api/types.js';
import { formatNumber } from '../format.js';
import { ErrorMessage } from './error-message.js';

/** The service's limits (docs/api.md, Corrections). */
const MAX_IDS = 1000;
const MAX_REASON = 500;

type Retraction =
  | { readonly kind: 'idle' }
  | { readonly kind: 'sending'; readonly count: number }
  | { readonly kind: 'done'; readonly outcome: RetractionOutcome }
  | { readonly kind: 'failed'; readonly message: string };

export function RetractEvidence({ session, onRetracted }: { readonly session: Session; readonly onRetracted: () => void }) {
  const ids = useRef<HTMLTextAreaElement>(null);
  const reason = useRef<HTMLInputElement>(null);
  const [retraction, setRetraction] = useState<Retraction>({ kind: 'idle' });
  const canIngest = session.key.scopes.includes('ingest');

  const onSubmit = (event: SubmitEvent) => {
    event.preventDefault();
    const evidenceIds = parseEvidenceIds(ids.current?.value ?? '');
    const why = reason.current?.value.trim() ?? '';
    const refuse = (message: string, field: HTMLElement | null) => {
      setRetraction({ kind: 'failed', message });
      field?.focus();
    };
    if (evidenceIds.length === 0) return refuse('Enter the ids of the evidence items to retract.', ids.current);
    if (evidenceIds.length > MAX_IDS) return refuse(`${formatNumber(evidenceIds.length)} ids: at most ${formatNumber(MAX_IDS)} at once.`, ids.current);
    if (why === '') return refuse('Give a reason: it goes in the audit record.', reason.current);
    setRetraction({ kind: 'sending', count: evidenceIds.length });
    retractEvidence(evidenceIds, why).then(
      (outcome) => {
        setRetraction({ kind: 'done', outcome });
        onRetracted();
      },
      (error: unknown) => setRetraction({ kind: 'failed', message: describeRefusal(error) }),
    );
  };

  return (
    <section aria-labelledby="retract-title">
      <h2 id="retract-title">Retract evidence</h2>
      <p>Evidence items found wrong stop counting as soon as the answer comes, and never count again.</p>
      {canIngest ? null : (
        <p class="note">This session’s key has no ingest scope, which retractions need: the service will refuse them. Sign in with a key that has it.</p>
      )}
      <form class="stack" onSubmit={onSubmit}>
        <div class="field">
          <label for="retract-ids">Evidence ids</label>
          <textarea id="retract-ids" ref={ids} rows={4} spellcheck={false} aria-describedby="retract-ids-hint" />
          <span id="retract-ids-hint" class="muted">
            One a line, or separated by commas; up to {formatNumber(MAX_IDS)}.
          </span>
        </div>
        <div class="field">
          <label for="retract-reason">Reason</label>
          <input id="retract-reason" ref={reason} type="text" maxLength={MAX_REASON} autocomplete="off" />
        </div>
        <button type="submit" disabled={retraction.kind === 'sending'}>
          Retract
        </button>
      </form>
      <p role="status" class="status">
        {retraction.kind === 'sending'
          ? `Retracting ${retraction.count === 1 ? '1 item' : `${formatNumber(retraction.count)} items`}…`
          : retraction.kind === 'done'
            ? `Retracted ${formatNumber(retraction.outcome.retracted)}, served from data version ${retraction.outcome.data_version}.`
            : ''}
      </p>
      {retraction.kind === 'done' ? <RetractionFields outcome={retraction.outcome} /> : null}
      <ErrorMessage message={retraction.kind === 'failed' ? retraction.message : null} />
    </section>
  );
}

function RetractionFields({ outcome }: { readonly outcome: RetractionOutcome }) {
  return (
    <dl class="pairs">
      <dt>Retracted</dt>
      <dd>{formatNumber(outcome.retracted)}</dd>
      <dt>Retracted before</dt>
      <dd>{formatNumber(outcome.already_retracted)}</dd>
      <dt>Unknown ids</dt>
      <dd>{outcome.unknown.length === 0 ? 'none' : <code>{outcome.unknown.join(', ')}</code>}</dd>
      <dt>Data version</dt>
      <dd>
        <code>{outcome.data_version}</code>
      </dd>
    </dl>
  );
}

/** Ids one a line or separated by commas, trimmed, each once, in the order given. */
export function parseEvidenceIds(text: string): string[] {
  return [...new Set(text.split(/[\r\n,]+/).map((id) => id.trim()).filter((id) => id !== ''))];
}

/** A 403 here is the missing ingest scope: say what to do about it. */
function describeRefusal(error: unknown): string {
  const message = describeError(error);
  if (error instanceof ApiError && error.status === 403) return `Refused: ${message}. Retractions need a key with the ingest scope; sign in with one.`;
  return message;
}
