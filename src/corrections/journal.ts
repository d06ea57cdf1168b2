import { isUtf8 } from 'node:buffer';
import { mkdir, open, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { syncDirectory } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { CorrectionJournalError } from '../common/errors.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { waitForOwnerLock } from '../common/owner-lock.js';
import { inTurn } from '../common/turns.js';
import { readCorrectionRecord, type CorrectionRecord } from './records.js';

export const CORRECTIONS_FILE = 'corrections.ndjson';
const LOCK_SUFFIX = '.lock';
/** How long an append waits for another process's, ms: appends take a write and an fsync, so only a stuck process holds the lock this long. */
const LOCK_WAIT_MS = 10_000;
const NEWLINE = 0x0a;

export function correctionJournalPath(dir: DataDir): string {
  return join(dir.state, CORRECTIONS_FILE);
}

/** A record read from the journal, with where it stands (for messages). */
export interface JournalEntry {
  readonly record: CorrectionRecord;
  readonly line: number;
}

/**
 * The corrections journal: append-only NDJSON, one complete record a line
 * (records.ts), fsynced before an append resolves. Several processes may
 * append (a server and `upi-risk retract`): an append takes the lock file
 * beside the journal (common/owner-lock.ts), reads what others appended
 * first, lets the caller decide its record against all of it, and writes
 * it whole. Readers take complete lines only, so a line another process is
 * writing is read once it is whole.
 *
 * A last line without its newline is a write a crash cut short: it is
 * skipped with a warning, and cut off by the next append (under the lock,
 * where no live writer can be writing it). Any other line that is not a
 * record is refused with ERR_CORRECTION_JOURNAL: the journal is the only
 * record of what it holds.
 */
export class CorrectionJournal {
  readonly #path: string;
  readonly #logger: Logger;
  /** Bytes read: the end of the last complete line. */
  #offset = 0;
  /** Lines read. */
  #lines = 0;
  /** The torn tail already reported, so a poll does not report it again. */
  #reportedTail = -1;

  private constructor(path: string, logger: Logger) {
    this.#path = path;
    this.#logger = logger;
  }

  /** Open the journal (absent: empty) and read every record in it. */
  static async open(path: string, logger: Logger = silentLogger): Promise<{ journal: CorrectionJournal; entries: JournalEntry[] }> {
    const journal = new CorrectionJournal(path, logger);
    const entries = await journal.readNew();
    return { journal, entries };
  }

  get path(): string {
    return this.#path;
  }

  /** Complete records appended since the last read, by this process or another. */
  readNew(): Promise<JournalEntry[]> {
    return inTurn(this.#path, async () => {
      let size: number;
      try {
        size = (await stat(this.#path)).size;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw this.#unusable('cannot read', error);
      }
      if (size === this.#offset) return [];
      const handle = await open(this.#path, 'r').catch((error: unknown) => {
        throw this.#unusable('cannot read', error);
      });
      try {
        return await this.#readFrom(handle);
      } finally {
        await handle.close();
      }
    });
  }

  /**
   * Append the record `decide` makes, under the journal's lock. First
   * `absorb` is handed what other processes appended since the last read
   * (it is not handed out again), then `decide` returns the record to write,
   * decided against all of it, or null to write none; when either throws,
   * nothing is written. Resolves once the record is on disk.
   */
  append<T>(absorb: (newer: readonly JournalEntry[]) => void, decide: () => { record: CorrectionRecord | null; result: T }): Promise<{ written: CorrectionRecord | null; result: T }> {
    return inTurn(this.#path, async () => {
      await mkdir(dirname(this.#path), { recursive: true });
      const release = await this.#lock();
      try {
        const created = await stat(this.#path).then(
          () => false,
          () => true,
        );
        const handle = await open(this.#path, 'a+', 0o644).catch((error: unknown) => {
          throw this.#unusable('cannot open', error);
        });
        try {
          absorb(await this.#readFrom(handle));
          const { record, result } = decide();
          if (record !== null) await this.#write(handle, record);
          if (created) await syncDirectory(dirname(this.#path));
          return { written: record, result };
        } finally {
          await handle.close();
        }
      } finally {
        await release();
      }
    });
  }

  /** Read the complete lines from #offset to the end. */
  async #readFrom(handle: FileHandle): Promise<JournalEntry[]> {
    const size = (await handle.stat()).size;
    if (size < this.#offset) throw new CorrectionJournalError(`${this.#path} is shorter than what was read of it: it was truncated or replaced`);
    const length = size - this.#offset;
    if (length === 0) return [];
    const bytes = Buffer.allocUnsafe(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await handle.read(bytes, read, length - read, this.#offset + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    const entries: JournalEntry[] = [];
    let start = 0;
    let line = this.#lines;
    for (let end = bytes.indexOf(NEWLINE, 0); end >= 0 && end < read; end = bytes.indexOf(NEWLINE, start)) {
      line++;
      const raw = bytes.subarray(start, end);
      const text = raw.toString('utf8');
      start = end + 1;
      // An empty line is left alone: an editor's habit, never a record.
      if (text.trim() === '') continue;
      const at = line;
      const fail = (why: string) => new CorrectionJournalError(`${this.#path}, line ${at}: ${why}`);
      // Bytes that are not UTF-8 would be read as U+FFFD: an evidence id damaged so would name another.
      if (!isUtf8(raw)) throw fail('not UTF-8');
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw fail('not JSON');
      }
      entries.push({ record: readCorrectionRecord(value, fail), line });
    }
    // Only once every complete line is a record: a refused one is refused again at the next read.
    this.#offset += start;
    this.#lines = line;
    if (start < read && this.#reportedTail !== this.#offset) {
      this.#reportedTail = this.#offset;
      this.#logger.warn(
        { journal: this.#path, bytes: read - start, line: this.#lines + 1 },
        'the last line of the corrections journal is incomplete (a write cut short by a crash, or one in progress); it is skipped',
      );
    }
    return entries;
  }

  /** Write one record whole at the end, cutting off a torn last line first, and fsync. */
  async #write(handle: FileHandle, record: CorrectionRecord): Promise<void> {
    // A line read back is checked: one that would not pass would stop every reader of the journal.
    readCorrectionRecord(record, (why) => new RangeError(`not a correction the journal takes: ${why}`));
    const size = (await handle.stat()).size;
    if (size > this.#offset) {
      // Under the lock no live writer is writing: what follows the last complete line is a crash's torn write.
      this.#logger.warn({ journal: this.#path, bytes: size - this.#offset }, 'cutting off the torn last line of the corrections journal before appending');
      await handle.truncate(this.#offset);
    }
    const bytes = Buffer.from(`${JSON.stringify(record)}\n`, 'utf8');
    let written = 0;
    while (written < bytes.length) {
      // Opened for appending: each write goes to the end, after the one before.
      const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
      written += bytesWritten;
    }
    await handle.sync();
    this.#offset += bytes.length;
    this.#lines++;
  }

  /** Take the lock file beside the journal, waiting while a live process holds it. */
  #lock(): Promise<() => Promise<void>> {
    return waitForOwnerLock(`${this.#path}${LOCK_SUFFIX}`, LOCK_WAIT_MS, "the corrections journal's lock", (message, cause) => new CorrectionJournalError(message, { cause }));
  }

  #unusable(what: string, cause: unknown): CorrectionJournalError {
    return new CorrectionJournalError(`${what} the corrections journal ${this.#path}: ${(cause as Error).message}`, { cause });
  }
}
