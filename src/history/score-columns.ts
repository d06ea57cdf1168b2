import { mkdir, open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { readAllAt, writeFileAtomic } from '../common/atomic-file.js';
import { HistoryError } from '../common/errors.js';
import { lowerBound } from '../common/lower-bound.js';

/**
 * The confidence every VPA of the history was served with from each new
 * snapshot on (docs/design.md, "Answers as of a past instant"). A new
 * snapshot scores every VPA again at its own time, so nearly every
 * confidence moves at each compaction while little else does: rather than a
 * record per VPA in the change log, each state that serves a new snapshot
 * writes one column, two bytes a VPA by its number (facts-index.ts), beside
 * the log. A VPA's answer at an instant is its newest record then, with the
 * confidence of the newest column then when that column is the later.
 *
 * One file per column, `DIR/history/scores/<at>.scores`, written whole,
 * synced and renamed into place before the state is served. Layout, little
 * endian:
 *
 *   0   8  magic "UPIRSCOR"
 *   8   4  format version, u32 (1)
 *  12   4  VPAs, u32
 *  16   8  at, epoch ms, f64: when the state began to be served
 *  24   4  CRC-32 of the values
 *  28   4  0
 *  32      the values, u16 each: confidence × 10,000, or 0xffff for none
 */

export const NO_SCORE = 0xffff;
const MAGIC = 'UPIRSCOR';
const FORMAT_VERSION = 1;
const HEADER_LENGTH = 32;
const SUFFIX = '.scores';

export interface ScoreColumn {
  readonly at: number;
  readonly count: number;
  readonly path: string;
  readonly crc: number;
}

export class ScoreColumns {
  readonly #dir: string;
  /** In the order of their times. */
  #columns: ScoreColumn[];
  /** Columns whose values were read whole and matched their CRC. */
  readonly #checked = new Set<string>();

  private constructor(dir: string, columns: ScoreColumn[]) {
    this.#dir = dir;
    this.#columns = columns;
  }

  /**
   * The columns in `dir` (made when missing), headers checked; the columns
   * of states after `servedUntil` were never served, and are removed.
   * HistoryError for a file this service did not write whole.
   */
  static async open(dir: string, servedUntil: number): Promise<ScoreColumns> {
    try {
      await mkdir(dir, { recursive: true });
      const columns: ScoreColumn[] = [];
      for (const name of await readdir(dir)) {
        const path = join(dir, name);
        // A column being written when the process ended: never served.
        if (name.startsWith('.')) {
          await unlink(path);
          continue;
        }
        if (!name.endsWith(SUFFIX)) continue;
        const column = await readHeader(path);
        if (column.at > servedUntil) await unlink(path);
        else columns.push(column);
      }
      columns.sort((a, b) => a.at - b.at);
      return new ScoreColumns(dir, columns);
    } catch (error) {
      if (error instanceof HistoryError) throw error;
      throw new HistoryError(`cannot read the confidence columns in ${dir}: ${(error as Error).message}`, { cause: error });
    }
  }

  get count(): number {
    return this.#columns.length;
  }

  /** The newest column written at or before `at` (epoch ms), or null. */
  at(at: number): ScoreColumn | null {
    const i = lowerBound(this.#columns.length, (k) => this.#columns[k]!.at <= at);
    return i === 0 ? null : this.#columns[i - 1]!;
  }

  /** Write the column of the state served from `at` (after every column written), durably. */
  async write(at: number, values: Uint16Array): Promise<void> {
    const last = this.#columns.at(-1);
    if (last !== undefined && at <= last.at) throw new RangeError(`a column at ${at}, not after the one at ${last.at}`);
    const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    const crc = crc32(bytes);
    const head = Buffer.alloc(HEADER_LENGTH);
    head.write(MAGIC, 0, 'latin1');
    head.writeUInt32LE(FORMAT_VERSION, 8);
    head.writeUInt32LE(values.length, 12);
    head.writeDoubleLE(at, 16);
    head.writeUInt32LE(crc, 24);
    const path = join(this.#dir, `${String(at).padStart(15, '0')}${SUFFIX}`);
    await writeFileAtomic(path, [head, bytes]);
    this.#columns.push({ at, count: values.length, path, crc });
    this.#checked.add(path);
  }

  /** The confidence of VPA `number` in `column` (NO_SCORE: none); the column's values are checked whole at its first read. */
  async valueOf(column: ScoreColumn, number: number): Promise<number> {
    if (number >= column.count) return NO_SCORE;
    if (!this.#checked.has(column.path)) {
      await this.values(column);
      this.#checked.add(column.path);
    }
    const file = await open(column.path, 'r');
    try {
      const bytes = Buffer.alloc(2);
      if (!(await readAllAt(file, bytes, HEADER_LENGTH + 2 * number))) throw new HistoryError(`${column.path} is cut short`);
      return checkedValue(bytes.readUInt16LE(0), column.path);
    } finally {
      await file.close();
    }
  }

  /** Every value of `column`, checked against its CRC. */
  async values(column: ScoreColumn): Promise<Uint16Array> {
    const file = await open(column.path, 'r');
    try {
      const values = new Uint16Array(column.count);
      const bytes = new Uint8Array(values.buffer);
      if (!(await readAllAt(file, bytes, HEADER_LENGTH))) throw new HistoryError(`${column.path} is cut short`);
      if (crc32(bytes) !== column.crc) throw new HistoryError(`${column.path} fails its CRC; the history of answers is not served until it is restored or moved aside`);
      for (const value of values) checkedValue(value, column.path);
      return values;
    } finally {
      await file.close();
    }
  }

  /** Remove the columns of states replaced before `cutoff` (epoch ms): all before it but the newest. Returns how many. */
  async prune(cutoff: number): Promise<number> {
    const before = lowerBound(this.#columns.length, (k) => this.#columns[k]!.at < cutoff);
    const dropped = this.#columns.slice(0, Math.max(0, before - 1));
    for (const column of dropped) {
      await unlink(column.path);
      this.#checked.delete(column.path);
    }
    this.#columns = this.#columns.slice(dropped.length);
    return dropped.length;
  }
}

function checkedValue(value: number, path: string): number {
  if (value > 10_000 && value !== NO_SCORE) throw new HistoryError(`${path} holds a confidence of ${value / 10_000}`);
  return value;
}

async function readHeader(path: string): Promise<ScoreColumn> {
  let file: FileHandle;
  try {
    file = await open(path, 'r');
  } catch (error) {
    throw new HistoryError(`cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const head = Buffer.alloc(HEADER_LENGTH);
    const size = (await file.stat()).size;
    if (!(await readAllAt(file, head, 0)) || head.toString('latin1', 0, 8) !== MAGIC) throw new HistoryError(`${path} is not a confidence column this service wrote`);
    if (head.readUInt32LE(8) !== FORMAT_VERSION) throw new HistoryError(`${path} is of format ${head.readUInt32LE(8)}, not ${FORMAT_VERSION}`);
    const count = head.readUInt32LE(12);
    const at = head.readDoubleLE(16);
    if (!Number.isSafeInteger(at) || at < 0 || head.readUInt32LE(28) !== 0) throw new HistoryError(`${path} has a header this service does not write`);
    if (size !== HEADER_LENGTH + 2 * count) throw new HistoryError(`${path} is ${size} bytes, not ${HEADER_LENGTH + 2 * count}: cut short or grown; restore it, or move the history aside`);
    return { at, count, path, crc: head.readUInt32LE(24) };
  } finally {
    await file.close();
  }
}
