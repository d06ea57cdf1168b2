/**
 * A list the API hands out in pages by cursor (a watchlist's VPAs, its
 * events): the page shown, the next one by its `next_cursor`, and back by
 * the cursors already followed. The list starts again at its first page when
 * the component holding it is keyed anew.
 */
import { useState } from 'preact/hooks';
import type { CursorPage } from './api/types.js';
import { useLoad, type Loaded } from './use-load.js';

export interface CursorPages<T extends CursorPage> {
  readonly loaded: Loaded<T>;
  /** 1 for the first page. */
  readonly number: number;
  /** Null on the last page (and while a page loads). */
  readonly next: (() => void) | null;
  /** Null on the first page. */
  readonly previous: (() => void) | null;
}

export function useCursorPages<T extends CursorPage>(load: (cursor: string | null, signal: AbortSignal) => Promise<T>): CursorPages<T> {
  // The cursor of every page from the first (null) to the one shown.
  const [trail, setTrail] = useState<readonly (string | null)[]>([null]);
  const cursor = trail.at(-1) ?? null;
  const loaded = useLoad((signal) => load(cursor, signal), [cursor]);
  const nextCursor = loaded.data?.next_cursor ?? null;
  return {
    loaded,
    number: trail.length,
    next: nextCursor === null ? null : () => setTrail((cursors) => [...cursors, nextCursor]),
    previous: trail.length === 1 ? null : () => setTrail((cursors) => cursors.slice(0, -1)),
  };
}
