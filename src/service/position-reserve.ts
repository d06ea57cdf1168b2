import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { PositionStateError } from '../common/errors.js';
import { oneFieldJson, readOneFieldJson } from '../common/one-field-json.js';

/**
 * The positions of `X-Data-Version` (`<snapshot id>+<position>`, delta-data.ts)
 * for one data directory, never handed out twice: across merges, compactions,
 * restarts and crashes, so that a version read from a screening record names
 * one state for ever.
 *
 * Positions are reserved in blocks, written ahead (atomically and fsynced)
 * to `state/data-version-positions.json` before any of them is served, so a
 * merge writes the file once per BLOCK positions; a process that ends
 * leaves the rest of its block unused, and the next one starts past it.
 */
export class PositionReserve {
  readonly #path: string;
  /** The next position to hand out, and the end of the block reserved on disk. */
  #next: number;
  #reserved: number;
  /** The write of the next block, shared by the callers that wait for it. */
  #reserving: Promise<void> | null = null;

  private constructor(path: string, from: number) {
    this.#path = path;
    this.#next = from;
    this.#reserved = from;
  }

  /** Positions are reserved this many at a time. */
  static readonly BLOCK = 1000;

  /**
   * Open the data directory's record. A directory without one starts at 1
   * when nothing was served from it yet (`hasServed` false: it holds no
   * snapshot, and no record of one served), and
   * otherwise past every position served before the record was lost or
   * written (releases before it counted from 1 for each snapshot): at the
   * current time in milliseconds, which the positions handed out never
   * outrun, a block per start and one per change served.
   */
  static async open(dir: DataDir, hasServed: boolean, now = Date.now()): Promise<PositionReserve> {
    let text: string;
    try {
      text = await readFile(dir.positions, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new PositionStateError(`cannot read ${dir.positions}: ${(error as Error).message}`, { cause: error });
      }
      return new PositionReserve(dir.positions, hasServed ? now + 1 : 1);
    }
    return new PositionReserve(dir.positions, parseReserved(text, dir.positions) + 1);
  }

  /** Hand out nothing at or below `position` from now on (it was handed out before, by the record of versions served). */
  skipPast(position: number): void {
    if (this.#next <= position) this.#next = position + 1;
  }

  /** A position never handed out before in this data directory, once it is reserved on disk. */
  async next(): Promise<number> {
    while (this.#next >= this.#reserved) {
      this.#reserving ??= this.#reserve().finally(() => (this.#reserving = null));
      await this.#reserving;
    }
    return this.#next++;
  }

  async #reserve(): Promise<void> {
    const end = this.#next + PositionReserve.BLOCK;
    await writeFileAtomic(this.#path, oneFieldJson('reserved', end - 1));
    this.#reserved = end;
  }
}

/** The last position reserved, from the file's text; PositionStateError if it is not what `#reserve` writes. */
function parseReserved(text: string, path: string): number {
  const record = readOneFieldJson(text, 'reserved');
  if (!record.ok && record.reason === 'not JSON') {
    throw new PositionStateError(`${path} is not JSON: it records the data version positions handed out, so that none is served twice; restore it, or remove it to start past the current time`, {
      cause: record.cause,
    });
  }
  if (!record.ok || typeof record.value !== 'number' || !Number.isSafeInteger(record.value) || record.value < 0) {
    throw new PositionStateError(`${path} must hold {"reserved": <a whole number>}, the last data version position reserved`);
  }
  return record.value;
}
