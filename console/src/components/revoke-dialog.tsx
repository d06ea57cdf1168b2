/** The confirmation step before a key is revoked: a modal dialog, Escape or Cancel backs out. */
import { useEffect, useRef } from 'preact/hooks';
import type { KeyRecord } from '../api/types.js';

export interface RevokeDialogProps {
  /** The key to confirm; null keeps the dialog closed. */
  readonly target: KeyRecord | null;
  readonly ownKey: boolean;
  readonly onConfirm: (key: KeyRecord) => void;
  readonly onCancel: () => void;
}

export function RevokeDialog({ target, ownKey, onConfirm, onCancel }: RevokeDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    const element = dialog.current!;
    if (target !== null && !element.open) element.showModal();
    if (target === null && element.open) element.close();
  }, [target]);

  return (
    <dialog ref={dialog} aria-labelledby="revoke-title" aria-describedby="revoke-what" onCancel={onCancel} onClose={() => target !== null && onCancel()}>
      <h2 id="revoke-title">Revoke “{target?.name ?? ''}”?</h2>
      <p id="revoke-what">
        The key stops working at once, for every request and every console session signed in with it. This cannot be undone.
        {ownKey ? ' It is the key of this session: you will be signed out.' : ''}
      </p>
      <div class="button-row">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={() => target !== null && onConfirm(target)}>
          Confirm revoke
        </button>
      </div>
    </dialog>
  );
}
