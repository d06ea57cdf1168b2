import { isUtf8 } from 'node:buffer';
import { mkdir, open, readFile, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { syncDirectory } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { DisputeStateError } from '../common/errors.js';
import { isIdempotencyKey, readDispute, readReport, type Dispute, type OwnedRecord, type Report } from './dispute-records.js';
import type { DisputeStore, RecordFilter, RecordPage } from './dispute-store.js';
import { RecordShelf } from './record-shelf.js';

export function disputeJournalPath(dir: DataDir): string {
  return join(dir.state, 'disputes.ndjson');
}

/**
 * A line of the journal: a dispute or a report as it is from then on (made,
 * or decided). The last line of an id is its record.
 */
type JournalLine = { op: 'dispute'; d: Dispute } | { op: 'report'; r: Report; k?: string };

/**
 * The disputes and reports of a data directory: `state/disputes.ndjson`,
 * replayed at start. A change is appended and fsynced, one at a time, and
 * only then applied in memory and acknowledged. A last line without its
 * newline is a write a crash cut short (never acknowledged): it is cut off
 * the file at start, so the next append does not follow it. Any other line
 * that is not a record of this service is refused (ERR_DISPUTE_STATE). The
 * journal is never rewritten: most of its lines are records still current.
 */
export class FileDisputeStore implements DisputeStore {
  readonly #path: string;
  readonly #handle: FileHandle;
  readonly #disputes = new RecordShelf<Dispute>();
  readonly #reports = new RecordShelf<Report>();
  /** The open dispute of each owner and VPA. */
  readonly #open = new Map<string, string>();
  /** The report of each owner and Idempotency-Key. */
  readonly #idempotent = new Map<string, string>();
  /** Bytes of whole lines in the file. */
  #size: number;
  /** Appends, one after another. */
  #writes: Promise<unknown> = Promise.resolve();
  /** Changes of each record in flight, one after another. */
  readonly #held = new Map<string, Promise<unknown>>();
  /** An append that failed and could not be cut off again: nothing more is written. */
  #broken: Error | null = null;

  private constructor(path: string, handle: FileHandle, size: number) {
    this.#path = path;
    this.#handle = handle;
    this.#size = size;
  }

  static async open(path: string): Promise<FileDisputeStore> {
    let bytes: Buffer | null = null;
    try {
      bytes = await readFile(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new DisputeStateError(`cannot read the disputes journal ${path}: ${(error as Error).message}`, { cause: error });
    }
    const whole = bytes === null ? 0 : bytes.lastIndexOf(0x0a) + 1;
    let handle: FileHandle;
    try {
      await mkdir(dirname(path), { recursive: true });
      handle = await open(path, 'a', 0o600);
      if (bytes === null) await syncDirectory(dirname(path));
      else if (whole < bytes.length) {
        await handle.truncate(whole);
        await handle.sync();
      }
    } catch (error) {
      throw new DisputeStateError(`cannot open the disputes journal ${path}: ${(error as Error).message}`, { cause: error });
    }
    const store = new FileDisputeStore(path, handle, whole);
    // Split as bytes: a line that is not UTF-8 is refused, not read with U+FFFD in it.
    const lines: Buffer[] = [];
    if (bytes !== null) {
      let start = 0;
      for (let end = bytes.indexOf(0x0a); end >= 0 && end < whole; end = bytes.indexOf(0x0a, start)) {
        lines.push(bytes.subarray(start, end));
        start = end + 1;
      }
    }
    try {
      for (const [i, raw] of lines.entries()) {
        const fail = (why: string) => new DisputeStateError(`disputes journal ${path}, line ${i + 1}: ${why}`);
        if (!isUtf8(raw)) throw fail('not UTF-8');
        store.#apply(parseLine(raw.toString('utf8'), fail), fail);
      }
    } catch (error) {
      await handle.close();
      throw error;
    }
    return store;
  }

  openDispute(dispute: Dispute): Promise<Dispute> {
    return this.#serial(async () => {
      const open = this.#open.get(openKey(dispute));
      if (open !== undefined) return this.#disputes.get(open)!;
      await this.#write({ op: 'dispute', d: dispute });
      return dispute;
    });
  }

  dispute(id: string): Promise<Dispute | null> {
    return Promise.resolve(this.#disputes.get(id));
  }

  disputes(filter: RecordFilter, cursor: string | null, limit: number): Promise<RecordPage<Dispute>> {
    return Promise.resolve(this.#disputes.page(filter, cursor, limit));
  }

  changeDispute(id: string, change: (current: Dispute) => Promise<Dispute>): Promise<Dispute | null> {
    return this.#change(this.#disputes, id, change, (d) => ({ op: 'dispute', d }));
  }

  addReport(report: Report, idempotencyKey: string | null = null): Promise<Report> {
    return this.#serial(async () => {
      const stored = idempotencyKey === null ? undefined : this.#idempotent.get(idempotentKey(report.owner, idempotencyKey));
      if (stored !== undefined) return this.#reports.get(stored)!;
      await this.#write(idempotencyKey === null ? { op: 'report', r: report } : { op: 'report', r: report, k: idempotencyKey });
      return report;
    });
  }

  reportByIdempotencyKey(owner: string, idempotencyKey: string): Promise<Report | null> {
    const stored = this.#idempotent.get(idempotentKey(owner, idempotencyKey));
    return Promise.resolve(stored === undefined ? null : this.#reports.get(stored));
  }

  report(id: string): Promise<Report | null> {
    return Promise.resolve(this.#reports.get(id));
  }

  reports(filter: RecordFilter, cursor: string | null, limit: number): Promise<RecordPage<Report>> {
    return Promise.resolve(this.#reports.page(filter, cursor, limit));
  }

  changeReport(id: string, change: (current: Report) => Promise<Report>): Promise<Report | null> {
    return this.#change(this.#reports, id, change, (r) => ({ op: 'report', r }));
  }

  async close(): Promise<void> {
    await this.#writes.catch(() => {});
    await Promise.allSettled(this.#held.values());
    await this.#handle.close();
  }

  /** Run `change` on the record with every other change of it waiting, then store what it gives. */
  async #change<R extends OwnedRecord>(shelf: RecordShelf<R>, id: string, change: (current: R) => Promise<R>, line: (record: R) => JournalLine): Promise<R | null> {
    const before = this.#held.get(id) ?? Promise.resolve();
    const run = before.then(async () => {
      const current = shelf.get(id);
      if (current === null) return null;
      const next = await change(current);
      if (next.id !== id || next.owner !== current.owner) throw new Error(`a change of ${id} gave another record`);
      await this.#serial(() => this.#write(line(next)));
      return next;
    });
    const settled = run.catch(() => {});
    this.#held.set(id, settled);
    void settled.then(() => {
      if (this.#held.get(id) === settled) this.#held.delete(id);
    });
    return run;
  }

  /** Run `work` after every append asked for before it. */
  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#writes.then(work);
    this.#writes = run.catch(() => {});
    return run;
  }

  /** Append a line and fsync it, then apply it. A failed append is cut off again, or nothing more is written. */
  async #write(line: JournalLine): Promise<void> {
    if (this.#broken !== null) throw new DisputeStateError(`the disputes journal ${this.#path} is not written to after a failed append: ${this.#broken.message}`);
    const bytes = Buffer.from(`${JSON.stringify(line)}\n`);
    try {
      let written = 0;
      while (written < bytes.length) written += (await this.#handle.write(bytes, written, bytes.length - written)).bytesWritten;
      await this.#handle.sync();
    } catch (error) {
      await this.#handle.truncate(this.#size).catch((cut: Error) => {
        this.#broken = cut;
      });
      throw new DisputeStateError(`cannot append to the disputes journal ${this.#path}: ${(error as Error).message}`, { cause: error });
    }
    this.#size += bytes.length;
    this.#apply(line, (why) => new DisputeStateError(why));
  }

  #apply(line: JournalLine, fail: (why: string) => Error): void {
    if (line.op === 'dispute') {
      const d = line.d;
      keepOwner(this.#disputes.get(d.id), d, fail);
      this.#disputes.put(d);
      const key = openKey(d);
      if (d.status === 'OPEN') this.#open.set(key, d.id);
      else if (this.#open.get(key) === d.id) this.#open.delete(key);
    } else {
      const before = this.#reports.get(line.r.id);
      keepOwner(before, line.r, fail);
      if (line.k !== undefined) {
        // A report's Idempotency-Key comes with its first line only.
        if (before !== null) throw fail(`${line.r.id} is given an Idempotency-Key after it was stored`);
        const key = idempotentKey(line.r.owner, line.k);
        const stored = this.#idempotent.get(key);
        if (stored !== undefined && stored !== line.r.id) throw fail(`${line.r.id} repeats the Idempotency-Key of ${stored}`);
        this.#idempotent.set(key, line.r.id);
      }
      this.#reports.put(line.r);
    }
  }
}

function idempotentKey(owner: string, idempotencyKey: string): string {
  return `${owner}\n${idempotencyKey}`;
}

function openKey(d: Dispute): string {
  return `${d.owner}\n${d.upi}`;
}

/** A record's later line changes its state, never whose it is or what it names. */
function keepOwner(before: Dispute | Report | null, after: Dispute | Report, fail: (why: string) => Error): void {
  if (before !== null && (before.owner !== after.owner || before.upi !== after.upi || before.created_at !== after.created_at)) {
    throw fail(`${after.id} changes its owner, VPA or creation time`);
  }
}

function parseLine(text: string, fail: (why: string) => Error): JournalLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw fail('not JSON');
  }
  const line = value as Record<string, unknown> | null;
  if (line?.op === 'dispute') return { op: 'dispute', d: readDispute(line.d, fail) };
  if (line?.op === 'report') {
    const r = readReport(line.r, fail);
    if (line.k === undefined) return { op: 'report', r };
    if (typeof line.k !== 'string' || !isIdempotencyKey(line.k)) throw fail(`${r.id} has an Idempotency-Key that is not one`);
    return { op: 'report', r, k: line.k };
  }
  throw fail(`not a dispute or report line (op ${JSON.stringify(line?.op)})`);
}
