import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { MAX_LINE_LENGTH, parseEvidenceLine, type EvidenceRecord } from './record.js';

/** The longest unfinished line held while reading: the longest allowed, with room for blanks around it. */
const HELD_LINE_LENGTH = 4 * MAX_LINE_LENGTH;

/** How many bad lines of one input are listed; the rest are only counted. */
export const MAX_REPORTED_ERRORS = 50;

export interface LineError {
  readonly file: string;
  readonly line: number;
  readonly reason: string;
}

export interface CheckedLine {
  /** 1-based line number in the input. */
  readonly number: number;
  /** The line, trimmed. */
  readonly text: string;
  readonly record: EvidenceRecord;
}

/**
 * The evidence lines of an NDJSON input, validated against the ingestion
 * contract, as one input is validated wherever it is stored (a data
 * directory, the store's log). Lines end at `\n`, `\r\n` or a lone `\r`;
 * blank lines are skipped. `refuse` adds a check of the caller's own (a
 * reason, or null). Valid lines are yielded, in arrays of those each chunk
 * of the input completes (an array and a promise a chunk, not a line: at
 * millions of lines the per-line promises of an async iterator were most
 * of the time spent here). The tally counts valid and invalid lines and
 * keeps the first MAX_REPORTED_ERRORS reasons, naming the input `source`.
 */
export class LineCheck {
  validLines = 0;
  invalidLines = 0;
  readonly errors: LineError[] = [];
  readonly #source: string;
  readonly #refuse: (record: EvidenceRecord) => string | null;
  #number = 0;

  constructor(source: string, refuse: (record: EvidenceRecord) => string | null = () => null) {
    this.#source = source;
    this.#refuse = refuse;
  }

  async *lines(input: Readable): AsyncGenerator<CheckedLine[]> {
    const decoder = new StringDecoder('utf8');
    let rest = '';
    // A line past the longest allowed is refused without being held whole: the rest of it is dropped as it comes.
    let overlong = false;
    for await (const chunk of input) {
      const text = rest + (typeof chunk === 'string' ? chunk : decoder.write(chunk as Buffer));
      const checked: CheckedLine[] = [];
      let start = 0;
      for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
        this.#split(overlong ? null : text.slice(start, end), checked);
        overlong = false;
        start = end + 1;
      }
      rest = text.slice(start);
      if (rest.length > HELD_LINE_LENGTH) {
        overlong = true;
        rest = '';
      }
      if (checked.length > 0) yield checked;
    }
    rest += decoder.end();
    const last: CheckedLine[] = [];
    if (overlong || rest.length > 0) this.#split(overlong ? null : rest, last);
    if (last.length > 0) yield last;
  }

  /** The text up to a `\n`, which is one line unless a lone `\r` ends one inside it (the `\r` of `\r\n` ends none). */
  #split(text: string | null, checked: CheckedLine[]): void {
    if (text === null || !text.includes('\r')) {
      this.#line(text, checked);
      return;
    }
    const parts = text.split('\r');
    if (parts.at(-1) === '') parts.pop();
    for (const part of parts) this.#line(part, checked);
  }

  /** Check one line (null: one too long to hold), adding it to `checked` when valid. */
  #line(raw: string | null, checked: CheckedLine[]): void {
    const number = ++this.#number;
    if (raw === null) {
      this.#reject(number, `line longer than ${MAX_LINE_LENGTH} characters`);
      return;
    }
    const text = raw.trim();
    if (text.length === 0) return;
    const parsed = parseEvidenceLine(text);
    const reason = parsed.ok ? this.#refuse(parsed.record) : parsed.reason;
    if (parsed.ok && reason === null) {
      this.validLines++;
      checked.push({ number, text, record: parsed.record });
    } else {
      this.#reject(number, reason!);
    }
  }

  #reject(line: number, reason: string): void {
    this.invalidLines++;
    if (this.errors.length < MAX_REPORTED_ERRORS) this.errors.push({ file: this.#source, line, reason });
  }
}
