import { readSync, writeSync } from 'node:fs';
import { readAllAtSync } from '../common/atomic-file.js';
import { HistoryError } from '../common/errors.js';

/**
 * What the history's index (facts-index.ts) holds of each VPA's answer,
 * by its number: where its newest record starts (in 8-byte units), the
 * 64-bit fingerprint of that answer's detail and the confidence it is
 * served with; four u32 words a VPA, the confidence in the low 16 bits of
 * the fourth. Passes over every VPA (a snapshot compared, a prune, a
 * clean close) read them all; the rest of the time a state changes a few
 * VPAs. So between passes they can live in a file by number (`spill`),
 * read a row at a time and kept in a cache of the rows read since (the
 * live delta's VPAs, compared at every merge; history reads `peek`
 * without filling it), and a pass holds them
 * in memory again (`hold`), read back a chunk at a time. Writes while on
 * file go to the file and to the cache. The file is the index's own
 * scratch, made again at every open; nothing reads it after a crash.
 *
 * While the rows move between memory and the file (in chunks, with turns
 * of the main thread between them), the side they come from stays the one
 * read and written, and a write to a row already moved is made on the
 * other side too: whatever a merge does meanwhile lands in both.
 */

/** Words of one VPA's row: place, printA, printB, confidence. */
export const ROW_WORDS = 4;
/** Bytes of one VPA's row, in memory and on file. */
export const ROW_BYTES = ROW_WORDS * Uint32Array.BYTES_PER_ELEMENT;
/** Rows moved between memory and the file at a time, between turns of the main thread (1 MiB). */
export const CHUNK_ROWS = 65_536;
/** Rows the cache first has room for (64 KiB); it doubles as it fills. */
const FIRST_CACHE_ROWS = 4096;
/** The most rows cached (16 MiB, and about twice that for the Map's entries): ten times the live delta `serve` compacts at by default. */
const MAX_CACHE_ROWS = 1 << 20;

type Where = 'memory' | 'file' | 'holding' | 'spilling';

export class AnswerSlots {
  /** The rows in memory (4 words a number, its length the capacity), or empty while on file. */
  #rows: Uint32Array;
  /** The file rows are spilled to, as a descriptor; null: always in memory. */
  #fd: number | null;
  #where: Where = 'memory';
  /** While holding or spilling: the rows below this number are on both sides. */
  #movedUpTo = 0;
  /** Passes holding the rows in memory. */
  #holders = 0;
  /** The move under way, if any. */
  #moving: Promise<void> | null = null;
  /** Rows read from the file, by number: their place in `#cacheRows`. */
  readonly #cached = new Map<number, number>();
  #cacheRows: Uint32Array = new Uint32Array(0);
  #cacheBytes: Uint8Array = new Uint8Array(0);
  /** One row's bytes, read or written on file. */
  readonly #row = new Uint32Array(ROW_WORDS);
  readonly #rowBytes = new Uint8Array(this.#row.buffer);
  /** One row read by `peek`. */
  readonly #peekRow = new Uint32Array(ROW_WORDS);
  readonly #peekBytes = new Uint8Array(this.#peekRow.buffer);
  /** Numbers below it may hold a row: the extent of a move. */
  readonly #end: () => number;
  /** Numbers the rows have room for wherever they are: what a hold allocates, so that VPAs added after it do not grow them one by one. */
  #room: number;
  readonly #chunkRows: number;

  /**
   * Rows of `rows` (ROW_WORDS a number), in memory; spilled to the file
   * open as `fd` when one is given and no pass holds them, `chunkRows` at a
   * time.
   */
  constructor(rows: Uint32Array, end: () => number, fd: number | null = null, chunkRows = CHUNK_ROWS) {
    this.#rows = rows;
    this.#end = end;
    this.#room = rows.length / ROW_WORDS;
    this.#fd = fd;
    this.#chunkRows = chunkRows;
  }

  /** Whether every row is in memory (a pass may read them all). */
  get inMemory(): boolean {
    return this.#where === 'memory' || this.#where === 'spilling';
  }

  /** Bytes in memory: the rows held and the cache. */
  get bytes(): number {
    return this.#rows.byteLength + this.#cacheRows.byteLength;
  }

  /** The rows, when in memory (for the kept index); else null. */
  get rows(): Uint32Array | null {
    return this.inMemory ? this.#rows : null;
  }

  /** Numbers the rows in memory have room for (0 on file). */
  get #capacity(): number {
    return this.#rows.length / ROW_WORDS;
  }

  /** Room for `length` numbers, what the rows in memory hold copied (on file, the room a hold makes). */
  grow(length: number): void {
    this.#room = Math.max(this.#room, length);
    if (this.#where === 'file' || length <= this.#capacity) return;
    const grown = new Uint32Array(length * ROW_WORDS);
    grown.set(this.#rows);
    this.#rows = grown;
  }

  /**
   * Word `word` of number's row, not cached when read from the file: a
   * history read (an as-of lookup, GET /v1/verify/upi/history) names any
   * VPA, and many of them would fill the cache that merges rely on.
   */
  peek(number: number, word: number): number {
    if (this.inMemory) return this.#rows[number * ROW_WORDS + word]!;
    const at = this.#cached.get(number);
    if (at !== undefined) return this.#cacheRows[at * ROW_WORDS + word]!;
    this.#readRow(number, this.#peekBytes, 0);
    return this.#peekRow[word]!;
  }

  /** Word `word` of number's row. */
  word(number: number, word: number): number {
    if (this.inMemory) return this.#rows[number * ROW_WORDS + word]!;
    // Found first: the cache's array is made by the first read.
    const at = this.#cachedAt(number);
    return this.#cacheRows[at * ROW_WORDS + word]!;
  }

  /** Set number's row. */
  put(number: number, place: number, printA: number, printB: number, confidence: number): void {
    const row = this.#row;
    row[0] = place;
    row[1] = printA;
    row[2] = printB;
    row[3] = confidence;
    this.#write(number, 0, ROW_WORDS);
  }

  /** Set number's confidence (a row it has). */
  setConfidence(number: number, confidence: number): void {
    if (this.word(number, 3) === confidence) return;
    this.#row[3] = confidence;
    this.#write(number, 3, 1);
  }

  /** Words `from` to `from + count` of `#row` into number's row, on each side that holds it. */
  #write(number: number, from: number, count: number): void {
    const inMemory = this.inMemory;
    const moved = number < this.#movedUpTo;
    if (inMemory || (this.#where === 'holding' && moved)) {
      if (number >= this.#capacity) this.grow(Math.max(number + 1, this.#room));
      copyWords(this.#row, from, count, this.#rows, number * ROW_WORDS);
    }
    if (!inMemory || (this.#where === 'spilling' && moved)) {
      this.#writeFile(number, from, count);
      const at = this.#cached.get(number);
      if (at !== undefined) copyWords(this.#row, from, count, this.#cacheRows, at * ROW_WORDS);
    }
  }

  #writeFile(number: number, from: number, count: number): void {
    const length = count * Uint32Array.BYTES_PER_ELEMENT;
    const offset = from * Uint32Array.BYTES_PER_ELEMENT;
    try {
      if (writeSync(this.#descriptor(), this.#rowBytes, offset, length, number * ROW_BYTES + offset) !== length) throw new Error('a short write');
    } catch (error) {
      throw new HistoryError(`the history's index could not write the row of VPA ${number} (${(error as Error).message})`, { cause: error });
    }
  }

  /** The file's descriptor; an Error once retired (the callers make it a HistoryError). */
  #descriptor(): number {
    if (this.#fd === null) throw new Error('its file is closed');
    return this.#fd;
  }

  /** Number's row read from the file into the cache; its place there. */
  #cachedAt(number: number): number {
    const known = this.#cached.get(number);
    if (known !== undefined) return known;
    // The rows read since the last pass: a merge's VPAs are its delta's, read again at every merge until the
    // compaction's pass empties the cache (so it holds about the VPAs of a delta, and the few a correction names).
    // A delta far larger than the default's starts it again when full: its rows are read again.
    if (this.#cached.size === MAX_CACHE_ROWS) this.#cached.clear();
    const at = this.#cached.size;
    if (at * ROW_WORDS === this.#cacheRows.length) {
      const grown = new Uint32Array(Math.max(FIRST_CACHE_ROWS, 2 * at) * ROW_WORDS);
      grown.set(this.#cacheRows);
      this.#cacheRows = grown;
      this.#cacheBytes = new Uint8Array(grown.buffer);
    }
    this.#readRow(number, this.#cacheBytes, at * ROW_BYTES);
    this.#cached.set(number, at);
    return at;
  }

  /** Number's row from the file into `into` at `offset`. */
  #readRow(number: number, into: Uint8Array, offset: number): void {
    let read;
    try {
      read = readSync(this.#descriptor(), into, offset, ROW_BYTES, number * ROW_BYTES);
    } catch (error) {
      throw new HistoryError(`the history's index could not read the row of VPA ${number} (${(error as Error).message})`, { cause: error });
    }
    if (read !== ROW_BYTES) throw new HistoryError(`the history's index has no row for VPA ${number} in its file`);
  }

  /**
   * Hold every row in memory until `release`: a pass over every VPA
   * begins. Resolves once they are (at once when they are already).
   */
  async hold(): Promise<void> {
    this.#holders++;
    try {
      while (!this.inMemory || this.#where === 'spilling') {
        if (this.#where === 'spilling') {
          // The rows are all still in memory: the spill stops at its next chunk.
          this.#where = 'memory';
          break;
        }
        if (this.#moving === null) this.#start('holding');
        await this.#moving;
      }
    } catch (error) {
      this.#holders--;
      throw error;
    }
  }

  /** A pass over every VPA is done: once no other holds them, the rows go to the file (when there is one). */
  release(): void {
    if (this.#holders === 0) throw new RangeError('the rows were not held');
    this.#holders--;
    this.spill();
  }

  /** Move the rows to the file, when there is one and no pass holds them. */
  spill(): void {
    if (this.#holders === 0 && this.#fd !== null && this.#where === 'memory' && this.#moving === null) this.#start('spilling');
  }

  /**
   * Stop using the file (the index is replaced, or its file closed), so
   * that a descriptor closed and given to another file is never written:
   * rows in memory stay there (a spill under way stops), and rows on file
   * can no longer be read (HistoryError).
   */
  retire(): void {
    this.#fd = null;
    if (this.#where === 'spilling') this.#where = 'memory';
  }

  /** Resolves once no move is under way (a close waits for it). */
  async settled(): Promise<void> {
    while (this.#moving !== null) await this.#moving;
  }

  /** Begin moving the rows to memory ('holding') or to the file ('spilling'). */
  #start(how: 'holding' | 'spilling'): void {
    this.#where = how;
    this.#movedUpTo = 0;
    this.#moving = this.#move(how);
  }

  /** The move #start begins, a chunk at a time. */
  async #move(how: 'holding' | 'spilling'): Promise<void> {
    // Nothing moves before #start has noted the move: its end (below) clears the note.
    await Promise.resolve();
    let failed = false;
    try {
      if (how === 'holding') this.#rows = new Uint32Array(Math.max(this.#end(), this.#room, 1) * ROW_WORDS);
      for (;;) {
        // A hold during a spill takes the rows back as they are; a number added meanwhile extends the move.
        if (this.#where !== how) return;
        const end = this.#end();
        if (this.#movedUpTo >= end) break;
        const to = Math.min(end, this.#movedUpTo + this.#chunkRows);
        if (how === 'holding') this.grow(end);
        this.#moveRows(how, this.#movedUpTo, to);
        this.#movedUpTo = to;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (how === 'holding') {
        this.#where = 'memory';
        this.#cached.clear();
        this.#cacheRows = new Uint32Array(0);
        this.#cacheBytes = new Uint8Array(0);
      } else {
        this.#where = 'file';
        this.#rows = new Uint32Array(0);
      }
    } catch (error) {
      failed = true;
      // A spill that fails leaves the rows in memory, where they all still are (until the next release tries again);
      // a hold that fails leaves them on file.
      if (how === 'spilling') this.#where = 'memory';
      else {
        this.#where = 'file';
        this.#rows = new Uint32Array(0);
        throw error;
      }
    } finally {
      this.#movedUpTo = 0;
      this.#moving = null;
      // Released while it moved them in, or held and released while it moved them out: to the file again.
      if (!failed) this.spill();
    }
  }

  /** Rows `from` to `to` copied to the other side. */
  #moveRows(how: 'holding' | 'spilling', from: number, to: number): void {
    const bytes = new Uint8Array(this.#rows.buffer, from * ROW_BYTES, (to - from) * ROW_BYTES);
    const position = from * ROW_BYTES;
    try {
      if (how === 'holding') {
        if (!readAllAtSync(this.#descriptor(), bytes, position)) throw new Error(`the file ends before row ${to}`);
      } else {
        const written = writeSync(this.#descriptor(), bytes, 0, bytes.length, position);
        if (written !== bytes.length) throw new Error(`${written} bytes of ${bytes.length} written`);
      }
    } catch (error) {
      throw new HistoryError(`the history's index could not ${how === 'holding' ? 'read' : 'write'} its rows (${(error as Error).message})`, { cause: error });
    }
  }
}

/** Words `from` to `from + count` of `row` into the row of `rows` starting at `base` (no view made: a pass writes millions). */
function copyWords(row: Uint32Array, from: number, count: number, rows: Uint32Array, base: number): void {
  for (let word = from; word < from + count; word++) rows[base + word] = row[word]!;
}
