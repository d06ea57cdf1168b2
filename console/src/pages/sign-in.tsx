/**
 * Sign in with an admin key. The key goes once, in the body of the sign-in
 * request, and is cleared from the field whatever the outcome; nothing keeps it.
 */
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { describeError, signIn } from '../api/client.js';
import type { Session } from '../api/types.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';

export function SignInPage({ notice, onSignedIn }: { readonly notice: string | null; readonly onSignedIn: (session: Session) => void }) {
  const main = useRef<HTMLElement>(null);
  const field = useRef<HTMLInputElement>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  // Signed out (or the session ended): the control that had focus is gone, so focus starts again at the heading,
  // in the same commit that shows the page.
  useLayoutEffect(() => {
    if (notice !== null) main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, []);

  const onSubmit = (event: SubmitEvent) => {
    event.preventDefault();
    const input = field.current!;
    const key = input.value.trim();
    input.value = '';
    if (key === '') {
      setError('Enter an API key with the admin scope.');
      input.focus();
      return;
    }
    setBusy(true);
    setError(null);
    signIn(key).then(onSignedIn, (failure: unknown) => {
      setBusy(false);
      setError(describeError(failure));
      field.current?.focus();
    });
  };

  return (
    <main class="narrow sign-in" ref={main}>
      <PageHeading title="Sign in" />
      <p>Sign in with an API key that has the admin scope. The console does not keep the key.</p>
      {notice === null ? null : <p role="status">{notice}</p>}
      <form onSubmit={onSubmit} aria-busy={busy}>
        <label for="api-key">API key</label>
        <input id="api-key" ref={field} type="password" autocomplete="off" spellcheck={false} required />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <ErrorMessage message={error} />
    </main>
  );
}
