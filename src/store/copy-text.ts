/**
 * The rows of `COPY ... TO STDOUT` in its text format, read as they stream
 * in: a row a line ending at `\n`, its fields separated by tabs, and in a
 * field a backslash, a tab, a newline, a carriage return and the control
 * characters \b \f \v written as backslash escapes (PostgreSQL's COPY
 * documentation, "Text Format"). A NULL (`\N`) is not expected: the columns
 * read this way are NOT NULL, and it reads as the letter N.
 *
 * Each piece is decoded once, whole lines at a time, and split with the
 * string built-ins: at millions of rows, a query's result (a message, an
 * object and a decoded string per field of each row) costs more than the
 * rows' checks (bench/MEASUREMENTS.md, "Fleet start: the download and the
 * mirror").
 */
export class CopyTextRows {
  readonly #maxRowBytes: number;
  /** The bytes after the last newline so far: the start of a row. */
  #rest: Buffer | null = null;

  /**
   * `maxRowBytes` bounds what is kept of a row that a piece cuts: one cut
   * across pieces that grows past it throws `RowTooLongError` rather than
   * being gathered whole in memory (a row within one piece is no larger
   * than the piece).
   */
  constructor(maxRowBytes = Number.POSITIVE_INFINITY) {
    this.#maxRowBytes = maxRowBytes;
  }

  /** The rows the pieces pushed so far complete, each as its fields. */
  push(chunk: Buffer): string[][] {
    if (chunk.length === 0) return [];
    const last = chunk.lastIndexOf(NEWLINE);
    if (last < 0) {
      if ((this.#rest?.length ?? 0) + chunk.length > this.#maxRowBytes) throw new RowTooLongError(this.#maxRowBytes);
      this.#rest = this.#rest === null ? Buffer.from(chunk) : Buffer.concat([this.#rest, chunk]);
      return [];
    }
    let text: string;
    if (this.#rest === null) {
      text = chunk.toString('utf8', 0, last);
    } else {
      // Only the row cut by the piece before is copied: the rest of the piece is decoded where it is.
      const first = chunk.indexOf(NEWLINE);
      text = Buffer.concat([this.#rest, chunk.subarray(0, first)]).toString('utf8');
      if (first < last) text += `\n${chunk.toString('utf8', first + 1, last)}`;
    }
    if (chunk.length - last - 1 > this.#maxRowBytes) throw new RowTooLongError(this.#maxRowBytes);
    this.#rest = last + 1 < chunk.length ? Buffer.from(chunk.subarray(last + 1)) : null;
    const lines = text.split('\n');
    const rows = new Array<string[]>(lines.length);
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const fields = line.split('\t');
      rows[i] = line.includes('\\') ? fields.map(unescapeField) : fields;
    }
    return rows;
  }

  /** Whether the output read so far ends with a whole row. */
  get complete(): boolean {
    return this.#rest === null;
  }
}

/** A row of the COPY's output longer than the reader's bound. */
export class RowTooLongError extends Error {
  constructor(readonly maxRowBytes: number) {
    super(`a row is longer than ${maxRowBytes} bytes`);
    this.name = 'RowTooLongError';
  }
}

const NEWLINE = 0x0a;

const ESCAPES: Readonly<Record<string, string>> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/** A field with its backslash escapes undone; a backslash before any other character stands for that character. */
function unescapeField(field: string): string {
  if (!field.includes('\\')) return field;
  return field.replace(/\\(.)/gs, (_, c: string) => ESCAPES[c] ?? c);
}
