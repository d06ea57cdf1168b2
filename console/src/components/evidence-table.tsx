/**
 * A VPA's stored evidence items (retracted ones are not listed): id, url as
 * a safe link, categories, when captured and whether it counts now. With
 * `chosen`, each row has a checkbox to choose it (the evidence an upheld
 * dispute retracts instead of clearing the VPA).
 */
import type { EvidenceItem } from '../api/types.js';
import { ExternalLink } from './external-link.js';
import { Table } from './table.js';
import { Time } from './time.js';

export interface EvidenceTableProps {
  readonly items: readonly EvidenceItem[];
  readonly caption: string;
  /** The ids chosen, and how a checkbox changes them; absent, the table has no checkboxes. */
  readonly chosen?: ReadonlySet<string>;
  readonly onChoose?: (evidenceId: string, chosen: boolean) => void;
}

export function EvidenceTable({ items, caption, chosen, onChoose }: EvidenceTableProps) {
  const choosing = chosen !== undefined && onChoose !== undefined;
  const columns = ['Evidence id', 'URL', 'Source', 'Risk category', 'Captured', 'Counts'];
  return (
    <Table caption={caption} class="evidence" columns={choosing ? ['Retract', ...columns] : columns}>
      {items.map((item) => (
        <tr key={item.evidence_id} class={item.counts ? undefined : 'set-aside'}>
          {choosing ? (
            <td>
              <input
                type="checkbox"
                aria-label={`Retract ${item.evidence_id}`}
                checked={chosen.has(item.evidence_id)}
                onChange={(event) => onChoose(item.evidence_id, event.currentTarget.checked)}
              />
            </td>
          ) : null}
          <th scope="row">
            <code>{item.evidence_id}</code>
          </th>
          <td class="url">
            <ExternalLink url={item.url} />
          </td>
          <td>{item.source_category}</td>
          <td>{item.risk_category}</td>
          <td>
            <Time iso={item.captured_at} />
          </td>
          <td>{item.counts ? 'yes' : 'no (cleared or expired)'}</td>
        </tr>
      ))}
    </Table>
  );
}
