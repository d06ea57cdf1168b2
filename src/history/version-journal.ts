import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { syncDirectory, tempFileName } from '../common/atomic-file.js';
import { HistoryError } from '../common/errors.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { formatOf, openHistoryFile } from './history-file.js';
import { dataVersionRecord, unavailableVersions, type DataVersionRecord, type ServedAt, type ServedState, type ServedVersions } from './served-versions.js';

/**
 * The embedded server's record of the data versions it served
 * (served-versions.ts), `DIR/history/versions.bin`: one fixed-size record per
 * state, appended and synced before the state is served, in the order the
 * states were served. Positions are handed out in that order
 * (service/position-reserve.ts), so a version with a position is found by
 * bisection; the few versions of a snapshot alone (position 0, one per
 * compaction) are indexed in memory when the file is opened.
 *
 * Layout, little endian: a 32-byte header, then 104-byte records.
 *
 *   header   0   8  magic "UPIRVERS"
 *            8   4  format version, u32 (2)
 *           12   4  record length, u32 (104)
 *           16  16  0
 *   record   0   1  kind: 1 a state served from `at`; 2 the server stopped at `at` (the state before served until then)
 *            1   1  the snapshot id's length, 1 to 64
 *            2   1  bit 0: the state's answers were recorded in the history of answers (answer-changes.ts) before it was served
 *            3   1  0
 *            4   4  CRC-32 of the record with these four bytes 0
 *            8   8  position, f64
 *           16   8  serial, f64: the highest position recorded up to this record, which never decreases
 *           24   8  at, epoch ms, f64
 *           32  64  the snapshot id, ASCII, zero padded
 *           96   8  the state's X-Data-As-Of, epoch ms, f64 (0: not known, a record of format 1)
 *
 * A file of format 1 (96-byte records, without the last field) is rewritten
 * in this format when it is opened.
 *
 * A file cut short, a record that fails its CRC, or one this service would
 * not write is refused with HistoryError: the server serves on, and data
 * versions are not resolved until the file is restored.
 *
 * With a retention (`keepMs`, serve's --history-days), the records of
 * states that ended before it are dropped: the file is copied without them
 * once its oldest record is a month past the retention, so it is rewritten
 * about once a month, not every day.
 */
export class VersionJournal implements ServedVersions {
  readonly #path: string;
  readonly #logger: Logger;
  #handle: FileHandle;
  /** Records written and synced. */
  #count: number;
  /** The serial of the last record (the highest position recorded). */
  #serial: number;
  /** The last record's state and kind, null in an empty file. */
  #last: { readonly state: ServedState; readonly kind: number } | null;
  /** The last record's time: a record is never written with an earlier one, whatever the clock does. */
  #lastAt: number;
  /** The directory's entry for the file as it is now was not synced (after a prune): synced again before the next record counts. */
  #directoryUnsynced = false;
  /** The prune under way, one at a time. */
  #pruneRun: Promise<number> | null = null;
  /** Index of each snapshot's record served alone (position 0). */
  readonly #alone: Map<string, number>;
  /** Appends, one at a time, in the order they were asked for. */
  #appending: Promise<void> = Promise.resolve();
  #unavailable: string | null = null;
  /** Counts the files that replaced the first (prune). */
  #generation = 0;
  /** The daily look at the retention; null without one. */
  #pruning: NodeJS.Timeout | null = null;

  private constructor(path: string, logger: Logger, handle: FileHandle, scan: Scan) {
    this.#path = path;
    this.#logger = logger;
    this.#handle = handle;
    this.#count = scan.count;
    this.#serial = scan.serial;
    this.#last = scan.last;
    this.#lastAt = scan.lastAt;
    this.#alone = scan.alone;
  }

  /**
   * Open (or create) the record at `path`; HistoryError when it is not one
   * this service wrote whole. With `keepMs`, states that ended longer ago
   * are dropped, now and once a day (see above).
   */
  static async open(path: string, logger: Logger = silentLogger, keepMs?: number): Promise<VersionJournal> {
    if (await rewriteFormat1(path)) logger.info({ path }, 'the record of served data versions was rewritten in the format that keeps each state\'s data-as-of time');
    return openHistoryFile(path, async (handle) => {
      const journal = new VersionJournal(path, logger, handle, await scanJournal(handle, path));
      if (keepMs !== undefined) journal.#keep(keepMs);
      return journal;
    });
  }

  get unavailable(): string | null {
    return this.#unavailable;
  }

  get highestPosition(): number {
    return this.#serial;
  }

  /** The time of the last record, epoch ms (0: none): a state recorded as served after it never was. */
  get lastAt(): number {
    return this.#lastAt;
  }

  /** Records in the file. */
  get size(): number {
    return this.#count;
  }

  served(state: ServedState): boolean {
    return state.position === 0 ? this.#alone.has(state.snapshot) : state.position <= this.#serial;
  }

  record(state: ServedState, at: number, dataAsOf = 0, answersRecorded = false): Promise<void> {
    return this.#append(RECORD_SERVED, state, at, dataAsOf, answersRecorded);
  }

  stateAt(at: number): Promise<ServedAt | null> {
    return this.#beside(() => this.#stateAtOnce(at));
  }

  async #stateAtOnce(at: number): Promise<ServedAt | null> {
    if (this.#unavailable !== null) throw new HistoryError(this.#unavailable);
    const count = this.#count;
    // The last record at or before `at`, back past a stop to the state it ended.
    for (let i = (await this.#bisect(count, (r) => r.at <= at)) - 1; i >= 0; i--) {
      const r = await this.#read(i);
      if (r.kind === RECORD_SERVED) return { state: { snapshot: r.snapshot, position: r.position }, from: r.at, dataAsOf: r.dataAsOf, answersRecorded: r.answersRecorded };
    }
    return null;
  }

  async firstAt(): Promise<number | null> {
    if (this.#unavailable !== null) throw new HistoryError(this.#unavailable);
    return this.#count === 0 ? null : (await this.#read(0)).at;
  }

  /** Record that the server stops serving its last state at `at`, and close the file. */
  async close(at: number = Date.now()): Promise<void> {
    if (this.#pruning !== null) clearInterval(this.#pruning);
    this.#pruning = null;
    // A prune under way finishes first: its copy reads this file.
    await this.#pruneRun;
    const last = this.#last;
    if (last !== null && last.kind === RECORD_SERVED) await this.#append(RECORD_STOPPED, last.state, at, 0, false);
    await this.#appending;
    await this.#handle.close().catch(() => {});
  }

  find(state: ServedState): Promise<DataVersionRecord | null> {
    return this.#beside(() => this.#findOnce(state));
  }

  /** `read()` of the file, read again when a prune replaced the file meanwhile (it moves every index). */
  async #beside<T>(read: () => Promise<T>): Promise<T> {
    for (;;) {
      const generation = this.#generation;
      try {
        const found = await read();
        if (generation === this.#generation) return found;
      } catch (error) {
        if (generation === this.#generation) throw error;
      }
    }
  }

  async #findOnce(state: ServedState): Promise<DataVersionRecord | null> {
    if (this.#unavailable !== null) throw new HistoryError(this.#unavailable);
    const count = this.#count;
    const index = state.position === 0 ? (this.#alone.get(state.snapshot) ?? -1) : await this.#indexOf(state.position, count);
    if (index < 0) return null;
    const found = await this.#read(index);
    if (found.kind !== RECORD_SERVED || found.position !== state.position || found.snapshot !== state.snapshot) return null;
    const until = index + 1 < count ? Math.max(found.at, (await this.#read(index + 1)).at) : null;
    return dataVersionRecord(state, found.at, until);
  }

  /**
   * Drop the records of states that ended before `cutoff` (epoch ms): every
   * record before the last one that began before it, which was still served
   * then, but never the record of the newest snapshot served alone (a
   * restart on it must know it was served, so that its version names one
   * state). Resolves to the records dropped. The rest is copied to a new
   * file, the bulk beside appends and the records appended meanwhile
   * between two of them, and the copy replaces this file whole.
   */
  prune(cutoff: number): Promise<number> {
    if (this.#pruneRun === null) this.#pruneRun = this.#prune(cutoff).finally(() => (this.#pruneRun = null));
    return this.#pruneRun;
  }

  async #prune(cutoff: number): Promise<number> {
    if (this.#unavailable !== null) return 0;
    const dir = dirname(this.#path);
    const temp = join(dir, tempFileName(basename(this.#path)));
    let copy: FileHandle | null = null;
    let renamed = false;
    let drop: number;
    try {
      // Records are only ever added at the end, and only a prune replaces the file: what is there now can be read beside appends.
      const count = this.#count;
      drop = (await this.#firstAtOrAfter(cutoff, count)) - 1;
      let newestAlone = -1;
      for (const index of this.#alone.values()) newestAlone = Math.max(newestAlone, index);
      if (newestAlone >= 0) drop = Math.min(drop, newestAlone);
      if (drop <= 0) return 0;
      copy = await open(temp, 'a+');
      await this.#copyRecords(copy, drop, count, true);
      const into = copy;
      await this.#inTurn(async () => {
        await this.#copyRecords(into, count, this.#count, false);
        await into.sync();
        await rename(temp, this.#path);
        renamed = true;
        this.#replaceWith(into, drop);
      });
    } catch (error) {
      if (!renamed) {
        await copy?.close().catch(() => {});
        await unlink(temp).catch(() => {});
      }
      if (error instanceof HistoryError) {
        // A record that cannot be read back: the file is damaged, and no version is resolved from it.
        this.#unavailable = error.message;
        this.#logger.error({ code: error.code, err: error.message, path: this.#path }, 'the record of served data versions cannot be read; versions are not resolved until it is restored');
      } else {
        this.#logger.error({ err: (error as Error).message, path: this.#path }, 'old records of served data versions could not be dropped; they stay');
      }
      return 0;
    }
    this.#logger.info({ dropped: drop, kept: this.#count, path: this.#path }, 'records of data versions served before the retention dropped');
    return drop;
  }

  /** Run `work` in its turn among appends and a prune's swap: nothing else is written while it runs. */
  #inTurn(work: () => Promise<void>): Promise<void> {
    const run = this.#appending.then(work);
    this.#appending = run.then(noop, noop);
    return run;
  }

  /** Append the records `from..to` of this file to `copy`, each checked, after a header when `withHeader` (a new file). */
  async #copyRecords(copy: FileHandle, from: number, to: number, withHeader: boolean): Promise<void> {
    if (withHeader) await writeWhole(copy, header());
    const chunk = Buffer.alloc(SCAN_RECORDS * RECORD_LENGTH);
    for (let i = from; i < to; i += SCAN_RECORDS) {
      const n = Math.min(SCAN_RECORDS, to - i);
      const { bytesRead } = await this.#handle.read(chunk, 0, n * RECORD_LENGTH, HEADER_LENGTH + i * RECORD_LENGTH);
      if (bytesRead !== n * RECORD_LENGTH) throw new HistoryError(`${this.#path} ends before its records: it was cut short after it was opened`);
      // A record damaged since the file was opened is not carried into the copy, where it would be refused at the next start.
      for (let k = 0; k < n; k++) decodeRecord(chunk.subarray(k * RECORD_LENGTH, (k + 1) * RECORD_LENGTH), i + k, this.#path);
      await writeWhole(copy, chunk.subarray(0, bytesRead));
    }
  }

  /**
   * The copy renamed into place (the records from `first` on) becomes the
   * record's file at once, with no wait between: a lookup sees the old
   * file and indexes or the new ones.
   */
  #replaceWith(copy: FileHandle, first: number): void {
    const previous = this.#handle;
    this.#handle = copy;
    this.#count -= first;
    for (const [snapshot, index] of this.#alone) {
      if (index < first) this.#alone.delete(snapshot);
      else this.#alone.set(snapshot, index - first);
    }
    this.#generation++;
    void previous.close().catch(() => {});
    // Synced before the next record counts: a power loss must not bring the old file back under records written to the new one.
    this.#directoryUnsynced = true;
  }

  #keep(keepMs: number): void {
    const look = async () => {
      const now = Date.now();
      // Once a month past the retention, not every day: each look that drops copies the file.
      if (this.#count > 0 && (await this.#read(0)).at < now - keepMs - PRUNE_SLACK_MS) await this.prune(now - keepMs);
    };
    const lookLogged = () => void look().catch((error: Error) => this.#logger.error({ err: error.message }, 'the retention of served data versions could not be looked at'));
    lookLogged();
    this.#pruning = setInterval(lookLogged, PRUNE_EVERY_MS);
    this.#pruning.unref();
  }

  /** The index of the first record at or after `at` (records are in time order), `count` when there is none. */
  #firstAtOrAfter(at: number, count: number): Promise<number> {
    return this.#bisect(count, (r) => r.at < at);
  }

  /** The first index of the records `0..count` for which `before` is false; `before` is true of a prefix of them. */
  async #bisect(count: number, before: (record: JournalRecord) => boolean): Promise<number> {
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(await this.#read(mid))) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The index of the record that served `position` (> 0), or -1. */
  async #indexOf(position: number, count: number): Promise<number> {
    // Records of a snapshot alone and of stops share the serial of the record before them.
    for (let i = await this.#bisect(count, (r) => r.serial < position); i < count; i++) {
      const r = await this.#read(i);
      if (r.serial !== position) return -1;
      if (r.kind === RECORD_SERVED && r.position === position) return i;
    }
    return -1;
  }

  async #read(index: number): Promise<JournalRecord> {
    const bytes = Buffer.alloc(RECORD_LENGTH);
    const { bytesRead } = await this.#handle.read(bytes, 0, RECORD_LENGTH, HEADER_LENGTH + index * RECORD_LENGTH);
    if (bytesRead !== RECORD_LENGTH) throw new HistoryError(`${this.#path} ends inside record ${index}: it was cut short after it was opened`);
    return decodeRecord(bytes, index, this.#path);
  }

  #append(kind: number, state: ServedState, at: number, dataAsOf: number, answersRecorded: boolean): Promise<void> {
    return this.#inTurn(async () => {
      if (this.#unavailable !== null) return;
      if (kind === RECORD_SERVED && state.position > 0 && state.position <= this.#serial) {
        // Bisection could not find it, nor perhaps the ones after: stop recording rather than mislead.
        this.#unavailable = `${this.#path}: position ${state.position} was served after ${this.#serial}, out of order; data versions are not resolved until the server is restarted`;
        this.#logger.error({ position: state.position, highest: this.#serial, path: this.#path }, 'a data version position out of order; no more versions are recorded');
        return;
      }
      const serial = Math.max(this.#serial, state.position);
      const when = Math.max(at, this.#lastAt);
      if (when - at > CLOCK_STEP_WARN_MS) {
        // A clock stepped back, or the last record written by a clock that ran ahead: the times recorded wait for it.
        this.#logger.warn({ at, recordedAt: when, path: this.#path }, 'the clock is behind the last record of a served version; recorded with that time');
      }
      try {
        if (this.#directoryUnsynced) {
          await syncDirectory(dirname(this.#path));
          this.#directoryUnsynced = false;
        }
        await writeWhole(this.#handle, encodeRecord(kind, state, serial, when, dataAsOf, answersRecorded));
        await this.#handle.datasync();
      } catch (error) {
        // A record cut short (a full disk) is cut off again, so that the file stays whole records.
        await this.#handle.truncate(HEADER_LENGTH + this.#count * RECORD_LENGTH).catch(() => {});
        // A record missing would make the next version's times wrong: none is resolved until the file is looked at.
        this.#unavailable = `${this.#path} could not be written (${(error as Error).message}); data versions are not resolved until the server is restarted with the file whole`;
        this.#logger.error({ err: (error as Error).message, path: this.#path }, 'the record of served data versions could not be written; serving goes on');
        return;
      }
      if (kind === RECORD_SERVED && state.position === 0) this.#alone.set(state.snapshot, this.#count);
      this.#count++;
      this.#serial = serial;
      this.#last = { state, kind };
      this.#lastAt = when;
    });
  }
}

/**
 * The data directory's record of versions; a file refused is logged, and
 * the server serves on without one (unavailableVersions).
 */
export async function openVersionJournal(path: string, logger: Logger, keepMs?: number): Promise<ServedVersions> {
  try {
    return await VersionJournal.open(path, logger, keepMs);
  } catch (error) {
    if (!(error instanceof HistoryError)) throw error;
    logger.error({ code: error.code, err: error.message }, 'the record of served data versions is refused; serving without it: data versions are not resolved');
    return unavailableVersions(`the record of served data versions cannot be used: ${error.message}`);
  }
}

function noop(): void {}

/** Write all of `bytes` at the end of the file: a short write (a full disk) is an error, not a record cut short taken as whole. */
async function writeWhole(handle: FileHandle, bytes: Buffer): Promise<void> {
  const { bytesWritten } = await handle.write(bytes, 0, bytes.length, null);
  if (bytesWritten !== bytes.length) throw new Error(`only ${bytesWritten} of ${bytes.length} bytes could be written`);
}

const MAGIC = 'UPIRVERS';
const FORMAT_VERSION = 2;
const HEADER_LENGTH = 32;
const RECORD_LENGTH = 104;
const FORMAT1_RECORD_LENGTH = 96;
const DATA_AS_OF_AT = 96;
const ID_OFFSET = 32;
const MAX_ID_LENGTH = 64;
const RECORD_SERVED = 1;
const RECORD_STOPPED = 2;
/** Records read at a time when the file is opened or copied. */
const SCAN_RECORDS = 8192;
const DAY_MS = 24 * 60 * 60 * 1000;
/** How far past the retention the oldest record may be before the file is copied without the old ones. */
const PRUNE_SLACK_MS = 30 * DAY_MS;
const PRUNE_EVERY_MS = DAY_MS;
/** A time raised this much to keep records in order is logged. */
const CLOCK_STEP_WARN_MS = 5_000;

interface JournalRecord {
  readonly kind: number;
  readonly snapshot: string;
  readonly position: number;
  readonly serial: number;
  readonly at: number;
  readonly dataAsOf: number;
  readonly answersRecorded: boolean;
}

interface Scan {
  readonly count: number;
  readonly serial: number;
  readonly last: { readonly state: ServedState; readonly kind: number } | null;
  readonly lastAt: number;
  readonly alone: Map<string, number>;
}

function header(): Buffer {
  const bytes = Buffer.alloc(HEADER_LENGTH);
  bytes.write(MAGIC, 0, 'latin1');
  bytes.writeUInt32LE(FORMAT_VERSION, 8);
  bytes.writeUInt32LE(RECORD_LENGTH, 12);
  return bytes;
}

function encodeRecord(kind: number, state: ServedState, serial: number, at: number, dataAsOf: number, answersRecorded: boolean): Buffer {
  const bytes = Buffer.alloc(RECORD_LENGTH);
  bytes[2] = answersRecorded ? 1 : 0;
  bytes.writeDoubleLE(dataAsOf, DATA_AS_OF_AT);
  bytes[0] = kind;
  bytes[1] = state.snapshot.length;
  bytes.writeDoubleLE(state.position, 8);
  bytes.writeDoubleLE(serial, 16);
  bytes.writeDoubleLE(at, 24);
  bytes.write(state.snapshot, ID_OFFSET, 'latin1');
  bytes.writeUInt32LE(crc32(bytes), 4);
  return bytes;
}

/** The record in `bytes` (RECORD_LENGTH of them), checked; HistoryError naming `index` when it is not one this service writes. */
function decodeRecord(bytes: Buffer, index: number, path: string): JournalRecord {
  const bad = (what: string): never => {
    throw new HistoryError(`${path}: record ${index} ${what}; restore the file from a backup, or move it aside to start the record afresh (versions served before are then not resolved)`);
  };
  const crc = bytes.readUInt32LE(4);
  bytes.writeUInt32LE(0, 4);
  const actual = crc32(bytes);
  bytes.writeUInt32LE(crc, 4);
  if (actual !== crc) bad('fails its CRC');
  const kind = bytes[0]!;
  const idLength = bytes[1]!;
  if (kind !== RECORD_SERVED && kind !== RECORD_STOPPED) bad(`is of an unknown kind ${kind}`);
  if (idLength < 1 || idLength > MAX_ID_LENGTH || bytes[2]! > 1 || bytes[3] !== 0) bad('has a bad snapshot id length or flags');
  const snapshot = bytes.toString('latin1', ID_OFFSET, ID_OFFSET + idLength);
  if (!/^[\x21-\x7e]+$/.test(snapshot) || bytes.subarray(ID_OFFSET + idLength, ID_OFFSET + MAX_ID_LENGTH).some((b) => b !== 0)) bad('has a snapshot id that is not visible ASCII');
  const position = bytes.readDoubleLE(8);
  const serial = bytes.readDoubleLE(16);
  const at = bytes.readDoubleLE(24);
  const dataAsOf = bytes.length > DATA_AS_OF_AT ? bytes.readDoubleLE(DATA_AS_OF_AT) : 0;
  if (!Number.isSafeInteger(position) || position < 0 || !Number.isSafeInteger(serial) || serial < position || !Number.isFinite(at) || !Number.isSafeInteger(dataAsOf) || dataAsOf < 0) {
    bad('has a position, serial or time out of range');
  }
  return { kind, snapshot, position, serial, at, dataAsOf, answersRecorded: bytes[2] === 1 };
}

/** Check the whole file and index what lookups need; writes the header of a new one. */
async function scanJournal(handle: FileHandle, path: string): Promise<Scan> {
  const { size } = await handle.stat();
  if (size === 0) {
    await writeWhole(handle, header());
    await handle.datasync();
    // The new file's entry too: records synced into a file a power loss forgets would be lost with it.
    await syncDirectory(dirname(path));
    return { count: 0, serial: 0, last: null, lastAt: Number.NEGATIVE_INFINITY, alone: new Map() };
  }
  const head = Buffer.alloc(HEADER_LENGTH);
  const { bytesRead } = await handle.read(head, 0, HEADER_LENGTH, 0);
  if (bytesRead < HEADER_LENGTH || head.toString('latin1', 0, 8) !== MAGIC) {
    throw new HistoryError(`${path} is not a record of served data versions (no "${MAGIC}" header)`);
  }
  if (head.readUInt32LE(8) !== FORMAT_VERSION || head.readUInt32LE(12) !== RECORD_LENGTH) {
    throw new HistoryError(`${path} is of format ${head.readUInt32LE(8)}, which this release does not read`);
  }
  const body = size - HEADER_LENGTH;
  if (body % RECORD_LENGTH !== 0) {
    throw new HistoryError(`${path} is cut short: ${body % RECORD_LENGTH} bytes follow its last whole record; restore it from a backup, or move it aside to start the record afresh`);
  }
  const count = body / RECORD_LENGTH;
  const alone = new Map<string, number>();
  let serial = 0;
  let last: Scan['last'] = null;
  let lastAt = Number.NEGATIVE_INFINITY;
  const chunk = Buffer.alloc(SCAN_RECORDS * RECORD_LENGTH);
  for (let first = 0; first < count; first += SCAN_RECORDS) {
    const n = Math.min(SCAN_RECORDS, count - first);
    const read = await handle.read(chunk, 0, n * RECORD_LENGTH, HEADER_LENGTH + first * RECORD_LENGTH);
    if (read.bytesRead !== n * RECORD_LENGTH) throw new HistoryError(`${path} changed while it was read`);
    for (let k = 0; k < n; k++) {
      const index = first + k;
      const r = decodeRecord(chunk.subarray(k * RECORD_LENGTH, (k + 1) * RECORD_LENGTH), index, path);
      // The first record of a pruned file carries the serial of the records dropped before it.
      const expected = index === 0 && (r.position === 0 || r.kind === RECORD_STOPPED) ? r.serial : Math.max(serial, r.position);
      const outOfOrder = index > 0 && r.position > 0 && (r.kind === RECORD_SERVED ? r.position <= serial : r.position > serial);
      if (r.serial !== expected || outOfOrder) {
        throw new HistoryError(`${path}: record ${index} is out of order (position ${r.position} after ${serial}); restore the file from a backup, or move it aside to start the record afresh`);
      }
      serial = r.serial;
      if (r.kind === RECORD_SERVED && r.position === 0) alone.set(r.snapshot, index);
      last = { state: { snapshot: r.snapshot, position: r.position }, kind: r.kind };
      lastAt = Math.max(lastAt, r.at);
    }
  }
  return { count, serial, last, lastAt, alone };
}

/**
 * Rewrite a record of format 1 at `path` (96-byte records, no data-as-of
 * time) in this format, each record checked and given a data-as-of time of
 * 0 (not known); returns whether there was one. Written beside it and
 * renamed into place.
 */
async function rewriteFormat1(path: string): Promise<boolean> {
  if ((await formatOf(path, MAGIC)) !== 1) return false;
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new HistoryError(`cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  const temp = join(dirname(path), tempFileName(basename(path)));
  let copy: FileHandle | null = null;
  try {
    const head = Buffer.alloc(HEADER_LENGTH);
    const { bytesRead } = await handle.read(head, 0, HEADER_LENGTH, 0);
    if (bytesRead < HEADER_LENGTH || head.readUInt32LE(12) !== FORMAT1_RECORD_LENGTH) throw new HistoryError(`${path} is of format 1 with a header this service did not write`);
    const body = (await handle.stat()).size - HEADER_LENGTH;
    if (body % FORMAT1_RECORD_LENGTH !== 0) throw new HistoryError(`${path} is cut short: ${body % FORMAT1_RECORD_LENGTH} bytes follow its last whole record; restore it from a backup, or move it aside to start the record afresh`);
    copy = await open(temp, 'w');
    await writeWhole(copy, header());
    const count = body / FORMAT1_RECORD_LENGTH;
    const chunk = Buffer.alloc(SCAN_RECORDS * FORMAT1_RECORD_LENGTH);
    for (let first = 0; first < count; first += SCAN_RECORDS) {
      const n = Math.min(SCAN_RECORDS, count - first);
      const read = await handle.read(chunk, 0, n * FORMAT1_RECORD_LENGTH, HEADER_LENGTH + first * FORMAT1_RECORD_LENGTH);
      if (read.bytesRead !== n * FORMAT1_RECORD_LENGTH) throw new HistoryError(`${path} changed while it was read`);
      const out: Buffer[] = [];
      for (let k = 0; k < n; k++) {
        const r = decodeRecord(chunk.subarray(k * FORMAT1_RECORD_LENGTH, (k + 1) * FORMAT1_RECORD_LENGTH), first + k, path);
        out.push(encodeRecord(r.kind, { snapshot: r.snapshot, position: r.position }, r.serial, r.at, 0, false));
      }
      await writeWhole(copy, Buffer.concat(out));
    }
    await copy.sync();
    await copy.close();
    copy = null;
    await rename(temp, path);
    await syncDirectory(dirname(path));
    return true;
  } catch (error) {
    await copy?.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error instanceof HistoryError ? error : new HistoryError(`cannot rewrite ${path}: ${(error as Error).message}`, { cause: error });
  } finally {
    await handle.close();
  }
}
