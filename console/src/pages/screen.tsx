/**
 * Screen: one VPA (also opened from a link, `/console/screen?upi=...`), and
 * a pasted list or CSV file of many.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { describeInvalidVpa } from '../../../src/vpa/vpa.js';
import { describeError, type Answer } from '../api/client.js';
import { lookUp } from '../api/screening.js';
import type { Verdict } from '../api/types.js';
import { BatchScreen } from '../components/batch-screen.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { VerdictView } from '../components/verdict-view.js';
import { AnswerTimeline } from '../components/answer-timeline.js';
import { navigate, screenPath } from '../router.js';

type Lookup =
  | { readonly kind: 'idle' }
  | { readonly kind: 'busy'; readonly upi: string }
  | { readonly kind: 'done'; readonly answer: Answer<Verdict> }
  | { readonly kind: 'failed'; readonly message: string };

export function ScreenPage({ upi }: { readonly upi: string | null }) {
  const field = useRef<HTMLInputElement>(null);
  const [lookup, setLookup] = useState<Lookup>({ kind: 'idle' });
  // Bumped to look up the VPA already in the address again.
  const [again, setAgain] = useState(0);

  // The field shows the VPA in the address, set as the page is drawn: an effect runs after paint and
  // would wipe what was typed in the meantime.
  useLayoutEffect(() => {
    if (field.current !== null) field.current.value = upi ?? '';
  }, [upi]);

  // The VPA in the address is looked up whenever it changes (a link from a cluster, the form below, back and forward).
  useEffect(() => {
    if (upi === null || upi.trim() === '') {
      setLookup({ kind: 'idle' });
      return;
    }
    const vpa = upi.trim();
    const invalid = describeInvalidVpa(vpa);
    if (invalid !== null) {
      setLookup({ kind: 'failed', message: `“${vpa}” is not a valid VPA: ${invalid}.` });
      return;
    }
    const controller = new AbortController();
    setLookup({ kind: 'busy', upi: vpa });
    lookUp(vpa, controller.signal).then(
      (answer) => setLookup({ kind: 'done', answer }),
      (error: unknown) => {
        if (!controller.signal.aborted) setLookup({ kind: 'failed', message: describeError(error) });
      },
    );
    return () => controller.abort();
  }, [upi, again]);

  const onSubmit = (event: SubmitEvent) => {
    event.preventDefault();
    const vpa = field.current!.value.trim();
    if (vpa === '') {
      setLookup({ kind: 'failed', message: 'Enter a VPA, such as name@bank.' });
      return;
    }
    // Through the address, so the lookup can be linked to and reloaded.
    if (vpa === upi) setAgain((n) => n + 1);
    else navigate(screenPath(vpa));
  };

  return (
    <>
      <PageHeading title="Screen" />
      <section aria-labelledby="one-title">
        <h2 id="one-title">One VPA</h2>
        <form class="inline" onSubmit={onSubmit}>
          <label for="vpa">VPA</label>
          <input id="vpa" ref={field} type="text" inputMode="email" autocomplete="off" spellcheck={false} placeholder="name@bank" />
          <button type="submit">Look up</button>
        </form>
        <p role="status" class="status">
          {lookup.kind === 'busy' ? `Looking up ${lookup.upi}…` : lookup.kind === 'done' ? `${lookup.answer.body.upi}: ${lookup.answer.body.status}.` : ''}
        </p>
        <ErrorMessage message={lookup.kind === 'failed' ? lookup.message : null} />
        {lookup.kind === 'done' ? (
          <>
            <VerdictView verdict={lookup.answer.body} requestId={lookup.answer.requestId} dataVersion={lookup.answer.dataVersion} />
            <AnswerTimeline upi={lookup.answer.body.upi} version={lookup.answer.dataVersion} />
          </>
        ) : null}
      </section>
      <BatchScreen />
    </>
  );
}
