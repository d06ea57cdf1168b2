/** The status a review queue (disputes, reports) is filtered by; "All" is every status. */
import { useId } from 'preact/hooks';

export interface StatusFilterProps<S extends string> {
  /** Each status with its label, in the order shown; "All" follows. */
  readonly options: readonly (readonly [S, string])[];
  /** Null for all. */
  readonly value: S | null;
  readonly onChange: (value: S | null) => void;
}

export function StatusFilter<S extends string>({ options, value, onChange }: StatusFilterProps<S>) {
  const id = useId();
  const choose = (chosen: string) => onChange(options.find(([status]) => status === chosen)?.[0] ?? null);
  return (
    <div class="filters">
      <label for={id}>Status</label>
      <select id={id} value={value ?? ''} onChange={(event) => choose(event.currentTarget.value)}>
        {options.map(([status, label]) => (
          <option key={status} value={status}>
            {label}
          </option>
        ))}
        <option value="">All</option>
      </select>
    </div>
  );
}

/** A review status as a badge: waiting for an analyst (OPEN, RECEIVED) stands out, a decided one is plain. */
export function ReviewBadge({ status, waiting }: { readonly status: string; readonly waiting: boolean }) {
  return <span class={waiting ? 'badge waiting' : 'badge'}>{status}</span>;
}
