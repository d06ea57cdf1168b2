/** A cluster's members, sortable by any column (the header buttons; `aria-sort` says which and how). */
import { useId, useState } from 'preact/hooks';
import type { GraphMember } from '../api/types.js';
import { formatConfidence, formatNumber } from '../format.js';
import { Link, navigate, screenPath } from '../router.js';
import { TableWrap } from './table-wrap.js';
import { Time } from './time.js';

type Column = keyof GraphMember;
type Direction = 'ascending' | 'descending';

const COLUMNS: readonly { readonly key: Column; readonly label: string; readonly numeric: boolean }[] = [
  { key: 'upi', label: 'UPI', numeric: false },
  { key: 'confidence', label: 'Confidence', numeric: true },
  { key: 'risk_category', label: 'Risk category', numeric: false },
  { key: 'first_seen', label: 'First seen', numeric: false },
  { key: 'last_seen', label: 'Last seen', numeric: false },
  { key: 'evidence_count', label: 'Evidence', numeric: true },
];

export function MemberTable({ members, caption }: { readonly members: readonly GraphMember[]; readonly caption: string }) {
  const captionId = useId();
  const [sort, setSort] = useState<{ column: Column; direction: Direction }>({ column: 'confidence', direction: 'descending' });

  const sorted = [...members].sort((a, b) => {
    const x = a[sort.column];
    const y = b[sort.column];
    const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return sort.direction === 'ascending' ? order : -order;
  });

  const onSort = (column: Column, numeric: boolean) =>
    setSort((current) =>
      current.column === column
        ? { column, direction: current.direction === 'ascending' ? 'descending' : 'ascending' }
        : // Numbers start with the largest, text from A.
          { column, direction: numeric ? 'descending' : 'ascending' },
    );

  return (
    <TableWrap captionId={captionId}>
      <table class="members">
        <caption id={captionId}>{caption}</caption>
        <thead>
          <tr>
            {COLUMNS.map(({ key, label, numeric }) => (
              <th key={key} scope="col" class={numeric ? 'num' : undefined} aria-sort={sort.column === key ? sort.direction : undefined}>
                <button type="button" class="sort" onClick={() => onSort(key, numeric)}>
                  {label}
                  <span aria-hidden="true">{sort.column === key ? (sort.direction === 'ascending' ? ' ▲' : ' ▼') : ''}</span>
                </button>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {sorted.map((member) => (
            // The whole row opens the verdict for a pointer; keyboard users have the link.
            <tr key={member.upi} class="clickable" onClick={(event) => openUnlessControl(event, member.upi)}>
              <th scope="row" class="vpa">
                <Link href={screenPath(member.upi)}>{member.upi}</Link>
              </th>
              <td class="num">{formatConfidence(member.confidence)}</td>
              <td>{member.risk_category}</td>
              <td>
                <Time iso={member.first_seen} day />
              </td>
              <td>
                <Time iso={member.last_seen} day />
              </td>
              <td class="num">{formatNumber(member.evidence_count)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

function openUnlessControl(event: MouseEvent, upi: string): void {
  if (event.target instanceof Element && event.target.closest('a, button') !== null) return;
  navigate(screenPath(upi));
}
