/**
 * A key just created or rotated: the only time it is shown. Copy puts it on
 * the clipboard; where the browser refuses that, the key is selected for the
 * user to copy by hand.
 */
import { useEffect, useRef, useState } from 'preact/hooks';

export interface IssuedKeyView {
  readonly key: string;
  readonly name: string;
  readonly how: 'created' | 'rotated';
}

export function IssuedKeyPanel({ issued, onDone }: { readonly issued: IssuedKeyView; readonly onDone: () => void }) {
  const panel = useRef<HTMLElement>(null);
  const field = useRef<HTMLInputElement>(null);
  const [copyStatus, setCopyStatus] = useState('');

  useEffect(() => {
    setCopyStatus('');
    panel.current?.focus();
  }, [issued]);

  const selectKey = () => {
    field.current?.focus();
    field.current?.select();
  };

  const onCopy = () => {
    const clipboard = navigator.clipboard as Clipboard | undefined;
    if (clipboard === undefined) {
      selectKey();
      setCopyStatus('The browser does not allow copying here. The key is selected: press Ctrl+C (⌘C on a Mac).');
      return;
    }
    clipboard.writeText(issued.key).then(
      () => setCopyStatus('Copied to the clipboard.'),
      () => {
        selectKey();
        setCopyStatus('The browser refused to copy. The key is selected: press Ctrl+C (⌘C on a Mac).');
      },
    );
  };

  return (
    <section class="issued" ref={panel} tabIndex={-1} aria-labelledby="issued-title">
      <h2 id="issued-title">
        {issued.how === 'created' ? 'New key' : 'Rotated key'} for “{issued.name}”
      </h2>
      <p>
        <strong>You will not see this key again.</strong> Copy it now and store it where your service keeps its secrets.
        {issued.how === 'rotated' ? ' The previous key has stopped working.' : ''}
      </p>
      <div class="row">
        <label for="issued-key">New API key</label>
        <input id="issued-key" ref={field} class="key-text" type="text" readOnly value={issued.key} spellcheck={false} onFocus={selectKey} />
        <button type="button" onClick={onCopy}>
          Copy
        </button>
      </div>
      <p role="status">{copyStatus}</p>
      <button type="button" onClick={onDone}>
        Done
      </button>
    </section>
  );
}
