/**
 * Evidence upload: an NDJSON file sent as it is to POST /v1/admin/evidence,
 * answered once stored and served; a refused file lists every bad line.
 */
import { useRef, useState } from 'preact/hooks';
import { uploadEvidence } from '../api/admin.js';
import { ApiError, describeError } from '../api/client.js';
import type { EvidenceLineError, EvidenceResult } from '../api/types.js';
import { formatBytes, formatNumber } from '../format.js';
import { ErrorMessage } from './error-message.js';
import { Table, numeric } from './table.js';

/** The service's body limit for evidence (README: up to 16 MiB). */
const MAX_EVIDENCE_BYTES = 16 * 1024 * 1024;

type Upload =
  | { readonly kind: 'idle' }
  | { readonly kind: 'sending'; readonly name: string }
  | { readonly kind: 'stored'; readonly result: EvidenceResult }
  | { readonly kind: 'refused'; readonly message: string; readonly errors: readonly EvidenceLineError[] };

export function EvidenceUpload({ onStored }: { readonly onStored: () => void }) {
  const fileField = useRef<HTMLInputElement>(null);
  const [upload, setUpload] = useState<Upload>({ kind: 'idle' });

  const onSubmit = (event: SubmitEvent) => {
    event.preventDefault();
    const file = fileField.current?.files?.[0];
    if (file === undefined) return setUpload({ kind: 'refused', message: 'Choose an NDJSON file first.', errors: [] });
    if (file.size > MAX_EVIDENCE_BYTES) {
      return setUpload({ kind: 'refused', message: `The file is ${formatBytes(file.size)}; the service takes at most ${formatBytes(MAX_EVIDENCE_BYTES)} at once.`, errors: [] });
    }
    setUpload({ kind: 'sending', name: file.name });
    uploadEvidence(file).then(
      ({ body }) => {
        setUpload({ kind: 'stored', result: body });
        onStored();
      },
      (error: unknown) => setUpload({ kind: 'refused', message: describeError(error), errors: lineErrors(error) }),
    );
  };

  return (
    <section aria-labelledby="evidence-title">
      <h2 id="evidence-title">Upload evidence</h2>
      <p>
        NDJSON in the evidence format, one item per line. It is served as soon as the answer comes; a file with any invalid line is refused whole.
      </p>
      <form class="inline" onSubmit={onSubmit}>
        <label for="evidence-file">Evidence file (NDJSON)</label>
        <input id="evidence-file" ref={fileField} type="file" accept=".ndjson,.jsonl,application/x-ndjson,text/plain" />
        <button type="submit" disabled={upload.kind === 'sending'}>
          Upload evidence
        </button>
      </form>
      <p role="status" class="status">
        {upload.kind === 'sending' ? `Sending ${upload.name}…` : upload.kind === 'stored' ? 'Stored and served.' : ''}
      </p>
      {upload.kind === 'stored' ? (
        <dl class="pairs">
          <dt>Items</dt>
          <dd>{formatNumber(upload.result.items)}</dd>
          <dt>Added</dt>
          <dd>{formatNumber(upload.result.added)}</dd>
          <dt>Duplicates</dt>
          <dd>{formatNumber(upload.result.duplicates)}</dd>
          <dt>Data version</dt>
          <dd>
            <code>{upload.result.data_version}</code>
          </dd>
        </dl>
      ) : null}
      {upload.kind === 'refused' ? (
        <>
          <ErrorMessage message={upload.message} />
          {upload.errors.length === 0 ? null : (
            <Table caption="Invalid lines (nothing was stored)" columns={[numeric('Line'), 'Reason']}>
              {upload.errors.map((error) => (
                <tr key={error.line}>
                  <td class="num">{error.line}</td>
                  <td>{error.reason}</td>
                </tr>
              ))}
            </Table>
          )}
        </>
      ) : null}
    </section>
  );
}

/** The line-level errors of a 422. */
function lineErrors(error: unknown): readonly EvidenceLineError[] {
  if (!(error instanceof ApiError) || error.status !== 422 || !Array.isArray(error.body.errors)) return [];
  return (error.body.errors as unknown[]).filter(
    (item): item is EvidenceLineError => typeof item === 'object' && item !== null && typeof (item as EvidenceLineError).line === 'number',
  );
}
