/** A data table: caption, a header row of column names (numbers right-aligned), the body rows; scrolls sideways when narrow. */
import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import { TableWrap } from './table-wrap.js';

export type Column = string | { readonly label: string; readonly numeric: true };

export interface TableProps {
  readonly caption: ComponentChildren;
  readonly columns: readonly Column[];
  readonly class?: string;
  readonly children: ComponentChildren;
}

export function Table({ caption, columns, class: className, children }: TableProps) {
  const captionId = useId();
  return (
    <TableWrap captionId={captionId}>
      <table class={className}>
        <caption id={captionId}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) =>
              typeof column === 'string' ? (
                <th key={column} scope="col">
                  {column}
                </th>
              ) : (
                <th key={column.label} scope="col" class="num">
                  {column.label}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </TableWrap>
  );
}

/** A numeric column. */
export function numeric(label: string): Column {
  return { label, numeric: true };
}
