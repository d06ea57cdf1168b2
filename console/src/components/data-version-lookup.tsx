/**
 * Data version lookup: a version read from a screening record (an answer's
 * X-Data-Version, kept by the caller) resolved to when the service served
 * it and what it held (GET /v1/data-versions/{version}), for a dispute or
 * an audit months later.
 */
import { useRef, useState } from 'preact/hooks';
import { describeError } from '../api/client.js';
import { lookUpDataVersion } from '../api/screening.js';
import type { DataVersion } from '../api/types.js';
import { formatNumber } from '../format.js';
import { ErrorMessage } from './error-message.js';
import { Time } from './time.js';

type Lookup =
  | { readonly kind: 'idle' }
  | { readonly kind: 'looking'; readonly version: string }
  | { readonly kind: 'found'; readonly found: DataVersion }
  | { readonly kind: 'failed'; readonly message: string };

export function DataVersionLookup() {
  const input = useRef<HTMLInputElement>(null);
  const [lookup, setLookup] = useState<Lookup>({ kind: 'idle' });

  const onSubmit = (event: SubmitEvent) => {
    event.preventDefault();
    const version = input.current?.value.trim() ?? '';
    if (version === '') {
      setLookup({ kind: 'failed', message: 'Enter a data version, as an answer’s X-Data-Version carried it.' });
      input.current?.focus();
      return;
    }
    setLookup({ kind: 'looking', version });
    lookUpDataVersion(version).then(
      ({ body }) => setLookup({ kind: 'found', found: body }),
      (error: unknown) => setLookup({ kind: 'failed', message: describeError(error) }),
    );
  };

  return (
    <section aria-labelledby="data-version-title">
      <h2 id="data-version-title">Data version lookup</h2>
      <p>When the intelligence a screening record names was served: the data version its answer carried, resolved.</p>
      <form class="inline" onSubmit={onSubmit}>
        <label for="data-version">Data version</label>
        <input id="data-version" ref={input} type="text" spellcheck={false} autocomplete="off" maxLength={100} />
        <button type="submit" disabled={lookup.kind === 'looking'}>
          Look up
        </button>
      </form>
      <p role="status" class="status">
        {lookup.kind === 'looking' ? `Looking up ${lookup.version}…` : lookup.kind === 'found' ? `${lookup.found.version} found.` : ''}
      </p>
      {lookup.kind === 'found' ? <DataVersionFields found={lookup.found} /> : null}
      <ErrorMessage message={lookup.kind === 'failed' ? lookup.message : null} />
    </section>
  );
}

function DataVersionFields({ found }: { readonly found: DataVersion }) {
  return (
    <dl class="pairs" aria-label="Data version served">
      <dt>Data version</dt>
      <dd>
        <code>{found.version}</code>
      </dd>
      <dt>Served from</dt>
      <dd>
        <Time iso={found.from} />
      </dd>
      <dt>Served until</dt>
      <dd>{found.until === null ? 'still served' : <Time iso={found.until} />}</dd>
      <dt>Snapshot</dt>
      <dd>
        <code>{found.snapshot}</code>
      </dd>
      <dt>Delta position</dt>
      <dd>{found.position === 0 ? 'none (the snapshot alone)' : formatNumber(found.position)}</dd>
    </dl>
  );
}
