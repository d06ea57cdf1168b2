import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { parseEvidenceLine, type EvidenceRecord } from './record.js';

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
 * directory, the store's log). Blank lines are skipped. `refuse` adds a
 * check of the caller's own (a reason, or null). Valid lines are yielded;
 * the tally counts valid and invalid ones and keeps the first
 * MAX_REPORTED_ERRORS reasons, naming the input `source`.
 */
export class LineCheck {
  validLines = 0;
  invalidLines = 0;
  readonly errors: LineError[] = [];
  readonly #source: string;
  readonly #refuse: (record: EvidenceRecord) => string | null;

  constructor(source: string, refuse: (record: EvidenceRecord) => string | null = () => null) {
    this.#source = source;
    this.#refuse = refuse;
  }

  async *lines(input: Readable): AsyncGenerator<CheckedLine> {
    let number = 0;
    for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
      number++;
      const text = (raw as string).trim();
      if (text.length === 0) continue;
      const parsed = parseEvidenceLine(text);
      const reason = parsed.ok ? this.#refuse(parsed.record) : parsed.reason;
      if (parsed.ok && reason === null) {
        this.validLines++;
        yield { number, text, record: parsed.record };
      } else {
        this.#reject(number, reason!);
      }
    }
  }

  #reject(line: number, reason: string): void {
    this.invalidLines++;
    if (this.errors.length < MAX_REPORTED_ERRORS) this.errors.push({ file: this.#source, line, reason });
  }
}
