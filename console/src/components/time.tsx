import { formatInstant } from '../format.js';

/** An instant (or its UTC day, where space is short), machine-readable in `datetime`; a dash when absent. */
export function Time({ iso, day = false }: { readonly iso: string | null | undefined; readonly day?: boolean }) {
  if (iso === null || iso === undefined) return <span>—</span>;
  const text = formatInstant(iso);
  return (
    <time dateTime={iso} title={day ? text : undefined}>
      {day ? text.slice(0, 10) : text}
    </time>
  );
}
