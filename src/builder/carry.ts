import type { StoredFile } from '../evidence/store.js';
import { carriedIdsMemory, type CarriedIdsState } from './carried-ids.js';

/**
 * What one build leaves to the next so that, after an ingest, only the new
 * evidence is parsed and deduplicated.
 *
 * Evidence files never change once stored and new ones sort after the old
 * (their names start with the time they were stored), so the deduplicated
 * records of a build are a prefix of the next build's: the next build reads
 * only the chunks after them, checks their ids against the ids kept so far,
 * and appends what it keeps. Each VPA partition then receives its records
 * in the same order as a build that read every file, and aggregation, which
 * runs whole on every build (recency depends on the scoring time), turns
 * them into the same rows: the snapshot is the same either way.
 *
 * The records live in shared memory, so aggregation tasks read them where
 * they are; the id tables move to the dedup tasks and back by transfer.
 */
export interface BuildCarry {
  /** The files read, in order, as they were when read. */
  readonly files: readonly CarriedFile[];
  /** Chunks those files were cut into; the next build numbers its chunks from here. */
  readonly chunks: number;
  readonly partitions: number;
  /** Per id partition: every evidence id kept so far. */
  readonly seen: readonly CarriedIdsState[];
  /**
   * Per id partition, per id of `seen` in its order: the VPA partition its
   * record went to, with HOME_RETRACTED set once the item is retracted, or
   * NO_RECORD for an id retracted before it was read (its record was
   * dropped). The k-th record of records[p][q] is the item of the k-th id
   * of partition p whose home is q: so a record, which does not keep its
   * id, can be found from its id and its id from it (carry-reader.ts).
   */
  readonly homes: readonly Uint16Array[];
  /** records[idPartition][vpaPartition]: the kept records, in segments, oldest first. */
  readonly records: readonly (readonly Segments[])[];
  readonly invalidLines: number;
  readonly duplicateEvidence: number;
  readonly invalidSamples: readonly string[];
}

/**
 * One (id partition, VPA partition) pair's records, in segments:
 * concatenated, they are in ingestion order. A segment is in shared memory
 * when made, and may then move to a file (spilled-segments.ts).
 */
export type Segments = readonly Segment[];

export type Segment = SharedArrayBuffer | SpilledSegment;

/** A segment written to a file: its bytes as they were in memory. */
export interface SpilledSegment {
  readonly path: string;
  readonly byteLength: number;
  /** CRC-32 of its bytes, as written (kept-carry.ts checks the file against it). */
  readonly crc?: number;
}

/** Whether `segment` (or any buffer of records) is in a file rather than in memory. */
export function isSpilled(segment: ArrayBufferLike | SpilledSegment): segment is SpilledSegment {
  return typeof (segment as Partial<SpilledSegment>).path === 'string';
}

/** In BuildCarry.homes: the item is retracted (its record stays, skipped by aggregation). */
export const HOME_RETRACTED = 0x8000;
/** In BuildCarry.homes: the id was retracted before its record was read; no record was kept. */
export const NO_RECORD = 0xffff;
/** The VPA partition of a home that has a record. */
export const HOME_PARTITION = 0x7fff;

export type CarriedFile = Pick<StoredFile, 'name' | 'size' | 'mtimeMs'>;

/** Whether `files` are the carried files, unchanged, followed by new ones only. */
export function extendsCarriedFiles(carry: BuildCarry, files: readonly StoredFile[]): boolean {
  if (files.length < carry.files.length) return false;
  return carry.files.every((known, i) => {
    const now = files[i]!;
    return now.name === known.name && now.size === known.size && now.mtimeMs === known.mtimeMs;
  });
}

/** Bytes of memory a carry holds: its records not in files and its id tables, slack included. */
export function carryBytes(carry: BuildCarry): number {
  let bytes = 0;
  for (const state of carry.seen) bytes += carriedIdsMemory(state);
  for (const homes of carry.homes) bytes += homes.byteLength;
  for (const segment of carriedSegments(carry)) if (!isSpilled(segment)) bytes += segment.byteLength;
  return bytes;
}

/** Bytes of a carry's records and frozen ids in files. */
export function carriedFileBytes(carry: BuildCarry): number {
  let bytes = 0;
  for (const segment of carriedFiles(carry)) if (isSpilled(segment)) bytes += segment.byteLength;
  return bytes;
}

/** Every segment of a carry's records. */
export function carriedSegments(carry: BuildCarry): Segment[] {
  return carry.records.flat(2);
}

/** The bytes of each id partition's frozen ids (carried-ids.ts), in memory or in a file as a segment is. */
export function carriedIdBytes(carry: BuildCarry): Segment[] {
  return carry.seen.flatMap((state) => (state.frozen === null ? [] : [state.frozen.bytes]));
}

/** Everything of a carry that is, or will be, in a file of its own: the records' segments and the frozen ids' bytes. */
export function carriedFiles(carry: BuildCarry): Segment[] {
  return [...carriedSegments(carry), ...carriedIdBytes(carry)];
}

/**
 * Segments a (id partition, VPA partition) pair may hold before the next
 * dedup task merges them: each build adds one, and an aggregation task reads
 * each through its own cursor.
 */
export const MAX_SEGMENTS = 8;

/**
 * How many of one pair's newest carried segments the next dedup task should
 * copy ahead of its new records, so the list stays short: none below
 * MAX_SEGMENTS; then the newest two, and each older one no larger than twice
 * those after it together. As with the levels of a log-structured merge,
 * segments merge only with others of like size, so a record is copied a
 * logarithmic number of times rather than once every few builds.
 */
export function segmentsToMerge(segments: Segments): number {
  if (segments.length + 1 < MAX_SEGMENTS) return 0;
  let newer = 0;
  let from = segments.length;
  while (from > 0) {
    const size = segments[from - 1]!.byteLength;
    if (segments.length - from >= 2 && size > 2 * newer) break;
    newer += size;
    from--;
  }
  return segments.length - from;
}
