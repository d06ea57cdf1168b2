/** A data table: caption, a header row of column names (numbers right-aligned), the body rows; scrolls sideways when narrow. */
import type { ComponentChildren } from 'preact';

export type Column = string | { readonly label: string; readonly numeric: true };

export interface TableProps {
  readonly caption: ComponentChildren;
  readonly columns: readonly Column[];
  readonly class?: string;
  readonly children: ComponentChildren;
}

export function Table({ caption, columns, class: className, children }: TableProps) {
  return (
    <div class="table-wrap">
      <table class={className}>
        <caption>{caption}</caption>
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
    </div>
  );
}

/** A numeric column. */
export function numeric(label: string): Column {
  return { label, numeric: true };
}
