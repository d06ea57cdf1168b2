/**
 * Buttons to the next and previous page of a cursor-paged table, and which
 * page is shown; nothing while everything fits on one page. Focus goes to
 * `focusOnTurn` (the section's heading), as the buttons may be disabled by
 * the turn.
 */
import type { RefObject } from 'preact';
import type { CursorPage } from '../api/types.js';
import type { CursorPages } from '../use-cursor-pages.js';

export interface PagerProps<T extends CursorPage> {
  readonly pages: CursorPages<T>;
  readonly previousLabel: string;
  readonly nextLabel: string;
  readonly focusOnTurn: RefObject<HTMLElement | null>;
}

export function Pager<T extends CursorPage>({ pages, previousLabel, nextLabel, focusOnTurn }: PagerProps<T>) {
  if (pages.number === 1 && pages.next === null) return null;
  const turn = (to: (() => void) | null) => {
    if (to === null) return;
    to();
    focusOnTurn.current?.focus();
  };
  return (
    <div class="button-row pager">
      <button type="button" disabled={pages.previous === null} onClick={() => turn(pages.previous)}>
        {previousLabel}
      </button>
      <span class="muted">Page {pages.number}</span>
      <button type="button" disabled={pages.next === null} onClick={() => turn(pages.next)}>
        {nextLabel}
      </button>
    </div>
  );
}
