import { mkdir, open, readFile, truncate } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { AdminStateError } from '../common/errors.js';
import { JournaledWatchStore, type JournalLine } from './journaled-watch-store.js';

/** Rewrite the journal once it is this many times the size of a fresh one (and at least `minCompactBytes`). */
const COMPACT_FACTOR = 4;
const MIN_COMPACT_BYTES = 64 * 1024 * 1024;

export function watchJournalPath(dir: DataDir): string {
  return join(dir.root, 'watch', 'journal.ndjson');
}

/**
 * Watchlists of a data directory: the journal is `watch/journal.ndjson`,
 * each line applied in memory and appended and fsynced before the change is
 * acknowledged, and replayed at start. Appends made together share one
 * write and one fsync. When the journal has grown well past what it
 * describes, it is rewritten as the few lines that make the present state
 * (temporary file, fsync, rename, fsync of the folder); a rewrite that fails
 * leaves the journal as it was, to be tried again once it has grown as much
 * again.
 *
 * An append that fails (a full disk) is cut off the file again, and the
 * store takes no change after it: the change is live in memory until the
 * restart but on no disk, and a change built on it would be journaled
 * without it (an addition to a watchlist whose creation was lost would stop
 * the next start).
 */
export class FileWatchStore extends JournaledWatchStore {
  readonly #path: string;
  readonly #minCompactBytes: number;
  #bytes = 0;
  #freshBytes = 0;
  #queue: { line: string; done: () => void; failed: (error: Error) => void }[] = [];
  #flushing: Promise<void> | null = null;
  /** The append that failed; no change is taken after it. */
  #failed: AdminStateError | null = null;

  private constructor(path: string, minCompactBytes: number) {
    super();
    this.#path = path;
    this.#minCompactBytes = minCompactBytes;
  }

  /** `minCompactBytes`: the journal is never rewritten below this size. */
  static async open(path: string, minCompactBytes = MIN_COMPACT_BYTES): Promise<FileWatchStore> {
    const store = new FileWatchStore(path, minCompactBytes);
    let text = '';
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new AdminStateError(`cannot read the watchlist journal ${path}: ${(error as Error).message}`, { cause: error });
    }
    const lines = text.split('\n');
    // The piece after the last newline is empty, or a write a crash cut short.
    lines.pop();
    for (const [i, line] of lines.entries()) {
      const fail = (why: string) => new AdminStateError(`watchlist journal ${path}, line ${i + 1}: ${why}`);
      let parsed: JournalLine;
      try {
        parsed = JSON.parse(line) as JournalLine;
      } catch {
        throw fail('not JSON');
      }
      store.apply(parsed, fail);
    }
    store.#bytes = Buffer.byteLength(text);
    store.#freshBytes = store.#bytes;
    return store;
  }

  /** Applied in memory at once, then appended; resolves once it is on disk. */
  protected commit(line: JournalLine): Promise<void> {
    if (this.#failed !== null) return Promise.reject(this.#failed);
    this.apply(line);
    return new Promise((resolve, reject) => {
      this.#queue.push({ line: JSON.stringify(line), done: resolve, failed: reject });
      if (this.#flushing === null) this.#flushing = this.#flush();
    });
  }

  async #flush(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        const text = batch.map((b) => `${b.line}\n`).join('');
        try {
          await mkdir(dirname(this.#path), { recursive: true });
          const handle = await open(this.#path, 'a', 0o600);
          try {
            await handle.write(text);
            await handle.sync();
          } finally {
            await handle.close();
          }
          this.#bytes += Buffer.byteLength(text);
          for (const b of batch) b.done();
        } catch (error) {
          const failure = new AdminStateError(
            `cannot append to the watchlist journal ${this.#path}: ${(error as Error).message}; no watchlist change is taken until the server is restarted`,
            { cause: error },
          );
          // A part of the batch written would be a line cut short in the middle of the journal.
          await truncate(this.#path, this.#bytes).catch(() => {});
          this.#failed = failure;
          for (const b of [...batch, ...this.#queue]) b.failed(failure);
          this.#queue = [];
          return;
        }
        if (this.#bytes > Math.max(this.#minCompactBytes, COMPACT_FACTOR * this.#freshBytes) && this.#queue.length === 0) await this.#compact();
      }
    } finally {
      this.#flushing = null;
    }
  }

  /** Rewrite the journal as the lines that make the present state. */
  async #compact(): Promise<void> {
    const bytes = Buffer.from(
      this.image()
        .map((l) => `${JSON.stringify(l)}\n`)
        .join(''),
    );
    try {
      await writeFileAtomic(this.#path, bytes, 0o600);
    } catch {
      // The journal is whole as it is; tried again once it has grown as much again.
      this.#freshBytes = this.#bytes;
      return;
    }
    this.#bytes = bytes.length;
    this.#freshBytes = this.#bytes;
  }

  async close(): Promise<void> {
    await this.#flushing;
  }
}
