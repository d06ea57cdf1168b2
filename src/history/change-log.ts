import { mkdir, open, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { readAllAt, syncDirectory, tempFileName, writeAllAt } from '../common/atomic-file.js';
import { formatOf, openHistoryFile } from './history-file.js';
import { crc32 } from 'node:zlib';
import { crcOfFile } from '../common/file-crc.js';
import { HistoryError, messageOf } from '../common/errors.js';
import { RISK_CATEGORIES } from '../vpa/categories.js';
import { CHANGE_CAUSES, type ChangeCause, type ChangeEntry } from '../api/history-paths.js';
import { confidenceBand, type ConfidenceBand } from '../api/advice.js';
import { CONFIDENCE_SCALE } from '../engine/snapshot-data.js';
import { formatClusterId } from '../engine/verdict.js';
import { formatIso } from '../common/time.js';
import { FactsIndex, RECORD_ALIGN, hashA, hashB, roomFor, type IndexedAnswer } from './facts-index.js';
import { MAX_DETAIL_BYTES, decodeDetail, encodeDetail, type AnswerDetail } from './answer-detail.js';
import { NO_SCORE, ScoreColumns } from './score-columns.js';
import { dropFactsIndex, filesSummary, keepFactsIndex, readFactsIndex, type ComparedMark, type IndexCovering } from './facts-index-file.js';

/**
 * The record of how each VPA's answer changed: every change of any field
 * of it, with the instant and data version that first served it and why
 * (`ChangeCause`), so that the answer served at any instant can be told
 * again byte for byte (GET /v1/verify/upi?as_of=, docs/api.md) and the
 * changes of its status, risk category, confidence band or cluster listed
 * (GET /v1/verify/upi/history). The confidence a snapshot of a new scoring
 * day gives every VPA is kept apart, a column a day (score-columns.ts).
 * The embedded server keeps both in its data directory,
 * `DIR/history/changes.log` and `DIR/history/scores/`, written and synced
 * before the state that makes the changes is served (answer-changes.ts
 * finds them).
 *
 * Each VPA's records are chained newest to oldest, and an index in memory
 * (typed arrays, open addressing on a 64-bit hash of the VPA) holds each
 * VPA's newest record and the answer it records, so that finding what
 * changed compares in memory and a VPA's history is read in one walk of its
 * chain. The index is made again at open by one pass over the file, or
 * read from the copy a clean close keeps beside it (facts-index-file.ts),
 * with the records after that copy.
 *
 * Layout, little endian: a 24-byte header, then records of 56 bytes, the
 * VPA, the data version and the rest of the answer, padded with zeros to a
 * multiple of 8 bytes (the index keeps a record's place in 8-byte units, in
 * 32 bits).
 *
 *   header   0   8  magic "UPIRCHNG"
 *            8   4  format version, u32 (2)
 *           12   4  0
 *           16   8  when its first state began to be served, epoch ms, f64 (0: none yet): nothing before is told
 *   record   0   4  CRC-32 of the record's bytes from 4 on
 *            4   4  the record's length with its padding, u32
 *            8   1  cause, 1 to CHANGE_CAUSES.length
 *            9   1  bit 0: FLAGGED; bits 1-3: risk category + 1 (0: none)
 *           10   1  the VPA's length, 1 to 255
 *           11   1  the data version's length, 1 to 255
 *           12   2  confidence × 10,000, u16 (0xffff: none)
 *           14   2  0
 *           16   8  at, epoch ms, f64: when the state that made the change began to be served
 *           24   8  where the VPA's record before this one starts, f64 (-1: none)
 *           32   4  cluster number, u32 (0: none)
 *           36   4  the VPA's number (facts-index.ts), u32
 *           40   8  the fingerprint of the answer's detail, two u32 (0 and 0: CLEARED)
 *           48   4  the detail's length, u32 (0: CLEARED)
 *           52   4  0
 *           56      the VPA (lower case, ASCII), the data version (ASCII), the
 *                   detail (MessagePack, answer-detail.ts), then 0 to 7 zeros
 *
 * A record that fails its CRC, or one this service would not write, is
 * refused with HistoryError. So is a file cut inside its header; a last
 * record cut short is the write a crash interrupted, and is cut off. Records
 * of a state never served (written, then the process ended before the
 * record of versions took the state) are cut off at open: `servedUntil`.
 */


/** A VPA's answer, as far as its history tells it. */
export interface AnswerFacts {
  readonly flagged: boolean;
  /** Index into RISK_CATEGORIES, -1 for none (CLEARED). */
  readonly risk: number;
  /** Confidence × CONFIDENCE_SCALE, -1 for none (CLEARED). */
  readonly confidence: number;
  /** The cluster's number (MC-<number>), 0 for none. */
  readonly cluster: number;
  /** The fingerprint of the rest of the answer (answer-detail.ts, detailPrint); 0 and 0 when CLEARED. */
  readonly printA: number;
  readonly printB: number;
  /** The rest of the answer, made when the change is recorded; null when CLEARED. */
  readonly detail: (() => AnswerDetail) | null;
}

export const CLEARED_FACTS: AnswerFacts = { flagged: false, risk: -1, confidence: -1, cluster: 0, printA: 0, printB: 0, detail: null };

/**
 * What a change is told by in the history of a VPA, in 6 bits: bit 0
 * FLAGGED, bits 1-3 risk + 1, bits 4-5 the advice band (0 CLEARED, 1 low,
 * 2 medium, 3 high). With the cluster, what GET /v1/verify/upi/history
 * lists a change of.
 */
export function toldOf(facts: { readonly flagged: boolean; readonly risk: number; readonly confidence: number }): number {
  if (!facts.flagged) return 0;
  const band = BAND_CODES[confidenceBand('FLAGGED', facts.confidence / CONFIDENCE_SCALE)];
  return (band << 4) + ((facts.risk + 1) << 1) + 1;
}

const BAND_CODES: Readonly<Record<ConfidenceBand, number>> = { cleared: 0, low: 1, medium: 2, high: 3 };

/** Whether the answer told by `told` is FLAGGED. */
export function toldFlagged(told: number | null): boolean {
  return told !== null && told % 2 === 1;
}

/** What the index holds of `facts`. */
export function indexedOf(facts: AnswerFacts): IndexedAnswer {
  return { told: toldOf(facts), printA: facts.printA, printB: facts.printB, confidence: facts.flagged ? facts.confidence : NO_SCORE };
}

/** A state's changes written (ChangeLog.commit): its records are the file's bytes from `start` to `end`. */
export interface CommittedState {
  readonly at: number;
  readonly version: string;
  readonly start: number;
  readonly end: number;
  /** The column it wrote, with its scoring day: the confidence of every VPA by number. */
  readonly column: { readonly scoredAt: number; readonly values: Uint16Array } | null;
}

/** An answer as it was served at an instant (ChangeLog.answerAt): null fields when CLEARED. */
export interface PastAnswer {
  readonly facts: AnswerFacts;
  readonly detail: AnswerDetail | null;
}

const MAGIC = 'UPIRCHNG';
const FORMAT_VERSION = 2;
const HEADER_LENGTH = 24;
/** Where a log's first record starts: after its header. */
export const CHANGE_LOG_HEADER_BYTES = HEADER_LENGTH;
const FIXED_LENGTH = 56;
/** The shortest record: a VPA and a data version of one byte each, padded. */
const MIN_RECORD_LENGTH = paddedLength(1, 1, 0);
const MAX_TEXT = 255;
/** The longest record, padding included. */
const MAX_RECORD = FIXED_LENGTH + 2 * MAX_TEXT + MAX_DETAIL_BYTES + 8;
/** Records read at a time at open. */
const SCAN_BYTES = 1 << 20;
/** Records are handed to the file once this many bytes are waiting. */
const FLUSH_BYTES = 4 << 20;
/** Room for the records of a run: most are under a kilobyte; one longer than the room (an answer of hundreds of sources) is handed to the file on its own. */
const MAX_RECORD_RUN = 64 << 10;

/** Room for the records of one state's runs, not zeroed (RecordRuns). */
function runBuffer(): Buffer {
  return Buffer.allocUnsafeSlow(FLUSH_BYTES + MAX_RECORD_RUN);
}

interface StateWriting {
  /** The file's size when the state began. */
  readonly start: number;
  readonly at: number;
  readonly version: Buffer;
  /** The state's records, on their way to the file. */
  readonly runs: RecordRuns;
  /** Whether a record of the state replaced an earlier one of its VPA. */
  replaced: boolean;
}

/**
 * Records handed to a file in runs of a few megabytes, in order, from a
 * place on: each is put in `buffer` at `filled`, then `added`. What is
 * waiting is copied out at each run, so the buffer is reused at once; a
 * writer that adds faster than the file takes them awaits `room()` between
 * its turns, so that the runs waiting never pile up in memory.
 */
class RecordRuns {
  readonly buffer: Buffer;
  /** Bytes of `buffer` not yet handed to the file. */
  filled = 0;
  readonly #file: FileHandle;
  /** Where the bytes waiting in `buffer` go. */
  #at: number;
  /** The runs handed so far, in order. */
  #written: Promise<void> = Promise.resolve();
  /** The runs handed before the last one. */
  #writtenBefore: Promise<void> = Promise.resolve();
  /**
   * Runs from `at` on, put in `buffer` (runBuffer()), which no other runs
   * use meanwhile; every byte `reserve` gives is written by the caller, so
   * it need not start zeroed.
   */
  constructor(file: FileHandle, at: number, buffer = runBuffer()) {
    this.#file = file;
    this.#at = at;
    this.buffer = buffer;
  }

  /** A record written whole on its own: longer than the buffer holds. */
  #large: Buffer | null = null;

  /** Where to put a record of `length` bytes, then `added(length)`. */
  reserve(length: number): Buffer {
    if (this.filled + length > this.buffer.length) this.#run();
    if (length <= this.buffer.length) return this.buffer.subarray(this.filled, this.filled + length);
    this.#large = Buffer.alloc(length);
    return this.#large;
  }

  /** The record of `length` bytes `reserve` gave was put. */
  added(length: number): void {
    const large = this.#large;
    if (large !== null) {
      this.#large = null;
      this.#hand(large);
      return;
    }
    this.filled += length;
    if (this.filled >= FLUSH_BYTES) this.#run();
  }

  /** Every record added, written: resolves once the writes are done (not synced). */
  async done(): Promise<void> {
    this.#run();
    await this.#written;
  }

  /** Resolves when the runs handed so far are written or have failed. */
  settled(): Promise<void> {
    return this.#written.catch(() => {});
  }

  /** Resolves when at most one run is being written (a failure is told by `done`). */
  room(): Promise<void> {
    return this.#writtenBefore.catch(() => {});
  }

  #run(): void {
    if (this.filled === 0) return;
    const bytes = Buffer.from(this.buffer.subarray(0, this.filled));
    this.filled = 0;
    this.#hand(bytes);
  }

  #hand(bytes: Buffer): void {
    const at = this.#at;
    this.#at += bytes.length;
    this.#writtenBefore = this.#written;
    this.#written = this.#written.then(() => writeAllAt(this.#file, [bytes], at));
  }
}

export class ChangeLog {
  readonly #path: string;
  #handle: FileHandle;
  #index: FactsIndex;
  /** The file the index's rows live in between passes (answer-slots.ts), the index's own: made again at each open. */
  readonly #rowsFile: FileHandle;
  /** The runs of the state being written: one buffer for every state, as they are written one at a time. */
  #runBuffer: Buffer | null = null;
  readonly #columns: ScoreColumns;
  /** When the first state it records began to be served (its header; 0 until then): no answer before is told. */
  #startedAt: number;
  /** When a record first replaced an earlier one of its VPA (Infinity: none): a prune drops records only once this is past its cutoff. */
  #replacedAt: number;
  #size: number;
  #lastAt: number;
  /** The state being written, between begin and commit. */
  #writing: StateWriting | null = null;
  /** Why the log refuses everything, after a write failed. */
  #broken: string | null = null;
  /** Resolves when no state is being written: a history read waits for the one under way. */
  #committed: Promise<void> = Promise.resolve();
  #release: () => void = () => {};
  /** How the open read the file. */
  readonly opened: LogOpened;
  /** The last state whose every VPA was compared, as far as this file tells; null when unknown. */
  #mark: ComparedMark | null;

  private constructor(path: string, handle: FileHandle, index: FactsIndex, rowsFile: FileHandle, columns: ScoreColumns, scan: LogScan, opened: LogOpened, mark: ComparedMark | null) {
    this.#path = path;
    this.#handle = handle;
    this.#index = index;
    this.#rowsFile = rowsFile;
    index.spillTo(rowsFile.fd);
    this.#columns = columns;
    this.#startedAt = scan.startedAt;
    this.#size = scan.size;
    this.#lastAt = scan.lastAt;
    this.#replacedAt = scan.replacedAt;
    this.opened = opened;
    this.#mark = mark;
  }

  /**
   * Open (or create) the log at `path`; HistoryError when it is not one this
   * service wrote. Records after `servedUntil` (epoch ms: the last instant
   * the record of versions served holds) are of a state never served, and
   * are cut off.
   */
  static async open(path: string, servedUntil: number): Promise<ChangeLog> {
    const movedAside = await moveAsideFormat1(path);
    const columns = await ScoreColumns.open(join(dirname(path), 'scores'), servedUntil);
    return openHistoryFile(path, async (handle) => {
      const { size, startedAt } = await checkedHead(handle, path);
      // The index a clean close kept, when it holds what the file still holds: then only the records after it are read.
      const kept = await readFactsIndex(path, HEADER_LENGTH);
      const why = kept === null ? null : 'refused' in kept ? kept.refused : await mismatch(handle, size, servedUntil, kept.covering);
      const usable = kept !== null && why === null && !('refused' in kept) ? kept : null;
      const index = usable?.index ?? new FactsIndex();
      const c = usable?.covering;
      const from: LogScan =
        c === undefined
          ? { size: HEADER_LENGTH, lastAt: 0, replacedAt: Number.POSITIVE_INFINITY, startedAt }
          : { size: c.covered, lastAt: c.lastAt, replacedAt: c.replacedAt, startedAt };
      // A record's confidence is the served one unless a column came after it: one written after the kept index (and
      // a crash before the next close) is taken into it first, then the records after it are read.
      const latest = columns.at(Number.POSITIVE_INFINITY);
      const column = latest !== null && (usable === null || latest.at > usable.covering.columnAt) ? { at: latest.at, values: await columns.values(latest) } : null;
      if (usable !== null && column !== null) index.takeConfidences(column.values, NO_SCORE);
      const scan = await scanLog(handle, path, index, servedUntil, from, size, column);
      const opened = { keptIndex: usable !== null, indexRefused: why, bytesRead: scan.size - (usable?.covering.covered ?? HEADER_LENGTH), movedAside };
      let rowsFile;
      try {
        rowsFile = await open(rowsPathOf(path), 'w+');
      } catch (error) {
        throw new HistoryError(`${rowsPathOf(path)} cannot be made (${(error as Error).message})`, { cause: error });
      }
      return new ChangeLog(path, handle, index, rowsFile, columns, scan, opened, usable?.mark ?? null);
    });
  }

  /** VPAs with a record. */
  get vpaCount(): number {
    return this.#index.count;
  }

  /** Bytes of the file. */
  get bytes(): number {
    return this.#size;
  }

  /** Bytes of the index of each VPA's newest record, in memory. */
  get indexBytes(): number {
    return this.#index.bytes;
  }

  /**
   * Hold the whole index in memory for a pass over every VPA (a snapshot
   * compared), until the function it resolves to is called; between passes
   * most of it is on file. A prune meanwhile replaces the index: the one
   * held is let go then, and its release does nothing more.
   */
  async holdIndex(): Promise<() => void> {
    const index = this.#index;
    await index.hold();
    return () => index.release();
  }

  get path(): string {
    return this.#path;
  }

  /** Why the log refuses everything (a write failed, or a prune could not open the file again), or null. */
  get broken(): string | null {
    return this.#broken;
  }

  /** When the first state recorded began to be served, epoch ms (0: none yet). */
  get startedAt(): number {
    return this.#startedAt;
  }

  /** When the last state recorded began to be served, epoch ms (0: none). */
  get lastAt(): number {
    return this.#lastAt;
  }

  /** When a record first replaced an earlier one of its VPA, epoch ms (Infinity with none): the records a prune at a cutoff after it would drop. */
  get replacedAt(): number {
    return this.#replacedAt;
  }

  /** What the answer last recorded for `key` (lower case) tells (toldOf), or null when it has none. */
  latest(key: string): number | null {
    return this.#index.told(this.numberOf(key));
  }

  /** The number of `key` (lower case; text, or ASCII bytes from `start` to `end`), -1 when it has no record. */
  numberOf(key: string | Uint8Array, start = 0, end = key.length): number {
    return this.#index.findHashed(hashA(key, start, end), hashB(key, start, end));
  }

  /** toldOf the answer of VPA `number`, null for -1 (none). */
  toldAt(number: number): number | null {
    return this.#index.told(number);
  }

  /**
   * Whether `after` is a change from the answer of VPA `number` (-1: none,
   * as CLEARED). Its confidence counts with `withConfidence`; without, it is
   * a new snapshot's score, which its column keeps (`setServedConfidence`).
   */
  differs(number: number, after: AnswerFacts, withConfidence: boolean): boolean {
    return this.#index.differs(number, indexedOf(after), withConfidence);
  }

  /** The confidence VPA `number` is served with from the state begun, which its column keeps. */
  setServedConfidence(number: number, confidence: number): void {
    this.#index.setConfidence(number, confidence);
  }

  /** setServedConfidence for each VPA numbered below `byNumber.length` that it holds a confidence for (not NO_SCORE). */
  takeServedConfidences(byNumber: Uint16Array): void {
    this.#index.takeConfidences(byNumber, NO_SCORE);
  }

  /** The scoring day of the newest column (the confidences the log holds apart), null with none. */
  get scoredAt(): number | null {
    return this.#columns.scoredAt;
  }

  /** Make room in the index for `vpas` VPAs in all, when it holds fewer (a pass that will record them is beginning). */
  expectVpas(vpas: number): void {
    this.#index.reserve(vpas);
  }

  /** VPAs numbered so far: the length of a column. */
  get numbered(): number {
    return this.#index.count;
  }

  /**
   * Mark every VPA unseen; `seen(key)` then marks one, and `unseenFlagged`
   * lists the ones recorded FLAGGED that no pass marked: a state that no
   * longer holds them answers them CLEARED.
   */
  startPass(): void {
    this.#index.startPass();
  }

  /** numberOf `key`, marked seen in the pass under way. */
  seen(key: string | Uint8Array, start = 0, end = key.length): number {
    const number = this.numberOf(key, start, end);
    if (number >= 0) this.#index.mark(number);
    return number;
  }

  /** The VPAs recorded FLAGGED and not seen in this pass, read from their newest records. */
  async unseenFlagged(): Promise<string[]> {
    const keys: string[] = [];
    for (const offset of this.#index.unseenFlaggedOffsets()) keys.push((await this.#read(offset)).key);
    return keys;
  }

  /**
   * Begin the changes of one state, served from `at` (never before the last
   * recorded) as `version`: `add` each, then `commit`. One state at a time.
   * The index takes each change as it is added, and the records go to the
   * file a few megabytes at a time, so a state changing every VPA holds
   * little more than its index in memory. A write that fails is cut off
   * again, and the log refuses everything (HistoryError) until it is opened
   * again, which finds what was written before.
   */
  begin(at: number, version: string): void {
    this.#usable();
    if (this.#writing !== null) throw new RangeError('the changes of one state are being written already');
    this.#committed = new Promise((resolve) => (this.#release = resolve));
    this.#writing = { start: this.#size, at: Math.max(at, this.#lastAt), version: asciiOf(version, 'data version'), runs: new RecordRuns(this.#handle, this.#size, (this.#runBuffer ??= runBuffer())), replaced: false };
  }

  /** A change of `key` (lower case) to `facts`, for `cause`, in the state begun. */
  add(key: string, facts: AnswerFacts, cause: ChangeCause): void {
    const w = this.#writing;
    if (w === null) throw new RangeError('no state begun');
    checkKey(key);
    const found = this.#index.find(key);
    const offset = this.#size;
    const detail = facts.detail === null ? null : encodeDetail(facts.detail());
    const length = paddedLength(key.length, w.version.length, detail?.length ?? 0);
    if (found >= 0) w.replaced = true;
    // A new VPA takes the next number.
    encodeRecord(w.runs.reserve(length), key, facts, detail, cause, w.at, found < 0 ? -1 : this.#index.offsetAt(found), w.version, found < 0 ? this.#index.count : found);
    this.#index.put(key, offset, indexedOf(facts));
    this.#size += length;
    w.runs.added(length);
  }

  /**
   * Resolves when the records of the state begun are no more than a run
   * ahead of the file: a caller adding many changes awaits it between its
   * turns (each turn adds a few megabytes at most).
   */
  drained(): Promise<void> {
    return this.#writing?.runs.room() ?? Promise.resolve();
  }

  /**
   * Write what the state begun added, and sync it, with the column of the
   * confidence every VPA is served with when the state serves a snapshot of
   * a new scoring day (`scoredAt`, the start of that day); resolves once
   * both are durable.
   */
  async commit(scoredAt: number | null = null): Promise<CommittedState> {
    const w = this.#writing;
    if (w === null) throw new RangeError('no state begun');
    const first = this.#startedAt === 0;
    const column = scoredAt === null ? null : { scoredAt, values: this.#index.confidenceByNumber() };
    try {
      await w.runs.done();
      if (this.#size > w.start) await this.#handle.datasync();
      // The first state names the instant the history begins at (in place: the log's own handle appends).
      if (first) await writeHeader(this.#path, w.at);
      if (column !== null) await this.#columns.write(w.at, column.scoredAt, column.values);
    } catch (error) {
      this.#broken = `${this.#path} could not be written (${(error as Error).message}); the history of answers is not read nor written until the server is restarted`;
      await this.#handle.truncate(w.start).catch(() => {});
      // A column renamed into place before the failure is of a state never served.
      await this.#columns.discard(w.at).catch(() => {});
      throw new HistoryError(this.#broken, { cause: error });
    } finally {
      this.#writing = null;
      this.#release();
    }
    this.#lastAt = w.at;
    if (first) this.#startedAt = w.at;
    if (w.replaced) this.#replacedAt = Math.min(this.#replacedAt, w.at);
    return { at: w.at, version: w.version.toString('latin1'), start: w.start, end: this.#size, column };
  }

  /**
   * Hand the records from `start` to `end` (a CommittedState's) to `take`,
   * a run of whole records at a time (copies, about a megabyte each), in
   * order; each run is taken before the next is read.
   */
  async recordRuns(start: number, end: number, take: (records: Buffer[]) => Promise<void>): Promise<void> {
    this.#usable();
    let run: Buffer[] = [];
    const hand = async () => {
      if (run.length === 0) return;
      const taken = run;
      run = [];
      await take(taken);
    };
    const stopped = await walkRecords(
      this.#handle,
      this.#path,
      start,
      end,
      (bytes, _offset, length) => {
        run.push(Buffer.from(bytes.subarray(0, length)));
        return true;
      },
      hand,
    );
    if (stopped !== end) throw new HistoryError(`${this.#path}: no whole record at ${stopped}, before ${end}`);
    await hand();
  }

  /**
   * Write a log at `path` in place of any there, begun at `startedAt`, that
   * holds `records` (each VPA's newest up to `until`, as a copy kept
   * elsewhere holds them: store/answer-history-store.ts) with `column`, the newest column of the
   * confidences, in place of the columns there: a writer taking over the
   * history from that copy compares with what it tells. Records keep their
   * numbers, times, versions and causes; each is its VPA's only one.
   */
  static async seed(
    path: string,
    startedAt: number,
    until: number,
    records: AsyncIterable<readonly DecodedStoredRecord[]>,
    column: { readonly at: number; readonly scoredAt: number; readonly values: Uint16Array } | null,
  ): Promise<void> {
    const temp = join(dirname(path), tempFileName(basename(path)));
    const scores = join(dirname(path), 'scores');
    const seededScores = join(dirname(path), 'scores-seeded');
    await mkdir(dirname(path), { recursive: true });
    let copy: FileHandle | null = await open(temp, 'w');
    try {
      const runs = new RecordRuns(copy, HEADER_LENGTH);
      await writeAllAt(copy, [header(startedAt)], 0);
      // The VPAs' numbers are their places in the columns: each once, 0 to the count less one. Checked once all are in, in
      // memory that grows with the records read, never with a number a damaged row claims.
      let numbers: Uint32Array = new Uint32Array(1 << 10);
      let count = 0;
      for await (const run of records) {
        for (const { bytes, record: read } of run) {
          // The bytes decoded (their CRC, number and time), of a state up to `until`: a record is made the ground of every comparison after.
          if (bytes.readUInt32LE(0) !== crc32(bytes.subarray(4)) || bytes.readUInt32LE(36) !== read.number || bytes.readDoubleLE(16) !== read.at) {
            throw new HistoryError(`the record of ${JSON.stringify(read.key)} is not the bytes it was decoded from`);
          }
          if (read.at > until) throw new HistoryError(`a record of a state after ${until} is not the history that ends then`);
          if (count === numbers.length) numbers = grownTo(numbers, count + 1);
          numbers[count++] = read.number;
          const record = runs.reserve(bytes.length);
          bytes.copy(record);
          record.writeDoubleLE(-1, 24);
          record.writeUInt32LE(crc32(record.subarray(4)), 0);
          runs.added(bytes.length);
        }
        await runs.room();
      }
      checkNumbering(numbers.subarray(0, count));
      if (column !== null && column.values.length > count) throw new HistoryError(`a column of ${column.values.length} VPAs beside the records of ${count}`);
      await runs.done();
      await copy.datasync();
      await copy.close();
      copy = null;
      // The column is written beside the log's, so that a write that fails leaves the log and its columns as they were.
      await rm(seededScores, { recursive: true, force: true });
      if (column !== null) await (await ScoreColumns.open(seededScores, Number.POSITIVE_INFINITY)).write(column.at, column.scoredAt, column.values);
      // The old log goes first: a seed cut short from here leaves no log to be taken for the store's, and is made again.
      await dropFactsIndex(path);
      await rm(path, { force: true });
      await rm(scores, { recursive: true, force: true });
      if (column !== null) await rename(seededScores, scores);
      await rename(temp, path);
    } catch (error) {
      await copy?.close().catch(() => {});
      await unlink(temp).catch(() => {});
      await rm(seededScores, { recursive: true, force: true }).catch(() => {});
      throw new HistoryError(`cannot write ${path}: ${(error as Error).message}`, { cause: error });
    }
    await syncDirectory(dirname(path));
  }

  /**
   * Drop the changes replaced before `cutoff` (epoch ms): of each VPA's
   * records before it, all but the newest, which tells its answer at the
   * cutoff (and, for a VPA without a later one, now). A history within the
   * retention needs none of them. So with the columns. The file is copied
   * without them, beside it, and the copy takes its place; meanwhile no
   * state is begun and history reads wait. A copy that fails is removed and
   * the log goes on as it was; returns the records dropped.
   */
  async prune(cutoff: number): Promise<number> {
    this.#usable();
    if (this.#writing !== null) throw new RangeError('a state is being written');
    const temp = join(dirname(this.#path), tempFileName(basename(this.#path)));
    this.#committed = new Promise((resolve) => (this.#release = resolve));
    let copy: FileHandle | null = null;
    let replaced = false;
    // Every record is copied with its VPA's served confidence: the index whole in memory. Once the copy takes the
    // file's place, its own index does, and this one is dropped (held: it no longer moves to the rows' file).
    const index = this.#index;
    let held = false;
    try {
      await index.hold();
      held = true;
      copy = await open(temp, 'w');
      const head = header(this.startedAt);
      await writeAllAt(copy, [head], 0);
      // Each VPA's newest record before the cutoff, by its number, in 8-byte units + 1 (0: none).
      const newestBefore = new Float64Array(this.#index.count);
      await walkRecords(this.#handle, this.#path, HEADER_LENGTH, this.#size, (bytes, offset) => {
        if (bytes.readDoubleLE(16) < cutoff) newestBefore[bytes.readUInt32LE(36)] = offset / RECORD_ALIGN + 1;
        return true;
      });
      const kept = new FactsIndex(null, roomFor(this.#index.count));
      const runs = new RecordRuns(copy, HEADER_LENGTH);
      let size = HEADER_LENGTH;
      let dropped = 0;
      let replacedAt = Number.POSITIVE_INFINITY;
      const copied = (bytes: Buffer, offset: number, length: number): boolean => {
        const [a, b] = recordHashes(bytes);
        const at = bytes.readDoubleLE(16);
        const number = bytes.readUInt32LE(36);
        if (at < cutoff && newestBefore[number] !== offset / RECORD_ALIGN + 1) {
          dropped++;
          return true;
        }
        // Copied with its chain to the VPA's record kept before it.
        const record = runs.reserve(length);
        bytes.copy(record, 0, 0, length);
        const before = kept.findHashed(a, b);
        record.writeDoubleLE(before < 0 ? -1 : kept.offsetAt(before), 24);
        record.writeUInt32LE(crc32(record.subarray(4)), 0);
        // The served confidence of the VPA stays the one the log's index holds.
        kept.putHashed(a, b, size, { ...indexedIn(record), confidence: this.#index.confidenceAt(number) }, number);
        if (before >= 0) replacedAt = Math.min(replacedAt, at);
        size += length;
        runs.added(length);
        return true;
      };
      await walkRecords(this.#handle, this.#path, HEADER_LENGTH, this.#size, copied, () => runs.room());
      if (kept.count !== this.#index.count) throw new HistoryError(`${this.#path} holds ${kept.count} VPAs once copied, not ${this.#index.count}`);
      await runs.done();
      await copy.datasync();
      await copy.close();
      copy = null;
      // The kept index names places in the file as it was.
      await dropFactsIndex(this.#path);
      await rename(temp, this.#path);
      replaced = true;
      await syncDirectory(dirname(this.#path));
      await this.#handle.close();
      this.#handle = await open(this.#path, 'a+');
      // The old index, held, is let go: it never writes the rows' file again, which is the new one's.
      index.retire();
      this.#index = kept;
      held = false;
      kept.spillTo(this.#rowsFile.fd);
      this.#size = size;
      this.#replacedAt = replacedAt;
      // Its offset names the file as it was.
      this.#mark = null;
      return dropped + (await this.#columns.prune(cutoff));
    } catch (error) {
      await copy?.close().catch(() => {});
      if (!replaced) await unlink(temp).catch(() => {});
      // Once the copy took the file's place, the old handle and index no longer describe it.
      else this.#broken = `${this.#path} was pruned, and could not be opened again (${(error as Error).message}); the history of answers is not read nor written until the server is restarted`;
      throw new HistoryError(`cannot prune ${this.#path}: ${(error as Error).message}`, { cause: error });
    } finally {
      if (held) index.release();
      this.#release();
    }
  }

  /** The last state whose every VPA was compared (ComparedMark), when this file tells it. */
  get mark(): ComparedMark | null {
    return this.#mark;
  }

  /** Mark the state just committed as one whose every VPA was compared: of `snapshot`, with a delta of evidence `files`. */
  markCompared(snapshot: string, files: readonly string[]): void {
    this.#mark = { snapshot, offset: this.#size, files: filesSummary(files) };
  }

  /** The VPAs named by the records from `offset` (a ComparedMark's) to the end. */
  async keysSince(offset: number): Promise<Set<string>> {
    this.#usable();
    if (this.#writing !== null) throw new RangeError('a state is being written');
    const keys = new Set<string>();
    await walkRecords(this.#handle, this.#path, offset, this.#size, (bytes) => {
      keys.add(bytes.toString('latin1', FIXED_LENGTH, FIXED_LENGTH + bytes[10]!));
      return true;
    });
    return keys;
  }

  #usable(): void {
    if (this.#broken !== null) throw new HistoryError(this.#broken);
  }

  /**
   * Every change of the status, risk category, advice band or cluster of
   * `key` (lower case) at or after `since` (epoch ms), oldest first: its
   * records then that tell another answer than the record before (the
   * others changed what else the answer holds).
   */
  async changesOf(key: string, since: number): Promise<ChangeEntry[]> {
    const newestFirst: StoredRecord[] = [];
    await this.#walkBack(key, (record) => {
      newestFirst.push(record);
      return record.at >= since;
    });
    return changeEntries(newestFirst, since);
  }

  /**
   * The answer to `key` (lower case) served at `at` (epoch ms, not before
   * `startedAt` nor the retention): its newest record then, with the
   * confidence of the newest column then when that came after the record.
   * CLEARED for a VPA without a record then.
   */
  async answerAt(key: string, at: number): Promise<PastAnswer> {
    let found: StoredRecord | null = null;
    await this.#walkBack(key, (record) => {
      if (record.at > at) return true;
      found = record;
      return false;
    });
    return pastAnswerOf(found, this.#path, async (record) => {
      const column = this.#columns.at(at);
      if (column === null || column.at <= record.at) return null;
      const confidence = await this.#columns.valueOf(column, record.number);
      if (confidence === NO_SCORE) throw new HistoryError(`${column.path} holds no confidence for the FLAGGED VPA numbered ${record.number}`);
      return confidence;
    });
  }

  /** Walk `key`'s records from the newest back while `visit` returns true; waits for the state being written. */
  async #walkBack(key: string, visit: (record: StoredRecord) => boolean): Promise<void> {
    await this.#committed;
    this.#usable();
    const number = this.#index.find(key);
    let offset = number < 0 ? -1 : this.#index.newestOffset(number);
    while (offset >= 0) {
      const record = await this.#read(offset);
      if (record.key !== key) throw new HistoryError(`${this.#path}: the record at ${offset} names ${record.key}, not ${key}`);
      if (!visit(record)) return;
      if (record.previous >= offset) throw new HistoryError(`${this.#path}: the record at ${offset} chains forward`);
      offset = record.previous;
    }
  }

  /**
   * Close the file, keeping the index beside it (facts-index-file.ts) when
   * the log is whole; resolves to why it could not be kept, or null.
   */
  async close(): Promise<string | null> {
    await this.#writing?.runs.settled();
    let unkept: string | null = this.#broken ?? (this.#writing === null ? null : 'a state was being written');
    if (unkept === null) {
      try {
        // The kept copy is of the whole index: its rows read back from their file first, and not moved again.
        await this.#index.hold();
        await keepFactsIndex(this.#path, this.#index, { covered: this.#size, logCrc: await tailCrc(this.#handle, this.#size), lastAt: this.#lastAt, replacedAt: this.#replacedAt, columnAt: this.#columns.at(Number.POSITIVE_INFINITY)?.at ?? 0 }, this.#mark);
      } catch (error) {
        unkept = (error as Error).message;
      }
    }
    await this.#handle.close().catch(() => {});
    // Nothing writes the rows' file once it is closed (a move that fails leaves the rows where they were).
    await this.#index.settled().catch(() => {});
    this.#index.retire();
    await this.#rowsFile.close().catch(() => {});
    await unlink(rowsPathOf(this.#path)).catch(() => {});
    return unkept;
  }

  async #read(offset: number): Promise<StoredRecord> {
    const fixed = Buffer.alloc(FIXED_LENGTH);
    if (!(await readAllAt(this.#handle, fixed, offset))) throw new HistoryError(`${this.#path}: no whole record at ${offset}`);
    const length = fixed.readUInt32LE(4);
    const bytes = Buffer.alloc(Math.max(FIXED_LENGTH, Math.min(length, MAX_RECORD)));
    fixed.copy(bytes);
    if (bytes.length > FIXED_LENGTH && !(await readAllAt(this.#handle, bytes.subarray(FIXED_LENGTH), offset + FIXED_LENGTH))) throw new HistoryError(`${this.#path}: no whole record at ${offset}`);
    const record = decodeRecord(bytes, this.#path, offset);
    if (record === null) throw new HistoryError(`${this.#path}: no whole record at ${offset}`);
    return record;
  }
}

/** A record as read back: from the file (at `offset`), or from a copy of its bytes elsewhere (store/answer-history-store.ts). */
export interface StoredRecord {
  readonly offset: number;
  readonly length: number;
  readonly cause: ChangeCause;
  readonly facts: AnswerFacts;
  readonly at: number;
  readonly previous: number;
  readonly number: number;
  readonly key: string;
  readonly version: string;
  /** The detail's bytes (answer-detail.ts), empty when CLEARED. */
  readonly detail: Buffer;
}

/** Whether `after` tells another status, risk category, advice band or cluster than `before` (null: none, as CLEARED). */
function toldChange(before: StoredRecord | null, after: StoredRecord): boolean {
  return (before === null ? 0 : toldOf(before.facts)) !== toldOf(after.facts) || (before?.facts.cluster ?? 0) !== after.facts.cluster;
}

/**
 * The changes told by a VPA's records `newestFirst` (newest first, down to
 * the first before `since` or the oldest) at or after `since`, oldest
 * first: each record that tells another answer than the one before it.
 */
export function changeEntries(newestFirst: readonly StoredRecord[], since: number): ChangeEntry[] {
  const out: ChangeEntry[] = [];
  let after: StoredRecord | null = null;
  for (const record of newestFirst) {
    // Each record is told by what it changed from: the one before it, which comes after it here.
    if (after !== null && toldChange(record, after)) out.push(entryOf(after));
    after = record;
    if (record.at < since) break;
  }
  const first = after as StoredRecord | null;
  if (first !== null && first.at >= since && toldChange(null, first)) out.push(entryOf(first));
  return out.reverse();
}

/**
 * The answer `record` (a VPA's newest at an instant; null: none) tells, in
 * the file or store `where`: CLEARED without one; else its answer, with the
 * confidence `scoredLater` finds in a column after it (null: none).
 */
export async function pastAnswerOf(record: StoredRecord | null, where: string, scoredLater: (record: StoredRecord) => Promise<number | null>): Promise<PastAnswer> {
  if (record === null || !record.facts.flagged) return { facts: CLEARED_FACTS, detail: null };
  const detail = decodeDetail(record.detail);
  if (detail === null) throw new HistoryError(`${where}: the record at ${record.offset} holds an answer this service does not write`);
  const confidence = await scoredLater(record);
  return { facts: confidence === null ? record.facts : { ...record.facts, confidence }, detail };
}

/** The place decodeRecord is given for a record kept apart from its file: any chain is before it. */
const STORED_APART = Number.MAX_SAFE_INTEGER;

/** A stored record's bytes and what decodeStoredRecord read of them: decoded once, where they were read. */
export interface DecodedStoredRecord {
  readonly bytes: Buffer;
  readonly record: StoredRecord;
}

/**
 * The record whose bytes a copy of the log keeps apart from its file
 * (store/answer-history-store.ts), checked as at open; `where` names it in
 * errors. Its chain names places in the file it was written to, and is not
 * followed.
 */
export function decodeStoredRecord(bytes: Buffer, where: string): StoredRecord {
  const record = decodeRecord(bytes, where, STORED_APART);
  if (record === null || record.length !== bytes.length) throw new HistoryError(`${where}: a record of ${bytes.length} bytes that is not one whole record`);
  return record;
}

/** What a store's row names a stored record by (its VPA, time and number), checked as decodeStoredRecord checks it, without decoding the rest. */
export function storedRecordRow(bytes: Buffer, where: string): { readonly key: string; readonly at: number; readonly number: number } {
  if (checkRecord(bytes, where, STORED_APART) !== bytes.length) throw new HistoryError(`${where}: a record of ${bytes.length} bytes that is not one whole record`);
  return { key: bytes.toString('latin1', FIXED_LENGTH, FIXED_LENGTH + bytes[10]!), at: bytes.readDoubleLE(16), number: bytes.readUInt32LE(36) };
}

function entryOf(r: StoredRecord): ChangeEntry {
  const f = r.facts;
  return {
    at: formatIso(r.at),
    data_version: r.version,
    status: f.flagged ? 'FLAGGED' : 'CLEARED',
    risk_category: f.risk < 0 ? null : RISK_CATEGORIES[f.risk]!,
    confidence: f.confidence < 0 ? null : f.confidence / CONFIDENCE_SCALE,
    cluster_id: f.cluster === 0 ? null : formatClusterId(f.cluster),
    cause: r.cause,
  };
}

/** Refuses `numbers` (sorted in place) unless they are 0 to their count less one, each once. */
function checkNumbering(numbers: Uint32Array): void {
  numbers.sort();
  for (let i = 0; i < numbers.length; i++) {
    const number = numbers[i]!;
    if (number < i) throw new HistoryError(`two VPAs are numbered ${number}`);
    if (number > i) throw new HistoryError(`${numbers.length} VPAs numbered up to ${numbers.at(-1)!}: some VPA's record is missing`);
  }
}

/** `array` copied into one of at least `length` elements (twice as many, if more), the rest 0. */
function grownTo(array: Uint32Array, length: number): Uint32Array<ArrayBuffer> {
  const next = new Uint32Array(Math.max(length, 2 * array.length));
  next.set(array);
  return next;
}

function asciiOf(text: string, what: string): Buffer {
  if (text.length < 1 || text.length > MAX_TEXT || !/^[\x21-\x7e]+$/.test(text)) throw new RangeError(`a ${what} of 1 to ${MAX_TEXT} visible ASCII characters, got ${JSON.stringify(text)}`);
  return Buffer.from(text, 'latin1');
}

function checkKey(key: string): void {
  if (key.length < 1 || key.length > MAX_TEXT || !/^[\x21-\x7e]+$/.test(key)) throw new RangeError(`a VPA of 1 to ${MAX_TEXT} visible ASCII characters, got ${JSON.stringify(key)}`);
}

/** Write the record of a change in `out`, its length (paddedLength) long. */
function encodeRecord(out: Buffer, key: string, facts: AnswerFacts, detail: Buffer | null, cause: ChangeCause, when: number, previous: number, version: Buffer, number: number): void {
  if (facts.flagged !== (detail !== null)) throw new RangeError('a FLAGGED answer has a detail, a CLEARED one none');
  out.fill(0);
  out.writeUInt32LE(out.length, 4);
  out[8] = CHANGE_CAUSES.indexOf(cause) + 1;
  out[9] = (facts.flagged ? 1 : 0) | ((facts.risk + 1) << 1);
  out[10] = key.length;
  out[11] = version.length;
  out.writeUInt16LE(facts.confidence < 0 ? NO_SCORE : facts.confidence, 12);
  out.writeDoubleLE(when, 16);
  out.writeDoubleLE(previous, 24);
  out.writeUInt32LE(facts.cluster, 32);
  out.writeUInt32LE(number, 36);
  out.writeUInt32LE(facts.printA, 40);
  out.writeUInt32LE(facts.printB, 44);
  out.writeUInt32LE(detail?.length ?? 0, 48);
  out.write(key, FIXED_LENGTH, 'latin1');
  version.copy(out, FIXED_LENGTH + key.length);
  detail?.copy(out, FIXED_LENGTH + key.length + version.length);
  out.writeUInt32LE(crc32(out.subarray(4)), 0);
}

function paddedLength(keyLength: number, versionLength: number, detailLength: number): number {
  return Math.ceil((FIXED_LENGTH + keyLength + versionLength + detailLength) / RECORD_ALIGN) * RECORD_ALIGN;
}

/** The record at the start of `bytes`, null when `bytes` ends inside it; HistoryError when it is not one this service writes. */
function decodeRecord(bytes: Buffer, path: string, offset: number): StoredRecord | null {
  const length = checkRecord(bytes, path, offset);
  if (length === null) return null;
  const keyLength = bytes[10]!;
  const versionLength = bytes[11]!;
  const textEnd = FIXED_LENGTH + keyLength + versionLength;
  const text = bytes.toString('latin1', FIXED_LENGTH, textEnd);
  return {
    offset,
    length,
    cause: CHANGE_CAUSES[bytes[8]! - 1]!,
    facts: factsIn(bytes),
    at: bytes.readDoubleLE(16),
    previous: bytes.readDoubleLE(24),
    number: bytes.readUInt32LE(36),
    key: text.slice(0, keyLength),
    version: text.slice(keyLength),
    detail: Buffer.from(bytes.subarray(textEnd, textEnd + bytes.readUInt32LE(48))),
  };
}

function factsIn(bytes: Buffer): AnswerFacts {
  if ((bytes[9]! & 1) === 0) return CLEARED_FACTS;
  return { flagged: true, risk: (bytes[9]! >> 1) - 1, confidence: bytes.readUInt16LE(12), cluster: bytes.readUInt32LE(32), printA: bytes.readUInt32LE(40), printB: bytes.readUInt32LE(44), detail: null };
}

/** What the index holds of the record at the start of `bytes`. */
function indexedIn(bytes: Buffer): IndexedAnswer {
  return indexedOf(factsIn(bytes));
}

/**
 * The length of the record at the start of `bytes`, checked whole; null
 * when `bytes` ends inside it. HistoryError when it is not one this service
 * writes. Makes no string, so a scan of the file at open makes none.
 */
function checkRecord(bytes: Buffer, path: string, offset: number): number | null {
  const bad = (why: string): never => {
    if (offset === STORED_APART) throw new HistoryError(`${path}: a record ${why}; it is not told until it is restored`);
    throw new HistoryError(`${path}: the record at byte ${offset} ${why}; the history of answers is not served until the file is restored or moved aside`);
  };
  if (bytes.length < FIXED_LENGTH) return null;
  const length = bytes.readUInt32LE(4);
  const keyLength = bytes[10]!;
  const versionLength = bytes[11]!;
  const detailLength = bytes.readUInt32LE(48);
  if (detailLength > MAX_DETAIL_BYTES || length !== paddedLength(keyLength, versionLength, detailLength) || keyLength === 0 || versionLength === 0) bad('has lengths that do not agree');
  if (bytes.length < length) return null;
  if (crc32(bytes.subarray(4, length)) !== bytes.readUInt32LE(0)) bad('fails its CRC');
  if (CHANGE_CAUSES[bytes[8]! - 1] === undefined) bad(`has cause ${bytes[8]}`);
  const flagged = (bytes[9]! & 1) === 1;
  const risk = (bytes[9]! >> 1) - 1;
  const confidence = bytes.readUInt16LE(12);
  const at = bytes.readDoubleLE(16);
  const previous = bytes.readDoubleLE(24);
  const printed = bytes.readUInt32LE(40) !== 0 || bytes.readUInt32LE(44) !== 0;
  if (bytes[9]! >> 4 !== 0 || risk >= RISK_CATEGORIES.length || bytes.readUInt16LE(14) !== 0 || bytes.readUInt32LE(52) !== 0) bad('has a status or risk category this service does not write');
  if (
    flagged !== (risk >= 0) ||
    flagged !== (confidence !== NO_SCORE) ||
    flagged !== printed ||
    flagged !== (detailLength > 0) ||
    (flagged && confidence > CONFIDENCE_SCALE) ||
    (!flagged && bytes.readUInt32LE(32) !== 0)
  ) {
    bad('has a status its other fields do not agree with');
  }
  if (!Number.isSafeInteger(at) || at < 0 || !Number.isSafeInteger(previous) || previous < -1 || previous >= offset || (previous !== -1 && previous % RECORD_ALIGN !== 0)) {
    bad('has a time or a chain this service does not write');
  }
  const textEnd = FIXED_LENGTH + keyLength + versionLength;
  for (let i = FIXED_LENGTH; i < textEnd; i++) if (bytes[i]! < 0x21 || bytes[i]! > 0x7e) bad('names a VPA or data version that is not visible ASCII');
  for (let i = textEnd + detailLength; i < length; i++) if (bytes[i] !== 0) bad('has padding that is not zeros');
  return length;
}

/** Write the header of the log at `path` in place, its first state begun at `startedAt`, durably. */
async function writeHeader(path: string, startedAt: number): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await writeAllAt(handle, [header(startedAt)], 0);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** The header of a file whose first state began at `startedAt` (0: none yet). */
function header(startedAt: number): Buffer {
  const bytes = Buffer.alloc(HEADER_LENGTH);
  bytes.write(MAGIC, 0, 'latin1');
  bytes.writeUInt32LE(FORMAT_VERSION, 8);
  bytes.writeDoubleLE(startedAt, 16);
  return bytes;
}

/**
 * Hand each whole record of the file from `from` to `to` to `visit`
 * (its bytes, from its start, and its place and length) until `visit`
 * returns false; returns where the walk stopped: `to`, a record `visit`
 * refused, or the start of a last record cut short. `beforeRead` is awaited
 * before each read of the file.
 */
async function walkRecords(
  handle: FileHandle,
  path: string,
  from: number,
  to: number,
  visit: (bytes: Buffer, offset: number, length: number) => boolean,
  beforeRead: () => Promise<void> = () => Promise.resolve(),
): Promise<number> {
  let offset = from;
  let buffer = Buffer.alloc(0);
  let bufferStart = offset;
  while (offset < to) {
    const held = bufferStart + buffer.length - offset;
    // The next record whole, when the file holds it: its fixed part first, then its length.
    const needed = held < FIXED_LENGTH ? FIXED_LENGTH : Math.min(buffer.readUInt32LE(offset - bufferStart + 4), MAX_RECORD);
    if (held < needed && bufferStart + buffer.length < to) {
      await beforeRead();
      const chunk = Buffer.alloc(Math.min(Math.max(SCAN_BYTES, needed), to - offset));
      const read = await handle.read(chunk, 0, chunk.length, offset);
      buffer = chunk.subarray(0, read.bytesRead);
      bufferStart = offset;
      if (read.bytesRead < chunk.length) to = offset + read.bytesRead;
      // Read for its fixed part alone, a record longer than the run read may need more.
      continue;
    }
    const bytes = buffer.subarray(offset - bufferStart);
    const length = checkRecord(bytes, path, offset);
    if (length === null || !visit(bytes, offset, length)) break;
    offset += length;
  }
  return offset;
}

/** The hashes of the VPA of the record at the start of `bytes`. */
function recordHashes(bytes: Buffer): [number, number] {
  const keyEnd = FIXED_LENGTH + bytes[10]!;
  return [hashA(bytes, FIXED_LENGTH, keyEnd), hashB(bytes, FIXED_LENGTH, keyEnd)];
}

/** How a log ends: its size and the times of its records; and when it was begun. */
interface LogScan {
  readonly size: number;
  readonly lastAt: number;
  readonly replacedAt: number;
  readonly startedAt: number;
}

/** How a ChangeLog was opened: from the index a clean close kept (or why not), and how much of the file was read. */
export interface LogOpened {
  readonly keptIndex: boolean;
  /** Why a kept index was not used; null when none was kept, or it was used. */
  readonly indexRefused: string | null;
  readonly bytesRead: number;
  /** Where a file of the format before was moved aside, when one was: the history begins again. */
  readonly movedAside: string | null;
}

/** The size of the log `handle` holds and when its first state began (0: none yet), its header written (a new file) or checked. */
async function checkedHead(handle: FileHandle, path: string): Promise<{ size: number; startedAt: number }> {
  const size = (await handle.stat()).size;
  if (size === 0) {
    await writeAllAt(handle, [header(0)], 0);
    await handle.datasync();
    return { size: HEADER_LENGTH, startedAt: 0 };
  }
  const head = Buffer.alloc(HEADER_LENGTH);
  const { bytesRead } = await handle.read(head, 0, HEADER_LENGTH, 0);
  if (bytesRead < HEADER_LENGTH || head.toString('latin1', 0, 8) !== MAGIC) {
    throw new HistoryError(`${path} is not a history of answers this service wrote (no UPIRCHNG header); move it aside to start a new one`);
  }
  if (head.readUInt32LE(8) !== FORMAT_VERSION) throw new HistoryError(`${path} is of format ${head.readUInt32LE(8)}, not ${FORMAT_VERSION}`);
  const startedAt = head.readDoubleLE(16);
  if (!Number.isSafeInteger(startedAt) || startedAt < 0 || head.readUInt32LE(12) !== 0) throw new HistoryError(`${path} has a header this service does not write`);
  return { size, startedAt };
}

/**
 * A log of format 1 (changes of the told fields alone, no detail) cannot
 * tell an answer again: it is moved aside, beside it with `.format1`, with
 * its kept index dropped, and the history begins again. Returns where it
 * went, or null.
 */
async function moveAsideFormat1(path: string): Promise<string | null> {
  if ((await formatOf(path, MAGIC)) !== 1) return null;
  const aside = `${path}.format1`;
  await dropFactsIndex(path);
  await rename(path, aside);
  await syncDirectory(dirname(path));
  return aside;
}

/** Why an index holding `covering` is not one of the log in `handle` (`size` bytes, served until `servedUntil`), or null. */
async function mismatch(handle: FileHandle, size: number, servedUntil: number, covering: IndexCovering): Promise<string | null> {
  const { covered, lastAt, replacedAt } = covering;
  if (!Number.isSafeInteger(covered) || covered < HEADER_LENGTH || covered > size || covered % RECORD_ALIGN !== 0) return `it holds ${covered} bytes of a log of ${size}`;
  // Times as the log keeps them (the oldest is Infinity in a log without records); NaN fails every test.
  if (!(lastAt >= 0 && (replacedAt === Number.POSITIVE_INFINITY || (replacedAt >= 0 && replacedAt <= lastAt)))) return `it holds times ${lastAt} and ${replacedAt}`;
  if (!(Number.isSafeInteger(covering.columnAt) && covering.columnAt >= 0 && covering.columnAt <= servedUntil)) return `it holds a column of ${covering.columnAt}`;
  // Records never served are cut off at open: an index holding one holds what the file will not.
  if (!(lastAt <= servedUntil)) return 'it holds a change that was never served';
  // The same log, by the bytes it ended with then (each record's own CRC is checked when it is read).
  if ((await tailCrc(handle, covered)) !== covering.logCrc) return 'the log is not the one it was kept with';
  return null;
}

/**
 * Read the file from `from.size` to `size` into `index`, which holds what
 * comes before; cuts off a torn last record and the records after
 * `servedUntil`. A record before `column` (the newest column, read whole)
 * is served with the column's confidence.
 */
async function scanLog(handle: FileHandle, path: string, index: FactsIndex, servedUntil: number, from: LogScan, size: number, column: { readonly at: number; readonly values: Uint16Array } | null): Promise<LogScan> {
  let { lastAt, replacedAt } = from;
  // Numbers are given in the order VPAs are first recorded, so none reaches the records the file can hold: a
  // damaged record's number past that is refused before the index makes room for it. One below it may still ask
  // for arrays as long as the file has room for records (23 bytes for every 64 of it), refused once the scan ends.
  const numbers = (size - HEADER_LENGTH) / MIN_RECORD_LENGTH;
  // A record cut short at the end is the write a crash interrupted, never synced, so never served.
  const end = await walkRecords(handle, path, from.size, size, (bytes, offset) => {
    const at = bytes.readDoubleLE(16);
    if (at > servedUntil) return false;
    const [a, b] = recordHashes(bytes);
    const number = bytes.readUInt32LE(36);
    if (number >= numbers) throw new HistoryError(`${path}: the record at ${offset} names VPA number ${number}, more than the file holds records`);
    const answer = indexedIn(bytes);
    const scored = column !== null && at < column.at ? column.values[number] : undefined;
    try {
      index.putHashed(a, b, offset, scored === undefined ? answer : { ...answer, confidence: scored }, number);
    } catch (error) {
      throw new HistoryError(`${path}: the record at ${offset}: ${messageOf(error)}`, { cause: error });
    }
    lastAt = Math.max(lastAt, at);
    if (bytes.readDoubleLE(24) >= 0) replacedAt = Math.min(replacedAt, at);
    return true;
  });
  if (!index.dense) throw new HistoryError(`${path}: its records leave VPA numbers unused below ${index.count}: the records of a VPA are missing`);
  if (end < size) {
    await handle.truncate(end);
    await handle.datasync();
  }
  return { size: end, lastAt, replacedAt, startedAt: from.startedAt };
}

/** The file the index of the log at `logPath` keeps its rows in between passes (answer-slots.ts). */
export function rowsPathOf(logPath: string): string {
  return `${logPath}.rows`;
}

/** Bytes of the log a kept index names it by: the last of those it covers, with the header. */
const TAIL_BYTES = 1 << 20;

/**
 * CRC-32 of the log's header and of its last TAIL_BYTES up to `size`: what
 * tells the log a kept index was kept with from another, read in a moment
 * however long the log grows (a year of history is gigabytes).
 */
async function tailCrc(handle: FileHandle, size: number): Promise<number> {
  const from = Math.max(HEADER_LENGTH, size - TAIL_BYTES);
  return crcOfFile(handle, size, from, await crcOfFile(handle, HEADER_LENGTH));
}
