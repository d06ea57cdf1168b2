import { formatInstant } from '../format.js';

/** An instant, machine-readable in `datetime`; a dash when absent. */
export function Time({ iso }: { readonly iso: string | null | undefined }) {
  if (iso === null || iso === undefined) return <span>—</span>;
  return <time dateTime={iso}>{formatInstant(iso)}</time>;
}
