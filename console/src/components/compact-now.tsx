/**
 * "Compact now": folds the live delta into a new snapshot in the
 * background (POST /v1/admin/compaction, as SIGUSR2 does). The answer
 * comes at once; the page's figures show the new snapshot when it is
 * served.
 */
import { useState } from 'preact/hooks';
import { startCompaction } from '../api/admin.js';
import { describeError } from '../api/client.js';
import { ErrorMessage } from './error-message.js';

type Request = { readonly kind: 'idle' } | { readonly kind: 'sending' } | { readonly kind: 'answered'; readonly text: string } | { readonly kind: 'failed'; readonly message: string };

export function CompactNow({ onStarted }: { readonly onStarted: () => void }) {
  const [request, setRequest] = useState<Request>({ kind: 'idle' });
  const compact = () => {
    setRequest({ kind: 'sending' });
    startCompaction().then(
      (answer) => {
        setRequest({
          kind: 'answered',
          text: answer.started
            ? `Compaction of ${answer.snapshot} started: the new snapshot is served once it is built.`
            : `A compaction of ${answer.snapshot} is running already.`,
        });
        onStarted();
      },
      (error: unknown) => setRequest({ kind: 'failed', message: describeError(error) }),
    );
  };
  return (
    <>
      <div class="button-row">
        <button type="button" disabled={request.kind === 'sending'} onClick={compact}>
          Compact now
        </button>
      </div>
      <p role="status" class="status">
        {request.kind === 'sending' ? 'Asking for a compaction…' : request.kind === 'answered' ? request.text : ''}
      </p>
      <ErrorMessage message={request.kind === 'failed' ? request.message : null} />
    </>
  );
}
