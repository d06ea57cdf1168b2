import { mkdir, open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { readAllAt, writeFileAtomic } from '../common/atomic-file.js';
import { HistoryError } from '../common/errors.js';
import { lowerBound } from '../common/lower-bound.js';

/**
 * The confidence every VPA of the history was served with from each
 * scoring day on (docs/design.md, "Answers as of a past instant"). A
 * snapshot of a new scoring day (builder/scoring.ts) scores every VPA
 * again, so nearly every confidence moves then while little else does:
 * rather than a record per VPA in the change log, the state that first
 * serves such a snapshot writes one column, two bytes a VPA by its number
 * (facts-index.ts), beside the log. A VPA's answer at an instant is its
 * newest record then, with the confidence of the newest column then when
 * that column is the later.
 *
 * One file per column, `DIR/history/scores/<at>.scores`, written whole,
 * synced and renamed into place before the state is served. The values
 * are checked a block at a time (a CRC-32 for every 32,768 of them), so
 * that telling one answer reads 64 KiB of a column, not all of it.
 * Layout, little endian:
 *
 *   0   8  magic "UPIRSCOR"
 *   8   4  format version, u32 (1)
 *  12   4  VPAs, u32
 *  16   8  at, epoch ms, f64: when the state began to be served
 *  24   8  the snapshot's scoring day (00:00 UTC), epoch ms, f64
 *  32   4  CRC-32 of the blocks' CRCs
 *  36   4  CRC-32 of bytes 0 to 36
 *  40      a CRC-32 for each block of values, u32
 *          the values, u16 each: confidence × 10,000, or 0xffff for none
 */

export const NO_SCORE = 0xffff;
const MAGIC = 'UPIRSCOR';
const FORMAT_VERSION = 1;
const HEADER_LENGTH = 40;
/** Values a block holds, checked by one CRC (and, in the fleet's store, one row). */
export const SCORE_BLOCK_VALUES = 32_768;
const SUFFIX = '.scores';

export interface ScoreColumn {
  readonly at: number;
  readonly scoredAt: number;
  readonly count: number;
  readonly path: string;
  /** The CRC-32 of each block of values, from the file's header. */
  readonly blockCrcs: Uint32Array;
}

export class ScoreColumns {
  readonly #dir: string;
  /** In the order of their times. */
  #columns: ScoreColumn[];

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

  /** Every column, oldest first. */
  list(): readonly ScoreColumn[] {
    return this.#columns;
  }

  /** The scoring day of the newest column, null with none. */
  get scoredAt(): number | null {
    return this.#columns.at(-1)?.scoredAt ?? null;
  }

  /** The newest column written at or before `at` (epoch ms), or null. */
  at(at: number): ScoreColumn | null {
    const i = lowerBound(this.#columns.length, (k) => this.#columns[k]!.at <= at);
    return i === 0 ? null : this.#columns[i - 1]!;
  }

  /** Write the column of the state served from `at` (after every column written), of a snapshot of the scoring day `scoredAt`, durably. */
  async write(at: number, scoredAt: number, values: Uint16Array): Promise<void> {
    const last = this.#columns.at(-1);
    if (last !== undefined && at <= last.at) throw new RangeError(`a column at ${at}, not after the one at ${last.at}`);
    const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    const blockCrcs = new Uint32Array(Math.ceil(values.length / SCORE_BLOCK_VALUES));
    for (let b = 0; b < blockCrcs.length; b++) blockCrcs[b] = crc32(bytes.subarray(2 * b * SCORE_BLOCK_VALUES, 2 * (b + 1) * SCORE_BLOCK_VALUES));
    const table = new Uint8Array(blockCrcs.buffer);
    const head = Buffer.alloc(HEADER_LENGTH);
    head.write(MAGIC, 0, 'latin1');
    head.writeUInt32LE(FORMAT_VERSION, 8);
    head.writeUInt32LE(values.length, 12);
    head.writeDoubleLE(at, 16);
    head.writeDoubleLE(scoredAt, 24);
    head.writeUInt32LE(crc32(table), 32);
    head.writeUInt32LE(crc32(head.subarray(0, 36)), 36);
    const path = this.#pathOf(at);
    await writeFileAtomic(path, [head, table, bytes]);
    this.#columns.push({ at, scoredAt, count: values.length, path, blockCrcs });
  }

  #pathOf(at: number): string {
    return join(this.#dir, `${String(at).padStart(15, '0')}${SUFFIX}`);
  }

  /** The confidence of VPA `number` in `column` (NO_SCORE: none), its block checked. */
  async valueOf(column: ScoreColumn, number: number): Promise<number> {
    if (number >= column.count) return NO_SCORE;
    const block = Math.floor(number / SCORE_BLOCK_VALUES);
    const first = block * SCORE_BLOCK_VALUES;
    const values = await this.#read(column, first, Math.min(SCORE_BLOCK_VALUES, column.count - first));
    return values[number - first]!;
  }

  /** Every value of `column`, checked. */
  values(column: ScoreColumn): Promise<Uint16Array> {
    return this.#read(column, 0, column.count);
  }

  /** `count` values of `column` from `first` (a block's start), each block checked against its CRC and every value a confidence. */
  async #read(column: ScoreColumn, first: number, count: number): Promise<Uint16Array> {
    const values = new Uint16Array(count);
    const bytes = new Uint8Array(values.buffer);
    const file = await open(column.path, 'r');
    try {
      if (!(await readAllAt(file, bytes, valuesStart(column.blockCrcs.length) + 2 * first))) throw new HistoryError(`${column.path} is cut short`);
    } finally {
      await file.close();
    }
    for (let at = 0; at < count; at += SCORE_BLOCK_VALUES) {
      const block = (first + at) / SCORE_BLOCK_VALUES;
      if (crc32(bytes.subarray(2 * at, 2 * (at + SCORE_BLOCK_VALUES))) !== column.blockCrcs[block]) {
        throw new HistoryError(`${column.path}: block ${block} fails its CRC; the history of answers is not served until it is restored or moved aside`);
      }
    }
    for (const value of values) if (value > 10_000 && value !== NO_SCORE) throw new HistoryError(`${column.path} holds a confidence of ${value / 10_000}`);
    return values;
  }

  /** Remove the column of the state served from `at` if one was written (its state is not served after all). */
  async discard(at: number): Promise<void> {
    this.#columns = this.#columns.filter((column) => column.at !== at);
    await unlink(this.#pathOf(at)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  /** Remove the columns of states replaced before `cutoff` (epoch ms): all before it but the newest. Returns how many. */
  async prune(cutoff: number): Promise<number> {
    const before = lowerBound(this.#columns.length, (k) => this.#columns[k]!.at < cutoff);
    const dropped = this.#columns.slice(0, Math.max(0, before - 1));
    for (const column of dropped) await unlink(column.path);
    this.#columns = this.#columns.slice(dropped.length);
    return dropped.length;
  }
}

function valuesStart(blocks: number): number {
  return HEADER_LENGTH + 4 * blocks;
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
    if (crc32(head.subarray(0, 36)) !== head.readUInt32LE(36)) throw new HistoryError(`${path}: its header fails its CRC`);
    if (head.readUInt32LE(8) !== FORMAT_VERSION) throw new HistoryError(`${path} is of format ${head.readUInt32LE(8)}, not ${FORMAT_VERSION}`);
    const count = head.readUInt32LE(12);
    const at = head.readDoubleLE(16);
    const scoredAt = head.readDoubleLE(24);
    if (!Number.isSafeInteger(at) || at < 0 || !Number.isSafeInteger(scoredAt)) throw new HistoryError(`${path} has a header this service does not write`);
    const blockCrcs = new Uint32Array(Math.ceil(count / SCORE_BLOCK_VALUES));
    const expected = valuesStart(blockCrcs.length) + 2 * count;
    if (size !== expected) throw new HistoryError(`${path} is ${size} bytes, not ${expected}: cut short or grown; restore it, or move the history aside`);
    const table = new Uint8Array(blockCrcs.buffer);
    if (!(await readAllAt(file, table, HEADER_LENGTH)) || crc32(table) !== head.readUInt32LE(32)) throw new HistoryError(`${path}: its blocks' CRCs fail their own`);
    return { at, scoredAt, count, path, blockCrcs };
  } finally {
    await file.close();
  }
}
