/**
 * The index in memory of the history of answers (change-log.ts): each
 * VPA's newest record, the answer it tells, the fingerprint of the rest of
 * that answer, the confidence it is served with and the VPA's number (its
 * place in the confidence columns, score-columns.ts), made again at open
 * from the file, or from the copy a clean close kept (facts-index-file.ts).
 */

/** A slot's `told` when it holds no VPA. */
export const EMPTY = 0xff;
/** The bits of `told` that toldOf gives. */
export const TOLD_BITS = 0x3f;
/** The bit of `told` marking a VPA seen in the pass under way. */
export const SEEN = 0x40;
/** Bytes of one slot, over its arrays. */
const SLOT_BYTES = 6 * Uint32Array.BYTES_PER_ELEMENT + Uint16Array.BYTES_PER_ELEMENT + Uint8Array.BYTES_PER_ELEMENT;
/** Records start at multiples of this many bytes of the file. */
export const RECORD_ALIGN = 8;

/** The slots of a FactsIndex: `told.length` of them, a power of two; `count` hold a VPA. */
export interface FactsIndexArrays {
  readonly count: number;
  readonly hashA: Uint32Array;
  readonly hashB: Uint32Array;
  readonly place: Uint32Array;
  readonly printA: Uint32Array;
  readonly printB: Uint32Array;
  readonly number: Uint32Array;
  readonly confidence: Uint16Array;
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
 * Each VPA's newest record and the answer it tells (IndexedAnswer), by a
 * 64-bit hash of the VPA (two 32-bit FNV-1a hashes of different bases), in
 * 27 bytes a slot and at most 3 VPAs to 4 slots. VPAs are numbered from 0
 * in the order they are first recorded, and never leave the index (a prune
 * keeps each VPA's newest record), so the numbers are those of 0 to
 * `count - 1`. Two VPAs sharing all 64 bits
 * would share an entry (about one chance in 10^5 at 10M VPAs); a history
 * read checks the VPA its records name.
 */
export class FactsIndex {
  count = 0;
  #capacity: number;
  #hashA!: Uint32Array;
  #hashB!: Uint32Array;
  /** Where the newest record starts, in 8-byte units. */
  #place!: Uint32Array;
  #printA!: Uint32Array;
  #printB!: Uint32Array;
  #number!: Uint32Array;
  #confidence!: Uint16Array;
  /** toldOf, and bit 6 for a VPA seen in the pass under way; EMPTY for an empty slot. */
  #told!: Uint8Array;

  /** An empty index, or one of `arrays` (FactsIndexArrays: their slots as a file kept them, checked by the caller). */
  constructor(arrays: FactsIndexArrays | null = null) {
    if (arrays === null) {
      this.#capacity = 1 << 10;
      arrays = emptyArrays(this.#capacity);
    } else {
      this.#capacity = arrays.told.length;
      this.count = arrays.count;
    }
    this.#take(arrays);
  }

  /** The index's slots, as they are (not a copy): for a file to keep them. */
  get arrays(): FactsIndexArrays {
    return { count: this.count, hashA: this.#hashA, hashB: this.#hashB, place: this.#place, printA: this.#printA, printB: this.#printB, number: this.#number, confidence: this.#confidence, told: this.#told };
  }

  #take(arrays: FactsIndexArrays): void {
    ({ hashA: this.#hashA, hashB: this.#hashB, place: this.#place, printA: this.#printA, printB: this.#printB, number: this.#number, confidence: this.#confidence, told: this.#told } = arrays);
  }

  /** Bytes of its slots: 27 a slot. */
  get bytes(): number {
    return this.#capacity * SLOT_BYTES;
  }

  find(key: string): number {
    return this.findHashed(hashA(key), hashB(key));
  }

  findHashed(a: number, b: number): number {
    const mask = this.#capacity - 1;
    for (let slot = a & mask; ; slot = (slot + 1) & mask) {
      if (this.#told[slot] === EMPTY) return -1;
      if (this.#hashA[slot] === a && this.#hashB[slot] === b) return slot;
    }
  }

  told(slot: number): number | null {
    return slot < 0 ? null : this.#told[slot]! & TOLD_BITS;
  }

  /** Whether the answer `after` differs from the one slot `slot` holds (-1: none, as CLEARED); `withConfidence`: its confidence too. */
  differs(slot: number, after: IndexedAnswer, withConfidence: boolean): boolean {
    if (slot < 0) return after.told !== 0;
    return (
      (this.#told[slot]! & TOLD_BITS) !== after.told ||
      this.#printA[slot] !== after.printA ||
      this.#printB[slot] !== after.printB ||
      (withConfidence && this.#confidence[slot] !== after.confidence)
    );
  }

  numberAt(slot: number): number {
    return this.#number[slot]!;
  }

  confidenceAt(slot: number): number {
    return this.#confidence[slot]!;
  }

  /** The confidence a VPA is served with, where no record of it says so (a new snapshot scored it again). */
  setConfidence(slot: number, confidence: number): void {
    this.#confidence[slot] = confidence;
  }

  /** Each VPA's served confidence, by its number: `count` of them. */
  confidenceByNumber(): Uint16Array {
    const out = new Uint16Array(this.count);
    for (let slot = 0; slot < this.#capacity; slot++) if (this.#told[slot] !== EMPTY) out[this.#number[slot]!] = this.#confidence[slot]!;
    return out;
  }

  /** Set the served confidence of each VPA numbered below `byNumber.length` from it, where it holds one (not NO_SCORE). */
  takeConfidences(byNumber: Uint16Array, noScore: number): void {
    for (let slot = 0; slot < this.#capacity; slot++) {
      if (this.#told[slot] === EMPTY) continue;
      const value = byNumber[this.#number[slot]!];
      if (value !== undefined && value !== noScore) this.#confidence[slot] = value;
    }
  }

  offsetAt(slot: number): number {
    return this.#place[slot]! * RECORD_ALIGN;
  }

  /** Put the newest record of `key`, at `offset`, telling `answer`; returns the VPA's number (a new VPA takes the next). */
  put(key: string, offset: number, answer: IndexedAnswer): number {
    return this.putHashed(hashA(key), hashB(key), offset, answer, -1);
  }

  /** put by the VPA's hashes; `number` -1 keeps the VPA's number, or gives a new VPA the next. */
  putHashed(a: number, b: number, offset: number, answer: IndexedAnswer, number: number): number {
    if ((this.count + 1) * 4 > this.#capacity * 3) this.#grow();
    const before = this.count;
    const slot = this.#slotFor(a, b);
    if (number >= 0) this.#number[slot] = number;
    else if (this.count > before) this.#number[slot] = before;
    this.#place[slot] = offset / RECORD_ALIGN;
    this.#printA[slot] = answer.printA;
    this.#printB[slot] = answer.printB;
    this.#confidence[slot] = answer.confidence;
    this.#told[slot] = answer.told | SEEN;
    return this.#number[slot]!;
  }

  startPass(): void {
    for (let slot = 0; slot < this.#capacity; slot++) if (this.#told[slot] !== EMPTY) this.#told[slot]! &= TOLD_BITS;
  }

  mark(slot: number): void {
    this.#told[slot]! |= SEEN;
  }

  unseenFlaggedOffsets(): number[] {
    const out: number[] = [];
    for (let slot = 0; slot < this.#capacity; slot++) {
      const told = this.#told[slot]!;
      if (told !== EMPTY && (told & SEEN) === 0 && (told & 1) === 1) out.push(this.offsetAt(slot));
    }
    return out;
  }

  /** The slot of hash (a, b), taken if it was empty. */
  #slotFor(a: number, b: number): number {
    const mask = this.#capacity - 1;
    for (let slot = a & mask; ; slot = (slot + 1) & mask) {
      if (this.#told[slot] === EMPTY) {
        this.#hashA[slot] = a;
        this.#hashB[slot] = b;
        this.#told[slot] = 0;
        this.count++;
        return slot;
      }
      if (this.#hashA[slot] === a && this.#hashB[slot] === b) return slot;
    }
  }

  #grow(): void {
    const old = this.arrays;
    this.#capacity *= 2;
    this.#take(emptyArrays(this.#capacity));
    this.count = 0;
    for (let i = 0; i < old.told.length; i++) {
      if (old.told[i] === EMPTY) continue;
      const slot = this.#slotFor(old.hashA[i]!, old.hashB[i]!);
      this.#place[slot] = old.place[i]!;
      this.#printA[slot] = old.printA[i]!;
      this.#printB[slot] = old.printB[i]!;
      this.#number[slot] = old.number[i]!;
      this.#confidence[slot] = old.confidence[i]!;
      this.#told[slot] = old.told[i]!;
    }
  }
}

function emptyArrays(capacity: number): FactsIndexArrays {
  return {
    count: 0,
    hashA: new Uint32Array(capacity),
    hashB: new Uint32Array(capacity),
    place: new Uint32Array(capacity),
    printA: new Uint32Array(capacity),
    printB: new Uint32Array(capacity),
    number: new Uint32Array(capacity),
    confidence: new Uint16Array(capacity),
    told: new Uint8Array(capacity).fill(EMPTY),
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
