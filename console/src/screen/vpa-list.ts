/**
 * The VPAs of a pasted list or a CSV file, ready for batches: checked
 * against the service's grammar (so invalid ones are reported, not sent),
 * lower-cased and each kept once.
 */
import { describeInvalidVpa, normalizeVpa } from '../../../src/vpa/vpa.js';

/** The most VPAs screened at once from the console. */
export const MAX_LIST_VPAS = 10_000;

export interface InvalidEntry {
  /** 1-based line of the text or row of the file. */
  readonly line: number;
  readonly entry: string;
  readonly reason: string;
}

export type VpaList =
  | { readonly ok: true; readonly vpas: readonly string[]; readonly invalid: readonly InvalidEntry[]; readonly duplicates: number; readonly skippedHeader: boolean }
  | { readonly ok: false; readonly message: string };

interface Entry {
  readonly line: number;
  readonly text: string;
}

/** A pasted list: one VPA per line, or several separated by commas, semicolons or tabs. */
export function parsePastedList(text: string): VpaList {
  const entries: Entry[] = [];
  text.split(/\r\n|\r|\n/).forEach((row, index) => {
    for (const part of row.split(/[,;\t]/)) {
      const entry = part.trim();
      if (entry !== '') entries.push({ line: index + 1, text: entry });
    }
  });
  return checkEntries(entries, false);
}

/**
 * A CSV file: the column named `upi` or `vpa` (a header row naming it is
 * skipped), else the first column, skipping a first row that holds no VPA.
 */
export function parseCsvList(text: string): VpaList {
  const rows = parseCsv(text);
  const header = rows[0];
  if (header === undefined) return checkEntries([], false);
  const named = header.findIndex((cell) => /^(upi|vpa)$/i.test(cell.trim()));
  const column = named >= 0 ? named : 0;
  const firstCell = (header[column] ?? '').trim();
  const skipHeader = named >= 0 || (firstCell !== '' && !firstCell.includes('@'));
  const entries: Entry[] = [];
  rows.forEach((row, index) => {
    if (index === 0 && skipHeader) return;
    const cell = (row[column] ?? '').trim();
    if (cell !== '') entries.push({ line: index + 1, text: cell });
  });
  return checkEntries(entries, skipHeader);
}

function checkEntries(entries: readonly Entry[], skippedHeader: boolean): VpaList {
  if (entries.length > MAX_LIST_VPAS) {
    return {
      ok: false,
      message: `The list holds ${entries.length.toLocaleString('en-US')} entries; at most ${MAX_LIST_VPAS.toLocaleString('en-US')} can be screened at once. Split it into smaller lists.`,
    };
  }
  const seen = new Set<string>();
  const vpas: string[] = [];
  const invalid: InvalidEntry[] = [];
  let duplicates = 0;
  for (const { line, text } of entries) {
    const reason = describeInvalidVpa(text);
    if (reason !== null) {
      invalid.push({ line, entry: text, reason });
      continue;
    }
    const vpa = normalizeVpa(text);
    if (seen.has(vpa)) {
      duplicates++;
      continue;
    }
    seen.add(vpa);
    vpas.push(vpa);
  }
  return { ok: true, vpas, invalid, duplicates, skippedHeader };
}

/** RFC 4180 rows: quoted fields may hold commas, doubled quotes and line breaks; a leading BOM is dropped. */
export function parseCsv(text: string): string[][] {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (quoted) {
      if (c !== '"') field += c;
      else if (source[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && source[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}
