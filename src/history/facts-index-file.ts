import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { readAllAt, tempFileName, writeAllAt } from '../common/atomic-file.js';
import { extendCrc } from '../common/file-crc.js';
import { ROW_WORDS } from './answer-slots.js';
import { FactsIndex, RECORD_ALIGN, SEEN, SLOT_BYTES, TOLD_BITS, VPA_BYTES, arraysByNumber, holds, roomFor, type FactsIndexArrays } from './facts-index.js';

/**
 * A copy of the history's index (facts-index.ts) that a clean close keeps
 * beside the log (`changes.log.index`), so that the next open reads it and
 * then only the records after it, rather than every record: a pass over
 * the records of 10M VPAs takes tens of seconds, this file about one
 * (docs/operations.md, "The history of answers"). It is derived: one that
 * is missing, cut short, fails its CRC or does not match the log is not
 * used, and the log is read whole, as before it was kept. So it is written
 * without a sync; a crash that tears it only costs that pass.
 *
 * Layout, little endian: a 72-byte header, then the table's slots (u32
 * each), then the arrays by number in FactsIndexArrays order, one entry
 * for each VPA held (its two hashes, u32 each; its row, answer-slots.ts:
 * place, printA, printB and confidence, u32 each; told, u8).
 *
 *   0  8  magic "UPIRCHIX"
 *   8  4  format version, u32 (5)
 *  12  4  slots of the table, at least 5 to 4 VPAs
 *  16  4  VPAs held
 *  20  4  0
 *  24  8  covered: the bytes of the log the index holds, f64
 *  32  4  CRC-32 of the log's header and of the last MiB of those bytes, u32
 *  36  4  0
 *  40  8  the latest `at` of their records, f64 (0: none)
 *  48  8  when a record first replaced an earlier one of its VPA, f64 (Infinity: none)
 *  56  8  the time of the newest confidence column the index holds, f64 (0: none)
 *  64  4  CRC-32 of bytes 0 to 64, of the arrays and of the mark
 *  68  4  the mark's length, u32 (0: none)
 *
 * After the arrays, the mark of the last comparison of every VPA
 * (ComparedMark) as JSON, when there is one.
 */

/** What of the log a kept index holds, for the log to check against itself. */
export interface IndexCovering {
  readonly covered: number;
  /** CRC-32 of the log's header and of its last MiB up to `covered`: a log that still has them is the one the index holds. */
  readonly logCrc: number;
  readonly lastAt: number;
  /** When a record first replaced an earlier one of its VPA (Infinity: none). */
  readonly replacedAt: number;
  /** The time of the newest confidence column (score-columns.ts) whose confidences the index holds, 0 for none. */
  readonly columnAt: number;
}

/**
 * The last state whose every VPA was compared (a snapshot served first, or
 * swapped in): which snapshot, where the log stood once its changes were
 * written, and the evidence files its delta held (count, CRC-32 of their
 * names joined by newlines, and the last). A later state of the same
 * snapshot differs from what is recorded only in VPAs that its delta holds
 * or that a record after `offset` names, while those files are still held
 * (answer-changes.ts).
 */
export interface ComparedMark {
  readonly snapshot: string;
  readonly offset: number;
  readonly files: FilesSummary;
}

export interface FilesSummary {
  readonly count: number;
  readonly crc: number;
  readonly last: string;
}

export type KeptIndex = { readonly index: FactsIndex; readonly covering: IndexCovering; readonly mark: ComparedMark | null } | { readonly refused: string };

const MAGIC = 'UPIRCHIX';
const FORMAT_VERSION = 5;
const HEADER_LENGTH = 72;
const COLUMN_AT = 56;
const CRC_AT = 64;
const MARK_LENGTH_AT = 68;
/** The longest mark kept: a snapshot id and a file name are short. */
const MAX_MARK = 4096;
const MAX_SLOTS = 2 ** 31;

/** The file that keeps the index of the log at `logPath`. */
export function indexPathOf(logPath: string): string {
  return `${logPath}.index`;
}

/**
 * Keep `index`, which holds `covering` of the log at `logPath`: written
 * beside it and renamed into place, so the file is either the old one or
 * this one whole.
 */
export async function keepFactsIndex(logPath: string, index: FactsIndex, covering: IndexCovering, mark: ComparedMark | null): Promise<void> {
  const path = indexPathOf(logPath);
  const a = index.arrays;
  const head = Buffer.alloc(HEADER_LENGTH);
  head.write(MAGIC, 0, 'latin1');
  head.writeUInt32LE(FORMAT_VERSION, 8);
  head.writeUInt32LE(a.table.length, 12);
  head.writeUInt32LE(a.count, 16);
  head.writeDoubleLE(covering.covered, 24);
  head.writeUInt32LE(covering.logCrc, 32);
  head.writeDoubleLE(covering.lastAt, 40);
  head.writeDoubleLE(covering.replacedAt, 48);
  head.writeDoubleLE(covering.columnAt, COLUMN_AT);
  const markBytes = Buffer.from(mark === null ? '' : JSON.stringify(mark), 'utf8');
  head.writeUInt32LE(markBytes.length, MARK_LENGTH_AT);
  const parts = [...partsOf(a), markBytes];
  head.writeUInt32LE(crcOf(head, parts), CRC_AT);
  const temp = join(dirname(path), tempFileName(basename(path)));
  const file = await open(temp, 'w');
  try {
    await writeAllAt(file, [head, ...parts], 0);
    await file.close();
    await rename(temp, path);
  } catch (error) {
    await file.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
}

/** Remove the kept index of the log at `logPath` (none is fine): the log is about to change in place. */
export async function dropFactsIndex(logPath: string): Promise<void> {
  await unlink(indexPathOf(logPath)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

/**
 * The index kept for the log at `logPath`, checked in itself (the log
 * checks `covering` against its records); null when none is kept, and the
 * reason when one is and cannot be used.
 */
export async function readFactsIndex(logPath: string, firstRecord: number): Promise<KeptIndex | null> {
  const path = indexPathOf(logPath);
  let file;
  try {
    file = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return { refused: `${path} cannot be opened (${(error as Error).message})` };
  }
  try {
    return await readOpened(file, path, firstRecord);
  } catch (error) {
    // Derived: whatever goes wrong reading it, the log is read whole instead.
    return { refused: `${path} cannot be read (${(error as Error).message})` };
  } finally {
    await file.close();
  }
}

/** readFactsIndex of the file open as `file`; records of the log start at `firstRecord`. */
async function readOpened(file: FileHandle, path: string, firstRecord: number): Promise<KeptIndex> {
  const size = (await file.stat()).size;
  const head = Buffer.alloc(HEADER_LENGTH);
  if ((await file.read(head, 0, HEADER_LENGTH, 0)).bytesRead < HEADER_LENGTH || head.toString('latin1', 0, 8) !== MAGIC) return { refused: `${path} is not an index this service keeps` };
  if (head.readUInt32LE(8) !== FORMAT_VERSION) return { refused: `${path} is of format ${head.readUInt32LE(8)}, not ${FORMAT_VERSION}` };
  const slots = head.readUInt32LE(12);
  const count = head.readUInt32LE(16);
  if (slots > MAX_SLOTS || !holds(slots, count)) return { refused: `${path} has ${count} VPAs in ${slots} slots` };
  const markLength = head.readUInt32LE(MARK_LENGTH_AT);
  if (markLength > MAX_MARK) return { refused: `${path} has a mark of ${markLength} bytes` };
  const expected = HEADER_LENGTH + slots * SLOT_BYTES + count * VPA_BYTES + markLength;
  if (size !== expected) return { refused: `${path} is ${size} bytes, not ${expected}: cut short or grown` };
  // Read into arrays with room for the VPAs to come.
  const arrays: FactsIndexArrays = { count, table: new Uint32Array(slots), ...arraysByNumber(roomFor(count)) };
  const markBytes = Buffer.alloc(markLength);
  const parts = [...partsOf(arrays), markBytes];
  let at = HEADER_LENGTH;
  for (const part of parts) {
    if (!(await readAllAt(file, part, at))) return { refused: `${path} ends early` };
    at += part.byteLength;
  }
  if (crcOf(head, parts) !== head.readUInt32LE(CRC_AT)) return { refused: `${path} fails its CRC` };
  const mark = markLength === 0 ? null : markOf(markBytes.toString('utf8'));
  if (mark === undefined) return { refused: `${path} has a mark this service does not write` };
  const covering: IndexCovering = {
    covered: head.readDoubleLE(24),
    logCrc: head.readUInt32LE(32),
    lastAt: head.readDoubleLE(40),
    replacedAt: head.readDoubleLE(48),
    columnAt: head.readDoubleLE(COLUMN_AT),
  };
  const why = wrongArrays(arrays, firstRecord, covering.covered);
  if (why !== null) return { refused: `${path} ${why}` };
  if (mark !== null && !(mark.offset >= firstRecord && mark.offset <= covering.covered && mark.offset % RECORD_ALIGN === 0)) return { refused: `${path} has a mark at byte ${mark.offset}, not a record's` };
  return { index: new FactsIndex(arrays), covering, mark };
}

/** Why `a` is not what an index of a log whose records run from `firstRecord` to `covered` holds, or null. */
function wrongArrays(a: FactsIndexArrays, firstRecord: number, covered: number): string | null {
  for (let number = 0; number < a.count; number++) {
    const told = a.told[number]!;
    // The low bits of toldOf, and the mark of a pass, which the next pass clears.
    if ((told & ~(TOLD_BITS | SEEN)) !== 0) return `has a VPA telling ${told}`;
    const offset = a.rows[number * ROW_WORDS]! * RECORD_ALIGN;
    if (offset < firstRecord || offset >= covered) return `has a VPA naming byte ${offset} of a log of ${covered}`;
  }
  // Each number in one slot of the table.
  const found = new Uint32Array(Math.ceil(a.count / 32));
  let held = 0;
  for (const entry of a.table) {
    if (entry === 0) continue;
    const number = entry - 1;
    if (number >= a.count) return `has a VPA numbered ${number} of ${a.count}`;
    const bit = 1 << (number & 31);
    if ((found[number >>> 5]! & bit) !== 0) return `has VPA ${number} in two slots`;
    found[number >>> 5]! |= bit;
    held++;
  }
  return held === a.count ? null : `holds ${held} VPAs in its table, not the ${a.count} its header says`;
}

const MarkSchema = Type.Object(
  {
    snapshot: Type.String({ minLength: 1, maxLength: 255 }),
    offset: Type.Integer({ minimum: 0 }),
    files: Type.Object({ count: Type.Integer({ minimum: 0 }), crc: Type.Integer({ minimum: 0, maximum: 0xffffffff }), last: Type.String({ maxLength: 255 }) }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);
const markChecker = TypeCompiler.Compile(MarkSchema);

/** The mark in `text`, or undefined when it is not one keepFactsIndex writes. */
function markOf(text: string): ComparedMark | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return markChecker.Check(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The summary of evidence files `files`, in their order (ComparedMark.files). */
export function filesSummary(files: readonly string[]): FilesSummary {
  return { count: files.length, crc: crc32(files.join('\n')), last: files.reduce((last, name) => (name > last ? name : last), '') };
}

/** The bytes of the table, and of the arrays by number up to `count`. */
function partsOf(a: FactsIndexArrays): Uint8Array[] {
  const byNumber = [a.hashes.subarray(0, 2 * a.count), a.rows.subarray(0, ROW_WORDS * a.count), a.told.subarray(0, a.count)];
  return [a.table, ...byNumber].map((array) => new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
}

function crcOf(head: Buffer, parts: readonly Uint8Array[]): number {
  let crc = crc32(head.subarray(0, CRC_AT));
  for (const part of parts) crc = extendCrc(part, crc);
  return crc;
}
