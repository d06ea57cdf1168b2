/**
 * A review queue (disputes, reports), newest first, a page at a time: its
 * heading, named by the status shown (focus goes there when a page turns),
 * the page's table, and the pager.
 */
import type { ComponentChildren } from 'preact';
import { useRef } from 'preact/hooks';
import type { CursorPage } from '../api/types.js';
import type { CursorPages } from '../use-cursor-pages.js';
import { ErrorMessage } from './error-message.js';
import { Pager } from './pager.js';

export interface ReviewQueueProps<T extends CursorPage> {
  readonly id: string;
  /** "Open disputes", "Every report". */
  readonly title: string;
  readonly pages: CursorPages<T>;
  /** The items of a page. */
  readonly count: (page: T) => number;
  /** What is loading ("disputes"), and what to say of an empty queue. */
  readonly noun: string;
  readonly empty: string;
  /** The table of a page, with its caption. */
  readonly children: (page: T, caption: string) => ComponentChildren;
}

export function ReviewQueue<T extends CursorPage>({ id, title, pages, count, noun, empty, children }: ReviewQueueProps<T>) {
  const heading = useRef<HTMLHeadingElement>(null);
  const page = pages.loaded.data;
  let shown: ComponentChildren = null;
  if (page === null) shown = pages.loaded.loading ? <p role="status">Loading {noun}…</p> : null;
  else if (count(page) === 0 && pages.number === 1) shown = <p>{empty}</p>;
  else shown = children(page, `${title}, newest first, page ${pages.number}`);
  return (
    <section aria-labelledby={id}>
      <h2 id={id} ref={heading} tabIndex={-1}>
        {title}
      </h2>
      <ErrorMessage message={pages.loaded.error} />
      {shown}
      <Pager pages={pages} previousLabel={`Newer ${noun}`} nextLabel={`Older ${noun}`} focusOnTurn={heading} />
    </section>
  );
}

/** A queue's title: "Open disputes" for a status, `every` ("Every dispute") for all. */
export function queueTitle<S extends string>(filters: readonly (readonly [S, string])[], status: S | null, noun: string, every: string): string {
  if (status === null) return every;
  return `${filters.find(([value]) => value === status)?.[1] ?? status} ${noun}`;
}
