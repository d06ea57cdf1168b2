import { openSync, readSync, closeSync, fstatSync } from 'node:fs';
import { parseEvidenceLine, MAX_LINE_LENGTH } from '../evidence/record.js';
import { RISK_RANK, RISK_CATEGORIES, SOURCE_CATEGORIES, dominant } from '../vpa/categories.js';
import { RecordReader, RecordWriter, packFlags, partitionOf, partitionOfBytes, FLAG_SCREENSHOT } from './record-codec.js';
import { ByteInterner, compareByteRanges } from './byte-interner.js';
import { CarriedIds, type CarriedIdsState } from './carried-ids.js';
import { recencyWeightUnits } from './scoring.js';
import { clearanceTable, type ClearanceEntry } from './clearance-filter.js';
import type { IndexArrays } from '../engine/vpa-index.js';
import { NO_RECORD, type Segments, type SpilledSegment } from './carry.js';
import { freshArrays, type ArrayAllocator } from '../common/scratch-arrays.js';
import { segmentBuffer } from './spilled-segments.js';

/**
 * The parallel phases of a build. Each is a plain function of transferable
 * inputs to transferable outputs, so the pool runs them on worker threads
 * and tests can call them directly.
 *
 *   A  parse      one byte range of one evidence file → records partitioned by evidence_id
 *   B  dedup      one evidence_id partition → first occurrence of each id, partitioned by VPA
 *                 (the id itself dropped: the partition's table of ids seen keeps it)
 *   C  aggregate  one VPA partition → one row per VPA with its sources
 *
 * Deduplicating by evidence_id before grouping by VPA keeps "the same id
 * again changes nothing" exact even when a reused id names a different VPA.
 */

export interface ParseTask {
  readonly path: string;
  /**
   * The file's size and modification time when the build listed it: a
   * cached parse of any other version of the file is not used.
   */
  readonly fileSize: number;
  readonly fileMtimeMs: number;
  /** Byte range: the chunk owns every line whose first byte lies in [start, end). */
  readonly start: number;
  readonly end: number;
  /** Position of this chunk in ingestion order. */
  readonly chunk: number;
  readonly partitions: number;
  /** Where parsed chunks are kept between builds (parse-cache.ts); none when absent. */
  readonly cacheDir?: string | undefined;
}

export interface ParseResult {
  readonly parts: ArrayBuffer[];
  readonly validLines: number;
  readonly invalidLines: number;
  /** A few invalid lines, for the build log. */
  readonly invalidSamples: string[];
  readonly bytes: number;
  /** Read back from the parse cache rather than parsed. */
  readonly fromCache?: boolean;
}

const NEWLINE = 0x0a;
// A line may hold up to MAX_LINE_LENGTH UTF-16 units, which is at most 3 bytes each in UTF-8.
const MAX_LINE_BYTES = MAX_LINE_LENGTH * 3 + 2;

export function parseChunk(task: ParseTask): ParseResult {
  const fd = openSync(task.path, 'r');
  let buffer: Buffer;
  let ownedEnd: number;
  try {
    const size = fstatSync(fd).size;
    const readStart = Math.max(0, task.start - 1);
    const readEnd = Math.min(size, task.end + MAX_LINE_BYTES);
    buffer = Buffer.allocUnsafeSlow(readEnd - readStart);
    let filled = 0;
    while (filled < buffer.length) {
      const n = readSync(fd, buffer, filled, buffer.length - filled, readStart + filled);
      if (n === 0) break;
      filled += n;
    }
    buffer = buffer.subarray(0, filled);
    ownedEnd = task.end - readStart;
    // Skip the tail of a line that began in the previous chunk.
    let at = 0;
    if (task.start > 0) {
      at = buffer[0] === NEWLINE ? 1 : buffer.indexOf(NEWLINE) + 1;
      if (at === 0) at = buffer.length;
    }
    return parseLines(buffer, at, ownedEnd, task);
  } finally {
    closeSync(fd);
  }
}

function parseLines(buffer: Buffer, from: number, ownedEnd: number, task: ParseTask): ParseResult {
  // Binary records are smaller than their JSON, so an even share of the input rarely needs to grow.
  const share = Math.max(64 * 1024, Math.ceil((ownedEnd - from) / task.partitions));
  const writers = Array.from({ length: task.partitions }, () => new RecordWriter(share));
  let validLines = 0;
  let invalidLines = 0;
  const invalidSamples: string[] = [];
  let line = 0;
  let at = from;
  while (at < ownedEnd && at < buffer.length) {
    let end = buffer.indexOf(NEWLINE, at);
    if (end < 0) end = buffer.length;
    const text = buffer.toString('utf8', at, end).trim();
    at = end + 1;
    if (text.length === 0) continue;
    line++;
    // Stored lines: taken once, under the rules then (validateEvidence).
    const parsed = parseEvidenceLine(text, true);
    if (!parsed.ok) {
      invalidLines++;
      if (invalidSamples.length < 5) invalidSamples.push(`${task.path} chunk ${task.chunk} line ${line}: ${parsed.reason}`);
      continue;
    }
    validLines++;
    const r = parsed.record;
    writers[partitionOf(r.evidenceId, task.partitions)]!.append(
      task.chunk,
      line,
      r.capturedAt,
      packFlags(r.sourceCategory, r.riskCategory, r.screenshot),
      r.upi,
      r.url,
      r.evidenceId,
    );
  }
  return {
    parts: writers.map((w) => w.finish()),
    validLines,
    invalidLines,
    invalidSamples,
    bytes: Math.min(ownedEnd, buffer.length) - from,
  };
}

export interface DedupTask {
  /** This id partition's records from every chunk, in chunk order. */
  readonly inputs: ArrayBuffer[];
  readonly partitions: number;
  /**
   * The evidence ids this partition kept in earlier builds, when `inputs`
   * are only the chunks that came after them: an id seen there is a
   * duplicate here, as it would be were every chunk read again.
   */
  readonly seen?: CarriedIdsState | undefined;
  /**
   * Per VPA partition, earlier builds' records to copy ahead of this task's
   * own (carry.ts merges a partition's segments this way); absent or empty,
   * the part holds only this task's records.
   */
  readonly leading?: readonly Segments[] | undefined;
  /** `homes` of the ids in `seen` (DedupResult.homes); absent with `seen`. */
  readonly homes?: Uint16Array | undefined;
  /** Retracted evidence ids of this partition: a new one is kept as seen, its record dropped (NO_RECORD). */
  readonly retracted?: readonly string[] | undefined;
}

export interface DedupResult {
  /**
   * The kept records by VPA partition, in input order. Shared, not
   * transferred: a builder may keep them for the next build's aggregation.
   */
  readonly parts: SharedArrayBuffer[];
  readonly kept: number;
  readonly duplicates: number;
  /** Every id kept so far, `seen` included: the next build's `seen`. */
  readonly seen: CarriedIdsState;
  /** Per id of `seen`, the VPA partition its record went to, or NO_RECORD (carry.ts, BuildCarry.homes). */
  readonly homes: Uint16Array;
}

export function dedupPartition(task: DedupTask): DedupResult {
  const total = task.inputs.reduce((sum, input) => sum + input.byteLength, 0);
  const share = Math.max(64 * 1024, Math.ceil((total / task.partitions) * 1.1));
  const writers = Array.from({ length: task.partitions }, (_, q) => {
    const leading = task.leading?.[q] ?? [];
    const writer = new RecordWriter(share + leading.reduce((sum, records) => sum + records.byteLength, 0));
    for (const records of leading) writer.appendRaw(new Uint8Array(segmentBuffer(records)), 0, records.byteLength);
    return writer;
  });
  // Ids are compared as bytes: no string per record.
  const seen = task.seen === undefined ? new CarriedIds(Math.ceil(total / 100), Math.ceil(total / 4)) : CarriedIds.fromState(task.seen);
  try {
    return dedupInto(task, seen, writers);
  } finally {
    seen.close();
  }
}

function dedupInto(task: DedupTask, seen: CarriedIds, writers: RecordWriter[]): DedupResult {
  const records = task.inputs.reduce((sum, input) => sum + countRecords([input]), 0);
  const before = seen.size;
  const homes = new Uint16Array(before + records);
  if (task.homes !== undefined) homes.set(task.homes.subarray(0, before));
  const retracted = internedIds(task.retracted ?? []);
  let kept = 0;
  let duplicates = 0;
  for (const input of task.inputs) {
    const reader = new RecordReader(input);
    const raw = reader.raw;
    while (reader.next()) {
      const id = seen.intern(raw, reader.idStart, reader.rawEnd);
      if (!seen.added) {
        duplicates++;
        continue;
      }
      if (retracted !== null && retracted.find(raw, reader.idStart, reader.rawEnd) >= 0) {
        homes[id] = NO_RECORD;
        continue;
      }
      kept++;
      const q = partitionOfBytes(raw, reader.upiStart, reader.urlStart, task.partitions);
      homes[id] = q;
      writers[q]!.appendWithoutId(raw, reader.rawStart, reader.idStart);
    }
  }
  return { parts: writers.map((w) => w.finishShared()), kept, duplicates, seen: seen.compactState(), homes: homes.slice(0, seen.size) };
}

/** `ids` interned as UTF-8 bytes, or null when there are none. */
function internedIds(ids: readonly string[]): ByteInterner | null {
  if (ids.length === 0) return null;
  const interner = new ByteInterner(ids.length);
  for (const id of ids) {
    const bytes = Buffer.from(id, 'utf8');
    interner.intern(bytes, 0, bytes.length);
  }
  return interner;
}

/** The buffers of carried ids that move between threads by transfer (the frozen ids' bytes are shared memory, or a file). */
export function carriedIdsBuffers(state: CarriedIdsState): ArrayBuffer[] {
  const { recent, frozen } = state;
  return distinctBuffers([recent.table, recent.offsets, recent.bytes, ...(frozen === null ? [] : [frozen.starts, frozen.entries])]);
}

export interface AggregateTask {
  /** This VPA partition's deduplicated records, from every dedup task in id-partition order: in memory, or files read whole by the task. */
  readonly inputs: readonly (ArrayBufferLike | SpilledSegment)[];
  /** Reference time for recency weights. */
  readonly scoredAt: number;
  /** Records captured before this instant do not count (scoring.ts, countsFrom): skipped as if absent. Default: all count. */
  readonly countsFrom?: number;
  /**
   * Records of retracted items, skipped as if absent: `inputs` in runs, each
   * run's records numbered from 0 across its inputs, and the numbers to skip
   * in ascending order (carry-reader.ts, retractedOrdinals). Absent: none.
   */
  readonly skip?: readonly SkipRun[];
  /** Clearances in force for VPAs of this partition: their records that do not count are skipped. */
  readonly clearances?: readonly ClearanceEntry[];
}

/** A run of consecutive AggregateTask inputs and the ordinals of its records to skip. */
export interface SkipRun {
  readonly inputs: number;
  readonly ordinals: Uint32Array;
}


/**
 * One row per VPA of a partition, columnar. Sources of VPA i are
 * [sourceOffsets[i], sourceOffsets[i+1]), newest first.
 */
export interface AggregateResult {
  readonly vpaCount: number;
  /** Lower-cased keys, latin1/ASCII. */
  readonly keyBytes: Uint8Array;
  readonly keyOffsets: Uint32Array;
  readonly firstSeen: Float64Array;
  readonly evidenceCount: Uint32Array;
  readonly riskCategory: Uint8Array;
  /**
   * Σ recencyWeightUnits of the VPA's evidence items: a whole number, the
   * same whatever order the items were read in (scoring.ts, WEIGHT_UNITS).
   */
  readonly evidenceWeight: Float64Array;
  /** Bit i set when evidence from source category i names the VPA. */
  readonly categoryMask: Uint8Array;
  /**
   * The rows (ascending) of the VPAs whose evidence names two or more risk
   * categories; every other VPA's evidence is all of its `riskCategory`.
   */
  readonly mixedRisk: Uint32Array;
  /** Evidence items per risk category of each `mixedRisk` row: RISK_CATEGORIES.length counters per row. */
  readonly mixedRiskCounts: Uint32Array;
  readonly sourceOffsets: Uint32Array;
  /** Partition-local url id of each source, into urlBytes/urlOffsets. */
  readonly sourceUrl: Uint32Array;
  /** This partition's distinct urls (UTF-8). */
  readonly urlBytes: Uint8Array;
  readonly urlOffsets: Uint32Array;
  readonly sourceCapturedAt: Float64Array;
  readonly sourceScreenshot: Uint8Array;
  /** Evidence items per source category for each source: 4 counters per source. */
  readonly sourceCategoryCounts: Uint32Array;
}

const RISK_COUNT = RISK_CATEGORIES.length;
const SOURCE_COUNT = SOURCE_CATEGORIES.length;

/**
 * `scratch` supplies the working rows (about 80 bytes per record, and the
 * key and url tables), which die with the call; the result is in arrays of
 * its own, to be moved to the assembling thread.
 */
export function aggregatePartition(task: AggregateTask, scratch: ArrayAllocator = freshArrays): AggregateResult {
  // One function per pass, as in assemble.ts: V8 optimises a function with
  // several long loops one loop at a time and deoptimises at the next.
  const rows = gatherRows({ ...task, inputs: task.inputs.map(segmentBuffer) }, scratch);
  const n = rows.vpas.size;
  const keys = rows.vpas.finish();
  const urlTable = rows.urls.finish();
  const riskCategory = dominantRisks(rows.riskCounts, n);
  const mixed = mixedRisks(rows.riskCounts, n);
  const sources = orderSources(rows, n, urlTable, scratch);
  return {
    vpaCount: n,
    keyBytes: keys.bytes,
    keyOffsets: keys.offsets,
    firstSeen: rows.firstSeen.slice(0, n),
    evidenceCount: rows.evidenceCount.slice(0, n),
    riskCategory,
    evidenceWeight: rows.evidenceWeight.slice(0, n),
    categoryMask: rows.categoryMask.slice(0, n),
    mixedRisk: mixed.rows,
    mixedRiskCounts: mixed.counts,
    urlBytes: urlTable.bytes,
    urlOffsets: urlTable.offsets,
    ...sources,
  };
}

/** Per-VPA and per-source state of a partition, each array sized by its record count. */
interface Rows {
  readonly vpas: ByteInterner;
  readonly urls: ByteInterner;
  readonly firstSeen: Float64Array;
  readonly evidenceCount: Uint32Array;
  readonly evidenceWeight: Float64Array;
  readonly categoryMask: Uint8Array;
  readonly riskCounts: Uint32Array;
  /** Sources as a linked list per VPA: most VPAs have one to three, so a scan of url ids beats a composite key. */
  readonly sourceHead: Int32Array;
  readonly sourceNext: Int32Array;
  readonly sourceUrl: Uint32Array;
  readonly sourceCaptured: Float64Array;
  readonly sourceShot: Uint8Array;
  readonly sourceCounts: Uint32Array;
  readonly sources: number;
}

function countRecords(inputs: readonly ArrayBufferLike[]): number {
  let records = 0;
  for (const input of inputs) {
    const reader = new RecordReader(input);
    while (reader.next()) records++;
  }
  return records;
}

/** One pass over the records: keys and urls interned as bytes, each VPA's figures and sources. */
function gatherRows(task: AggregateTask & { readonly inputs: readonly ArrayBufferLike[] }, scratch: ArrayAllocator): Rows {
  const records = countRecords(task.inputs);
  const bytes = task.inputs.reduce((sum, input) => sum + input.byteLength, 0);
  const vpas = new ByteInterner(records, Math.ceil(bytes / 4), scratch);
  const urls = new ByteInterner(records, Math.ceil(bytes / 2), scratch);
  const firstSeen = scratch.zeroed(Float64Array, records);
  const evidenceCount = scratch.zeroed(Uint32Array, records);
  const evidenceWeight = scratch.zeroed(Float64Array, records);
  const categoryMask = scratch.zeroed(Uint8Array, records);
  const riskCounts = scratch.zeroed(Uint32Array, records * RISK_COUNT);
  const sourceHead = scratch.zeroed(Int32Array, records);
  const sourceNext = scratch.zeroed(Int32Array, records);
  const sourceUrl = scratch.zeroed(Uint32Array, records);
  const sourceCaptured = scratch.zeroed(Float64Array, records);
  const sourceShot = scratch.zeroed(Uint8Array, records);
  const sourceCounts = scratch.zeroed(Uint32Array, records * SOURCE_COUNT);
  let sources = 0;
  const countsFrom = task.countsFrom ?? Number.NEGATIVE_INFINITY;
  const skips = skipCursor(task.skip);
  const cleared = clearanceTable(task.clearances);

  for (const input of task.inputs) {
    const reader = new RecordReader(input);
    const raw = reader.raw;
    skips?.nextInput();
    while (reader.next()) {
      if (skips !== null && skips.skipsNext()) continue;
      const captured = reader.capturedAt;
      if (captured < countsFrom) continue;
      if (cleared !== null && !cleared.counts(raw, reader.upiStart, reader.urlStart, reader.idStart, captured)) continue;
      const vpa = vpas.intern(raw, reader.upiStart, reader.urlStart);
      if (vpas.added) {
        firstSeen[vpa] = Number.POSITIVE_INFINITY;
        sourceHead[vpa] = -1;
      }
      const flags = reader.flags;
      const sourceCategory = flags & 3;
      const riskCategory = (flags >> 2) & 7;
      if (captured < firstSeen[vpa]!) firstSeen[vpa] = captured;
      evidenceCount[vpa]!++;
      evidenceWeight[vpa]! += recencyWeightUnits(captured, task.scoredAt);
      categoryMask[vpa]! |= 1 << sourceCategory;
      riskCounts[vpa * RISK_COUNT + riskCategory]!++;

      const url = urls.intern(raw, reader.urlStart, reader.idStart);
      let source = sourceHead[vpa]!;
      while (source >= 0 && sourceUrl[source] !== url) source = sourceNext[source]!;
      if (source < 0) {
        source = sources++;
        sourceUrl[source] = url;
        sourceCaptured[source] = captured;
        sourceNext[source] = sourceHead[vpa]!;
        sourceHead[vpa] = source;
      } else if (captured > sourceCaptured[source]!) {
        sourceCaptured[source] = captured;
      }
      if ((flags & FLAG_SCREENSHOT) !== 0) sourceShot[source] = 1;
      sourceCounts[source * SOURCE_COUNT + sourceCategory]!++;
    }
  }
  return {
    vpas, urls, firstSeen, evidenceCount, evidenceWeight, categoryMask, riskCounts,
    sourceHead, sourceNext, sourceUrl, sourceCaptured, sourceShot, sourceCounts, sources,
  };
}

/** Walks AggregateTask.skip beside the records: whether each record in turn is one to skip. */
interface SkipCursor {
  nextInput(): void;
  skipsNext(): boolean;
}

function skipCursor(runs: readonly SkipRun[] | undefined): SkipCursor | null {
  if (runs === undefined || runs.every((run) => run.ordinals.length === 0)) return null;
  let run = -1;
  let inputsLeft = 0;
  let ordinal = 0;
  let at = 0;
  let ordinals: Uint32Array = new Uint32Array(0);
  return {
    nextInput() {
      // Runs of zero inputs hold no records.
      while (inputsLeft === 0 && run + 1 < runs.length) {
        run++;
        inputsLeft = runs[run]!.inputs;
        ordinals = runs[run]!.ordinals;
        ordinal = 0;
        at = 0;
      }
      inputsLeft--;
    },
    skipsNext() {
      const skip = at < ordinals.length && ordinals[at] === ordinal;
      if (skip) at++;
      ordinal++;
      return skip;
    },
  };
}

function dominantRisks(riskCounts: Uint32Array, n: number): Uint8Array {
  const riskCategory = new Uint8Array(n);
  for (let i = 0; i < n; i++) riskCategory[i] = dominant(riskCounts, i * RISK_COUNT, RISK_COUNT, RISK_RANK);
  return riskCategory;
}

/** The VPAs whose evidence names more than one risk category, with their counts; two passes, so the result is exact in size. */
function mixedRisks(riskCounts: Uint32Array, n: number): { rows: Uint32Array; counts: Uint32Array } {
  let mixed = 0;
  for (let i = 0; i < n; i++) if (isMixed(riskCounts, i * RISK_COUNT)) mixed++;
  const rows = new Uint32Array(mixed);
  const counts = new Uint32Array(mixed * RISK_COUNT);
  let k = 0;
  for (let i = 0; i < n && k < mixed; i++) {
    if (!isMixed(riskCounts, i * RISK_COUNT)) continue;
    rows[k] = i;
    counts.set(riskCounts.subarray(i * RISK_COUNT, (i + 1) * RISK_COUNT), k * RISK_COUNT);
    k++;
  }
  return { rows, counts };
}

/** Whether more than one of the RISK_COUNT counters from `offset` is non-zero. */
function isMixed(riskCounts: Uint32Array, offset: number): boolean {
  let nonZero = 0;
  for (let c = 0; c < RISK_COUNT; c++) if (riskCounts[offset + c] !== 0) nonZero++;
  return nonZero > 1;
}

/** Sources of each VPA, newest first; equal captures by url bytes so the order never depends on arrival. */
function orderSources(rows: Rows, n: number, urlTable: { bytes: Uint8Array; offsets: Uint32Array }, scratch: ArrayAllocator) {
  const { sourceHead, sourceNext, sourceUrl, sourceCaptured, sourceShot, sourceCounts, sources } = rows;
  const urlBytes = urlTable.bytes;
  const urlOffsets = urlTable.offsets;
  const newestFirst = (a: number, b: number) =>
    sourceCaptured[b]! - sourceCaptured[a]! ||
    compareByteRanges(
      urlBytes, urlOffsets[sourceUrl[a]!]!, urlOffsets[sourceUrl[a]! + 1]!,
      urlBytes, urlOffsets[sourceUrl[b]!]!, urlOffsets[sourceUrl[b]! + 1]!,
    );
  const sourceOffsets = new Uint32Array(n + 1);
  const order = scratch.zeroed(Uint32Array, sources);
  let filled = 0;
  for (let i = 0; i < n; i++) {
    sourceOffsets[i] = filled;
    const from = filled;
    for (let s = sourceHead[i]!; s >= 0; s = sourceNext[s]!) order[filled++] = s;
    if (filled - from > 1) order.subarray(from, filled).sort(newestFirst);
  }
  sourceOffsets[n] = filled;

  const outUrl = new Uint32Array(sources);
  const outCaptured = new Float64Array(sources);
  const outShot = new Uint8Array(sources);
  const outCounts = new Uint32Array(sources * SOURCE_COUNT);
  for (let k = 0; k < sources; k++) {
    const s = order[k]!;
    outUrl[k] = sourceUrl[s]!;
    outCaptured[k] = sourceCaptured[s]!;
    outShot[k] = sourceShot[s]!;
    for (let c = 0; c < SOURCE_COUNT; c++) outCounts[k * SOURCE_COUNT + c] = sourceCounts[s * SOURCE_COUNT + c]!;
  }
  return { sourceOffsets, sourceUrl: outUrl, sourceCapturedAt: outCaptured, sourceScreenshot: outShot, sourceCategoryCounts: outCounts };
}

/** Every transferable buffer of an aggregate result, for moving it between threads. */
export function aggregateBuffers(result: AggregateResult): ArrayBuffer[] {
  return distinctBuffers([
    result.keyBytes,
    result.keyOffsets,
    result.firstSeen,
    result.evidenceCount,
    result.riskCategory,
    result.evidenceWeight,
    result.categoryMask,
    result.mixedRisk,
    result.mixedRiskCounts,
    result.sourceOffsets,
    result.sourceUrl,
    result.urlBytes,
    result.urlOffsets,
    result.sourceCapturedAt,
    result.sourceScreenshot,
    result.sourceCategoryCounts,
  ]);
}

/** Every buffer of an index, for moving it between threads. */
export function indexBuffers(arrays: IndexArrays): ArrayBuffer[] {
  return distinctBuffers([arrays.slotTags, arrays.slotEntries, arrays.keyTails, arrays.vpaSlots]);
}

/**
 * The buffers under `arrays` to transfer, each once (a transfer list may not
 * name one twice). Shared memory is left out: it is passed by reference, and
 * a transfer list may not name it at all.
 */
function distinctBuffers(arrays: readonly ArrayBufferView[]): ArrayBuffer[] {
  return [...new Set(arrays.map((array) => array.buffer))].filter((buffer): buffer is ArrayBuffer => buffer instanceof ArrayBuffer);
}
