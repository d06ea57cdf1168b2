import { mkdir, open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { readAllAt, tempFileName, writeAllAt, writeFileAtomic } from '../common/atomic-file.js';
import { crcOfFile, extendCrc } from '../common/file-crc.js';
import { CarriedIds, type CarriedIdsState, type FrozenIdBytes } from './carried-ids.js';
import { HOME_PARTITION, NO_RECORD, isSpilled, type BuildCarry, type Segment, type SpilledSegment } from './carry.js';
import { blocksFit, type RecordBlocks } from './record-blocks.js';
import { SEGMENT_FILE_NAME } from './spilled-segments.js';
import { CACHE_VERSION } from './parse-cache.js';

/**
 * A builder's carry (carry.ts) kept across a restart, in its folder of
 * spilled segments (BuilderOptions.keepCarry): a clean close writes the
 * evidence-id tables, their homes and the segments' blocks to
 * `kept-carry.bin`, then `kept-carry.json` naming them, the segment
 * files and the files of frozen ids' bytes (carried-ids.ts), so that the
 * next process reads them back in seconds instead of
 * parsing and deduplicating every stored evidence file again (tens of
 * seconds at 10M VPAs: bench/MEASUREMENTS.md, "A carry kept across
 * restarts").
 *
 * It is derived data and never trusted: the description is checked, each
 * array and each segment file against its CRC-32, and the id tables by
 * CarriedIds.fromStoredState; whatever fails, the carry is not used and every
 * file is read as before. A kept carry stays after it is read: it is a
 * true carry of the files it names for as long as its segment files are
 * there (they are never written twice), and a start after a crash reads
 * only the evidence stored since, as after a clean stop. The builder
 * keeps those files while it stands (SegmentFiles.keptBy), until the next
 * clean close keeps a new carry. Written without a sync: a crash that
 * tears it costs only that read.
 */

const MANIFEST = 'kept-carry.json';
const ARRAYS = 'kept-carry.bin';
const FORMAT = 2;
/** Arrays start at a multiple of this in kept-carry.bin, so each may be read into a buffer of its kind. */
const ALIGN = 8;

/** Where an array is in kept-carry.bin: [offset, byte length]. */
const Place = Type.Tuple([Type.Integer({ minimum: 0 }), Type.Integer({ minimum: 0 })]);
const Count = Type.Integer({ minimum: 0 });
const Crc = Type.Integer({ minimum: 0, maximum: 0xffffffff });

const ManifestSchema = Type.Object(
  {
    format: Type.Literal(FORMAT),
    /** The parse rules and record format the records were made by (parse-cache.ts, CACHE_VERSION). */
    parseVersion: Type.Integer({ minimum: 0 }),
    partitions: Type.Integer({ minimum: 1, maximum: 0x7fff }),
    chunkBytes: Type.Integer({ minimum: 1 }),
    correctionSequence: Count,
    chunks: Count,
    files: Type.Array(Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }), size: Count, mtimeMs: Type.Number() }, { additionalProperties: false })),
    invalidLines: Count,
    duplicateEvidence: Count,
    invalidSamples: Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 10 }),
    arrays: Type.Object({ byteLength: Count, crc: Crc }, { additionalProperties: false }),
    ids: Type.Array(
      Type.Object(
        {
          /** The ids since the last freeze (CarriedIdsState.recent). */
          table: Place,
          offsets: Place,
          bytes: Place,
          size: Count,
          homes: Place,
          /** The frozen ids: their table here, their bytes in a file of the folder as a segment's. */
          frozen: Type.Union([
            Type.Null(),
            Type.Object(
              { count: Count, starts: Place, entries: Place, file: Type.String({ pattern: SEGMENT_FILE_NAME.source }), byteLength: Count, crc: Crc },
              { additionalProperties: false },
            ),
          ]),
        },
        { additionalProperties: false },
      ),
    ),
    records: Type.Array(
      Type.Array(
        Type.Array(
          Type.Object(
            {
              file: Type.Union([Type.String({ pattern: SEGMENT_FILE_NAME.source }), Type.Null()]),
              byteLength: Count,
              crc: Crc,
              blocks: Type.Union([Type.Null(), Type.Object({ records: Count, blocks: Count, starts: Place, filters: Place }, { additionalProperties: false })]),
            },
            { additionalProperties: false },
          ),
        ),
      ),
    ),
  },
  { additionalProperties: false },
);
type Manifest = Static<typeof ManifestSchema>;
const manifestChecker = TypeCompiler.Compile(ManifestSchema);

/**
 * What a builder must match for a kept carry to be its own: its partitions
 * and its chunk size, which number the records' chunks; and the corrections
 * journal's length, which may have grown since (retractions are marked
 * again) but not shrunk (a journal restored from an older copy would undo
 * retractions the carry has marked).
 */
export interface CarryShape {
  readonly partitions: number;
  readonly chunkBytes: number;
  readonly correctionSequence: number;
}

export type KeptCarry =
  | { readonly carry: BuildCarry; readonly blocks: ReadonlyMap<SpilledSegment, RecordBlocks>; readonly bytes: number }
  | { readonly refused: string }
  | null;

/**
 * Write `carry` into `dir`, its segments' folder. Every segment with
 * records, and every frozen ids' bytes, must be spilled already (a file of
 * `dir`); `blocksOf` gives the blocks made of a segment, kept with it.
 */
export async function keepCarry(dir: string, carry: BuildCarry, shape: CarryShape, blocksOf: (segment: SpilledSegment) => RecordBlocks | undefined): Promise<void> {
  const parts: Uint8Array[] = [];
  let length = 0;
  let crc = 0;
  const place = (array: ArrayBufferView): [number, number] => {
    const pad = (ALIGN - (length % ALIGN)) % ALIGN;
    if (pad > 0) parts.push(new Uint8Array(pad));
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    parts.push(bytes);
    crc = extendCrc(bytes, crc);
    const at = length + pad;
    length = at + bytes.byteLength;
    return [at, bytes.byteLength];
  };
  const ids = carry.seen.map(({ recent, frozen }, p) => ({
    table: place(recent.table),
    offsets: place(recent.offsets),
    bytes: place(recent.bytes),
    size: recent.size,
    homes: place(carry.homes[p]!),
    frozen: frozen === null ? null : { count: frozen.count, starts: place(frozen.starts), entries: place(frozen.entries), ...spilledFile(frozen.bytes) },
  }));
  const records = carry.records.map((pairs) =>
    pairs.map((segments) =>
      segments.map((segment) => {
        if (!isSpilled(segment)) {
          if (segment.byteLength > 0) throw new Error('a carried segment is still in memory');
          return { file: null, byteLength: 0, crc: 0, blocks: null };
        }
        if (segment.crc === undefined) throw new Error(`carried records file ${segment.path} has no CRC`);
        const blocks = blocksOf(segment);
        return {
          file: basename(segment.path),
          byteLength: segment.byteLength,
          crc: segment.crc,
          blocks: blocks === undefined ? null : { records: blocks.records, blocks: blocks.blocks, starts: place(blocks.starts), filters: place(blocks.filters) },
        };
      }),
    ),
  );
  const manifest: Manifest = {
    format: FORMAT,
    parseVersion: CACHE_VERSION,
    partitions: shape.partitions,
    chunkBytes: shape.chunkBytes,
    correctionSequence: shape.correctionSequence,
    chunks: carry.chunks,
    files: carry.files.map(({ name, size, mtimeMs }) => ({ name, size, mtimeMs })),
    invalidLines: carry.invalidLines,
    duplicateEvidence: carry.duplicateEvidence,
    invalidSamples: [...carry.invalidSamples],
    arrays: { byteLength: length, crc },
    ids,
    records,
  };
  // A builder that never wrote a segment has not made the folder.
  await mkdir(dir, { recursive: true });
  // The description of a carry kept before goes first: with the new arrays it would be refused, and a keep
  // that fails part-way leaves none rather than one refused.
  await removeKeptCarry(dir);
  const temp = join(dir, tempFileName(ARRAYS));
  const file = await open(temp, 'w', 0o600);
  try {
    await writeAllAt(file, parts, 0);
    await file.close();
    await rename(temp, join(dir, ARRAYS));
  } catch (error) {
    await file.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await writeFileAtomic(join(dir, MANIFEST), Buffer.from(JSON.stringify(manifest)), 0o600);
}

/**
 * The carry kept in `dir` by the last clean close, checked whole; null
 * when there is none, `refused` with the reason when it cannot be used
 * (its two files are removed then). The segment files stay: the caller
 * adopts them, or removes them with the rest of the folder.
 */
export async function readKeptCarry(dir: string, shape: CarryShape): Promise<KeptCarry> {
  const manifestPath = join(dir, MANIFEST);
  const arraysPath = join(dir, ARRAYS);
  let text: string;
  try {
    text = await readFile(manifestPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      await unlink(arraysPath).catch(() => {});
      return null;
    }
    await removeKeptCarry(dir).catch(() => {});
    return { refused: `${MANIFEST} cannot be read: ${(error as Error).message}` };
  }
  let kept: KeptCarry;
  try {
    kept = await readChecked(dir, text, arraysPath, shape);
  } catch (error) {
    kept = { refused: (error as Error).message };
  }
  // Refused: removed, as far as it can be (the next start refuses again what is left).
  if (kept !== null && 'refused' in kept) await removeKeptCarry(dir).catch(() => {});
  return kept;
}

/** The files a kept carry is in, in its folder. */
export const KEPT_CARRY_FILES: readonly string[] = [MANIFEST, ARRAYS];

/** Remove the carry kept in `dir`, the description first; a file already gone is no error, any other failure throws. */
export async function removeKeptCarry(dir: string): Promise<void> {
  for (const name of KEPT_CARRY_FILES) {
    await unlink(join(dir, name)).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    });
  }
}

async function readChecked(dir: string, text: string, arraysPath: string, shape: CarryShape): Promise<KeptCarry> {
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch {
    return { refused: `${MANIFEST} is not JSON` };
  }
  if (!manifestChecker.Check(manifest)) {
    const first = manifestChecker.Errors(manifest).First();
    return { refused: `${MANIFEST} is not a kept carry of this release (${first?.path ?? ''} ${first?.message ?? ''})` };
  }
  if (manifest.parseVersion !== CACHE_VERSION) return { refused: `its records were made by parse rules of version ${manifest.parseVersion}, this release's are ${CACHE_VERSION}` };
  if (manifest.partitions !== shape.partitions || manifest.chunkBytes !== shape.chunkBytes) {
    return { refused: `kept for ${manifest.partitions} partitions of ${manifest.chunkBytes}-byte chunks; this builder has ${shape.partitions} of ${shape.chunkBytes}` };
  }
  if (manifest.correctionSequence > shape.correctionSequence) {
    return { refused: `kept after ${manifest.correctionSequence} corrections; the journal now holds ${shape.correctionSequence}` };
  }
  const partitions = manifest.partitions;
  if (manifest.ids.length !== partitions || manifest.records.length !== partitions || manifest.records.some((pairs) => pairs.length !== partitions)) {
    return { refused: `${MANIFEST} does not hold ${partitions} partitions` };
  }
  const chunks = manifest.files.reduce((sum, file) => sum + Math.max(1, Math.ceil(file.size / manifest.chunkBytes)), 0);
  if (chunks !== manifest.chunks) return { refused: `${MANIFEST} counts ${manifest.chunks} chunks where its files make ${chunks}` };

  // The arrays first, whole and against their CRC, before the seconds the segment files take.
  const arrays = await open(arraysPath, 'r');
  const seen: CarriedIdsState[] = [];
  const homes: Uint16Array[] = [];
  const madeBlocks: (RecordBlocks | null)[][][] = [];
  try {
    const { size } = await arrays.stat();
    if (size !== manifest.arrays.byteLength) return { refused: `${ARRAYS} holds ${size} bytes, ${manifest.arrays.byteLength} were written` };
    const read = new ArrayReader(arrays, size);
    for (const part of manifest.ids) {
      const recent = { table: await read.into(Int32Array, part.table), offsets: await read.into(Uint32Array, part.offsets), bytes: await read.into(Uint8Array, part.bytes), size: part.size };
      homes.push(await read.into(Uint16Array, part.homes));
      const kept = part.frozen;
      const frozen =
        kept === null
          ? null
          : {
              count: kept.count,
              starts: await read.into(Uint32Array, kept.starts),
              entries: await read.into(Int32Array, kept.entries),
              bytes: { path: join(dir, kept.file), byteLength: kept.byteLength, crc: kept.crc },
            };
      seen.push({ recent, frozen });
    }
    for (const pairs of manifest.records) {
      const row: (RecordBlocks | null)[][] = [];
      for (const segments of pairs) {
        const list: (RecordBlocks | null)[] = [];
        for (const kept of segments) {
          if (kept.file === null) list.push(NO_BLOCKS);
          else list.push(kept.blocks === null ? null : { records: kept.blocks.records, blocks: kept.blocks.blocks, starts: await read.into(Float64Array, kept.blocks.starts), filters: await read.into(Int32Array, kept.blocks.filters) });
        }
        row.push(list);
      }
      madeBlocks.push(row);
    }
    if (read.crc !== manifest.arrays.crc) return { refused: `${ARRAYS} fails its CRC` };
  } finally {
    await arrays.close();
  }
  let bytes = 0;
  for (const [i, state] of seen.entries()) {
    let size: number;
    try {
      size = CarriedIds.fromStoredState(state).size;
    } catch (error) {
      return { refused: `an id table is not whole: ${(error as Error).message}` };
    }
    if (homes[i]!.length !== size) return { refused: `an id table holds ${size} ids and ${homes[i]!.length} homes` };
    if (state.frozen === null) continue;
    const problem = await checkFile(state.frozen.bytes as SpilledSegment);
    if (problem !== null) return { refused: problem };
    bytes += state.frozen.bytes.byteLength;
  }

  const blocks = new Map<SpilledSegment, RecordBlocks>();
  const records: Segment[][][] = [];
  for (const [idPartition, pairs] of manifest.records.entries()) {
    const row: Segment[][] = [];
    for (const [vpaPartition, segments] of pairs.entries()) {
      const list: Segment[] = [];
      for (const [i, kept] of segments.entries()) {
        if (kept.file === null) {
          if (kept.byteLength !== 0) return { refused: `${MANIFEST} names a segment of records without its file` };
          list.push(new SharedArrayBuffer(0));
          continue;
        }
        const segment: SpilledSegment = { path: join(dir, kept.file), byteLength: kept.byteLength, crc: kept.crc };
        const made = madeBlocks[idPartition]![vpaPartition]![i]!;
        if (made !== null) {
          if (!blocksFit(made, kept.byteLength)) return { refused: `the blocks kept of ${kept.file} do not fit it` };
          blocks.set(segment, made);
        }
        const problem = await checkFile(segment);
        if (problem !== null) return { refused: problem };
        bytes += kept.byteLength;
        list.push(segment);
      }
      row.push(list);
    }
    records.push(row);
  }
  const problem = recordCountsProblem(homes, madeBlocks);
  if (problem !== null) return { refused: problem };
  const carry: BuildCarry = {
    files: manifest.files,
    chunks: manifest.chunks,
    partitions,
    seen,
    homes,
    records,
    invalidLines: manifest.invalidLines,
    duplicateEvidence: manifest.duplicateEvidence,
    invalidSamples: manifest.invalidSamples,
  };
  return { carry, blocks, bytes };
}

/**
 * Where the blocks of every segment of a pair are kept, they must count the
 * records the homes give that pair (the k-th record of records[p][q] is the
 * k-th id of partition p whose home is q): null when they do, or cannot be
 * checked (some blocks not kept), else what is wrong.
 */
function recordCountsProblem(homes: readonly Uint16Array[], blocks: readonly (readonly (readonly (RecordBlocks | null)[])[])[]): string | null {
  for (const [idPartition, partHomes] of homes.entries()) {
    const counts = new Float64Array(blocks.length);
    for (const home of partHomes) if (home !== NO_RECORD) counts[home & HOME_PARTITION]!++;
    for (const [vpaPartition, segments] of blocks[idPartition]!.entries()) {
      if (segments.some((made) => made === null)) continue;
      const records = segments.reduce((sum, made) => sum + made!.records, 0);
      if (records !== counts[vpaPartition]) return `the homes of id partition ${idPartition} give ${counts[vpaPartition]} records to VPA partition ${vpaPartition}, its segments hold ${records}`;
    }
  }
  return null;
}

/** The blocks of an empty segment, which keeps none. */
const NO_BLOCKS: RecordBlocks = { records: 0, blocks: 0, starts: Float64Array.of(0), filters: new Int32Array(0) };

/** Reads the arrays of kept-carry.bin in the order they were written, each into a buffer of its own, the CRC-32 of all kept as it goes. */
class ArrayReader {
  readonly #file: FileHandle;
  readonly #size: number;
  #end = 0;
  crc = 0;

  constructor(file: FileHandle, size: number) {
    this.#file = file;
    this.#size = size;
  }

  async into<T extends ArrayBufferView>(Kind: { new (buffer: ArrayBuffer): T; readonly BYTES_PER_ELEMENT: number }, [at, length]: readonly [number, number]): Promise<T> {
    if (at < this.#end || at % ALIGN !== 0 || at - this.#end >= ALIGN || at + length > this.#size || length % Kind.BYTES_PER_ELEMENT !== 0) {
      throw new Error(`${ARRAYS} does not hold its arrays where ${MANIFEST} says`);
    }
    const buffer = new ArrayBuffer(length);
    const bytes = new Uint8Array(buffer);
    if (!(await readAllAt(this.#file, bytes, at))) throw new Error(`${ARRAYS} ends early`);
    this.crc = extendCrc(bytes, this.crc);
    this.#end = at + length;
    return new Kind(buffer);
  }
}

/** The file of frozen ids' bytes as the description names it: spilled, as a segment is, before a carry is kept. */
function spilledFile(bytes: FrozenIdBytes): { file: string; byteLength: number; crc: number } {
  if (!isSpilled(bytes)) throw new Error('carried ids are still in memory');
  if (bytes.crc === undefined) throw new Error(`carried ids file ${bytes.path} has no CRC`);
  return { file: basename(bytes.path), byteLength: bytes.byteLength, crc: bytes.crc };
}

/** Why `segment`'s file is not the one kept (size, CRC), or null when it is. */
async function checkFile(segment: SpilledSegment): Promise<string | null> {
  let file: FileHandle;
  try {
    file = await open(segment.path, 'r');
  } catch (error) {
    return `carried records file ${basename(segment.path)} cannot be opened: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
  try {
    const { size } = await file.stat();
    if (size !== segment.byteLength) return `carried records file ${basename(segment.path)} holds ${size} bytes, ${segment.byteLength} were written`;
    return (await crcOfFile(file, size)) === segment.crc ? null : `carried records file ${basename(segment.path)} fails its CRC`;
  } finally {
    await file.close();
  }
}
