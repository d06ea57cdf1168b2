import { AnswerSlots, ROW_BYTES, ROW_WORDS } from './answer-slots.js';

/**
 * The index of the history of answers (change-log.ts): each VPA's newest
 * record, the answer it tells, the fingerprint of the rest of that answer,
 * the confidence it is served with and the VPA's number (its place in the
 * confidence columns, score-columns.ts), made again at open from the file,
 * or from the copy a clean close kept (facts-index-file.ts). The table,
 * hashes and `told` stay in memory; the rest (answer-slots.ts) may live in
 * a file between passes over every VPA.
 */

/** A VPA's `told` while its number holds no VPA. */
export const EMPTY = 0xff;
/** The bits of `told` that toldOf gives. */
export const TOLD_BITS = 0x3f;
/** The bit of `told` marking a VPA seen in the pass under way. */
export const SEEN = 0x40;
/** Bytes of one VPA always in memory: its hashes and `told`. */
export const RESIDENT_VPA_BYTES = 2 * Uint32Array.BYTES_PER_ELEMENT + Uint8Array.BYTES_PER_ELEMENT;
/** Bytes of one VPA over the arrays by number, its row (answer-slots.ts) included. */
export const VPA_BYTES = RESIDENT_VPA_BYTES + ROW_BYTES;
/** Bytes of one slot of the table. */
export const SLOT_BYTES = Uint32Array.BYTES_PER_ELEMENT;
/** Records start at multiples of this many bytes of the file. */
export const RECORD_ALIGN = 8;
const MIN_SLOTS = 1 << 10;
const MIN_ROOM = 1 << 10;
const MAX_ROOM = 1 << 16;

/**
 * The arrays of a FactsIndex: `table`, of slots each 0 or a
 * VPA's number + 1; and by number, `count` of them at least, each VPA's
 * hashes, its row (the place of its newest record, the fingerprint of its
 * answer's detail, its confidence: answer-slots.ts) and `told`.
 */
export interface FactsIndexArrays {
  readonly count: number;
  readonly table: Uint32Array;
  /** Each VPA's two hashes side by side (2 × number, 2 × number + 1), so that a probe reads them together. */
  readonly hashes: Uint32Array;
  /** ROW_WORDS a VPA: place, printA, printB, confidence. */
  readonly rows: Uint32Array;
  readonly told: Uint8Array;
}

/** What the index holds of a VPA's answer: toldOf, the 64-bit fingerprint of its detail, and the confidence served (0xffff: none). */
export interface IndexedAnswer {
  readonly told: number;
  readonly printA: number;
  readonly printB: number;
  readonly confidence: number;
}

/**
 * Each VPA's newest record and the answer it tells (IndexedAnswer), found
 * by a 64-bit hash of the VPA (two 32-bit FNV-1a hashes of different
 * bases). VPAs are numbered from 0 in the order they are first recorded,
 * and never leave the index (a prune keeps each VPA's newest record), so
 * the numbers are those of 0 to `count - 1`: what the index holds of a VPA
 * is kept in arrays by its number, 25 bytes each (9 between passes, the
 * rest on file) and at most a sixteenth to spare, and a table of 4-byte
 * slots, at most 4 VPAs to 5, finds the number by hash (docs/design.md,
 * "The history of answers"). A VPA is
 * named to callers by its number. Two VPAs sharing all 64 bits would
 * share an entry (about one chance in 10^5 at 10M VPAs); a history read
 * checks the VPA its records name.
 */
export class FactsIndex {
  count = 0;
  /** One past the highest number held: `count` unless a number below it is not held yet (records read out of order). */
  #end = 0;
  #table!: Uint32Array;
  #hashes!: Uint32Array;
  /** Where the newest record starts (in 8-byte units), the fingerprint and the confidence, by number. */
  #slots!: AnswerSlots;
  /** toldOf, and bit 6 for a VPA seen in the pass under way; EMPTY for a number no VPA holds yet. */
  #told!: Uint8Array;

  /**
   * An empty index with room for `room` VPAs before its arrays grow, or one
   * of `arrays` (FactsIndexArrays: as a file kept them, checked by the
   * caller).
   */
  constructor(arrays: FactsIndexArrays | null = null, room = 0) {
    if (arrays === null) {
      this.#take({ count: 0, table: new Uint32Array(slotsFor(room)), ...arraysByNumber(Math.max(MIN_ROOM, room)) });
      return;
    }
    this.count = arrays.count;
    this.#end = arrays.count;
    this.#take(arrays);
  }

  /**
   * Keep the rows in the file open as `fd` (emptied, the index's alone)
   * while no pass holds them (`hold`): moved there from now on.
   */
  spillTo(fd: number): void {
    const rows = this.#slots.rows;
    if (rows === null) throw new RangeError('the rows are on file already');
    this.#slots = new AnswerSlots(rows, () => this.#end, fd);
    this.#slots.spill();
  }

  /** Hold the rows in memory for a pass over every VPA, until `release`. */
  hold(): Promise<void> {
    return this.#slots.hold();
  }

  release(): void {
    this.#slots.release();
  }

  /** Stop using the rows' file (AnswerSlots.retire): the index is replaced, or its log closed. */
  retire(): void {
    this.#slots.retire();
  }

  /** Resolves once the rows are not moving between memory and the file. */
  settled(): Promise<void> {
    return this.#slots.settled();
  }

  /** Whether the VPAs held are numbered 0 to `count - 1`, every number held: what a log that lost none of its VPAs gives. */
  get dense(): boolean {
    return this.#end === this.count;
  }

  /** The index's arrays, as they are (not copies, and longer than `count` by number): for a file to keep them; the rows held (`hold`). */
  get arrays(): FactsIndexArrays {
    const rows = this.#slots.rows;
    if (rows === null) throw new RangeError('the rows are on file: hold them first');
    return { count: this.count, table: this.#table, hashes: this.#hashes, rows, told: this.#told };
  }

  /** Take `arrays`, the rows in memory. */
  #take(arrays: FactsIndexArrays): void {
    ({ table: this.#table, hashes: this.#hashes, told: this.#told } = arrays);
    this.#slots = new AnswerSlots(arrays.rows, () => this.#end);
  }

  /** Bytes in memory: 4 a slot, RESIDENT_VPA_BYTES a VPA it has room for, and the rows held or cached. */
  get bytes(): number {
    return this.#table.length * SLOT_BYTES + this.#told.length * RESIDENT_VPA_BYTES + this.#slots.bytes;
  }

  /** The VPA's number, or -1 when the index does not hold it. */
  find(key: string): number {
    return this.findHashed(hashA(key), hashB(key));
  }

  findHashed(a: number, b: number): number {
    const table = this.#table;
    const hashes = this.#hashes;
    for (let slot = homeOf(a, table.length); ; slot = slot + 1 === table.length ? 0 : slot + 1) {
      const entry = table[slot]!;
      if (entry === 0) return -1;
      if (hashes[2 * entry - 2] === a && hashes[2 * entry - 1] === b) return entry - 1;
    }
  }

  /** toldOf of VPA `number` (-1: none, null). */
  told(number: number): number | null {
    return number < 0 ? null : this.#told[number]! & TOLD_BITS;
  }

  /** Whether the answer `after` differs from the one VPA `number` holds (-1: none, as CLEARED); `withConfidence`: its confidence too. */
  differs(number: number, after: IndexedAnswer, withConfidence: boolean): boolean {
    if (number < 0) return after.told !== 0;
    if ((this.#told[number]! & TOLD_BITS) !== after.told) return true;
    const slots = this.#slots;
    return slots.word(number, 1) !== after.printA || slots.word(number, 2) !== after.printB || (withConfidence && slots.word(number, 3) !== after.confidence);
  }

  confidenceAt(number: number): number {
    return this.#slots.word(number, 3);
  }

  /** The confidence a VPA is served with, where no record of it says so (a new snapshot scored it again). */
  setConfidence(number: number, confidence: number): void {
    this.#slots.setConfidence(number, confidence);
  }

  /** Each VPA's served confidence, by its number: `count` of them (a copy). A pass over every VPA: read in memory once held (`hold`). */
  confidenceByNumber(): Uint16Array {
    const out = new Uint16Array(this.count);
    for (let number = 0; number < out.length; number++) out[number] = this.#slots.word(number, 3);
    return out;
  }

  /** Set the served confidence of each VPA numbered below `byNumber.length` from it, where it holds one (not NO_SCORE). As confidenceByNumber, held. */
  takeConfidences(byNumber: Uint16Array, noScore: number): void {
    const end = Math.min(this.count, byNumber.length);
    for (let number = 0; number < end; number++) {
      const value = byNumber[number]!;
      if (value !== noScore) this.#slots.setConfidence(number, value);
    }
  }

  offsetAt(number: number): number {
    return this.#slots.word(number, 0) * RECORD_ALIGN;
  }

  /** offsetAt for a history read, which names any VPA: not kept in the rows' cache (AnswerSlots.peek). */
  newestOffset(number: number): number {
    return this.#slots.peek(number, 0) * RECORD_ALIGN;
  }

  /** Put the newest record of `key`, at `offset`, telling `answer`; returns the VPA's number (a new VPA takes the next). */
  put(key: string, offset: number, answer: IndexedAnswer): number {
    return this.putHashed(hashA(key), hashB(key), offset, answer, -1);
  }

  /**
   * put by the VPA's hashes; `number` is the VPA's as its record names it,
   * or -1 for the one it has, or the next for a new VPA. A VPA given
   * another number than it has, or a number another VPA has, is a log
   * that does not hold what it says: RangeError.
   */
  putHashed(a: number, b: number, offset: number, answer: IndexedAnswer, number: number): number {
    let at = this.findHashed(a, b);
    if (at < 0) {
      at = number >= 0 ? number : this.count;
      this.#add(a, b, at);
    } else if (number >= 0 && number !== at) {
      throw new RangeError(`a VPA numbered ${at} is named ${number}`);
    }
    this.#slots.put(at, offset / RECORD_ALIGN, answer.printA, answer.printB, answer.confidence);
    this.#told[at] = answer.told | SEEN;
    return at;
  }

  /** Room for `count` VPAs in all (and roomFor's spare beyond), arrays and table, when it has less: grown once, not step by step. */
  reserve(count: number): void {
    if (count <= this.#told.length) return;
    const room = roomFor(count);
    this.#makeRoom(room);
    if (slotsFor(room) > this.#table.length) this.#growTable(slotsFor(room));
  }

  startPass(): void {
    for (let number = 0; number < this.count; number++) this.#told[number]! &= TOLD_BITS;
  }

  mark(number: number): void {
    this.#told[number]! |= SEEN;
  }

  unseenFlaggedOffsets(): number[] {
    const out: number[] = [];
    for (let number = 0; number < this.count; number++) {
      const told = this.#told[number]!;
      if ((told & SEEN) === 0 && (told & 1) === 1) out.push(this.offsetAt(number));
    }
    return out;
  }

  /** Take `number` for a new VPA of hash (a, b). */
  #add(a: number, b: number, number: number): void {
    // Grown by a sixteenth: what is spare stays small, and a growth (a copy of them all) comes once in many VPAs.
    if (number >= this.#told.length) this.#makeRoom(Math.max(number + 1, this.#told.length + Math.max(MIN_ROOM, this.#told.length >>> 4)));
    if (this.#told[number] !== EMPTY) throw new RangeError(`two VPAs are numbered ${number}`);
    if ((this.count + 1) * 5 > this.#table.length * 4) this.#growTable();
    this.#hashes[2 * number] = a;
    this.#hashes[2 * number + 1] = b;
    this.#told[number] = 0;
    this.#slotOf(this.#table, a, number);
    this.count++;
    this.#end = Math.max(this.#end, number + 1);
  }

  /** Put `number` in the first empty slot of `table` from hash `a`'s. */
  #slotOf(table: Uint32Array, a: number, number: number): void {
    let slot = homeOf(a, table.length);
    while (table[slot] !== 0) slot = slot + 1 === table.length ? 0 : slot + 1;
    table[slot] = number + 1;
  }

  #growTable(slots = Math.ceil(this.#table.length * 1.25)): void {
    const table = new Uint32Array(slots);
    for (const entry of this.#table) if (entry !== 0) this.#slotOf(table, this.#hashes[2 * entry - 2]!, entry - 1);
    this.#table = table;
  }

  /** Arrays by number with room for `length` VPAs, what they held copied (the rows too, while in memory). */
  #makeRoom(length: number): void {
    const hashes = new Uint32Array(2 * length);
    hashes.set(this.#hashes);
    const told = new Uint8Array(length).fill(EMPTY);
    told.set(this.#told);
    this.#hashes = hashes;
    this.#told = told;
    this.#slots.grow(length);
  }
}

/**
 * The VPAs an index of `count` read whole (from its file, or copied by a
 * prune) is given room for: as many as VPAs new to the history in a while
 * (at most 65,536, a sixteenth of them at fewer), after which it grows.
 */
export function roomFor(count: number): number {
  return count + Math.min(MAX_ROOM, Math.max(MIN_ROOM, count >>> 4));
}

/** The slots of a table for `count` VPAs: at most 4 VPAs to 5 slots, and at least MIN_SLOTS. */
export function slotsFor(count: number): number {
  return Math.max(MIN_SLOTS, Math.ceil((count * 5) / 4));
}

/** Whether a table of `slots` can hold `count` VPAs. */
export function holds(slots: number, count: number): boolean {
  return slots >= MIN_SLOTS && count * 5 <= slots * 4;
}

/**
 * The slot a VPA's probe starts at: the high bits of hash `a` scaled to
 * the table, which need not be a power of two (it grows by a quarter, so
 * that what is spare stays small).
 */
function homeOf(a: number, slots: number): number {
  return Math.floor((a / 4294967296) * slots);
}

/** Empty arrays by number for `length` VPAs. */
export function arraysByNumber(length: number): Omit<FactsIndexArrays, 'count' | 'table'> {
  return {
    hashes: new Uint32Array(2 * length),
    rows: new Uint32Array(ROW_WORDS * length),
    told: new Uint8Array(length).fill(EMPTY),
  };
}

/** The hashes of a VPA, from its text or from its bytes (ASCII: the same codes). */
export function hashA(key: string | Uint8Array, start = 0, end = key.length): number {
  let h = 0x811c9dc5;
  if (typeof key === 'string') for (let i = start; i < end; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  else for (let i = start; i < end; i++) h = Math.imul(h ^ key[i]!, 0x01000193);
  return h >>> 0;
}

export function hashB(key: string | Uint8Array, start = 0, end = key.length): number {
  let h = 0x050c5d1f;
  if (typeof key === 'string') for (let i = end - 1; i >= start; i--) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) ^ (h >>> 15);
  else for (let i = end - 1; i >= start; i--) h = Math.imul(h ^ key[i]!, 0x01000193) ^ (h >>> 15);
  return h >>> 0;
}
