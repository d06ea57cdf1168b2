/**
 * The index in memory of the history of answers (change-log.ts): each
 * VPA's newest record and the answer it tells, made again at open from the
 * file, or from the copy a clean close kept (facts-index-file.ts).
 */

/** A slot's `told` when it holds no VPA. */
export const EMPTY = 0xff;
/** The bits of `told` that toldOf gives; the cluster number is kept apart. */
export const TOLD_BITS = 0x3f;
/** toldOf is the cluster number times this, plus the low bits. */
export const TOLD_CLUSTER = 64;
/** The bit of `told` marking a VPA seen in the pass under way. */
export const SEEN = 0x40;
/** Records start at multiples of this many bytes of the file. */
export const RECORD_ALIGN = 8;

/** The slots of a FactsIndex: `told.length` of them, a power of two; `count` hold a VPA. */
export interface FactsIndexArrays {
  readonly count: number;
  readonly hashA: Uint32Array;
  readonly hashB: Uint32Array;
  readonly place: Uint32Array;
  readonly cluster: Uint32Array;
  readonly told: Uint8Array;
}

/**
 * Each VPA's newest record and the answer it tells (toldOf), by a 64-bit
 * hash of the VPA (two 32-bit FNV-1a hashes of different bases), in 17
 * bytes a slot and at most 3 VPAs to 4 slots. Two VPAs sharing all 64 bits
 * would share an entry (about one chance in 10^5 at 10M VPAs); a history
 * read checks the VPA its records name.
 */
export class FactsIndex {
  count = 0;
  #capacity: number;
  #hashA: Uint32Array;
  #hashB: Uint32Array;
  /** Where the newest record starts, in 8-byte units. */
  #place: Uint32Array;
  #cluster: Uint32Array;
  /** The low 6 bits of toldOf, and bit 6 for a VPA seen in the pass under way; EMPTY for an empty slot. */
  #told: Uint8Array;

  /** An empty index, or one of `arrays` (FactsIndexArrays: their slots as a file kept them, checked by the caller). */
  constructor(arrays: FactsIndexArrays | null = null) {
    if (arrays === null) {
      this.#capacity = 1 << 10;
      arrays = emptyArrays(this.#capacity);
    } else {
      this.#capacity = arrays.told.length;
      this.count = arrays.count;
    }
    ({ hashA: this.#hashA, hashB: this.#hashB, place: this.#place, cluster: this.#cluster, told: this.#told } = arrays);
  }

  /** The index's slots, as they are (not a copy): for a file to keep them. */
  get arrays(): FactsIndexArrays {
    return { count: this.count, hashA: this.#hashA, hashB: this.#hashB, place: this.#place, cluster: this.#cluster, told: this.#told };
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
    return slot < 0 ? null : this.#cluster[slot]! * TOLD_CLUSTER + (this.#told[slot]! & TOLD_BITS);
  }

  offsetAt(slot: number): number {
    return this.#place[slot]! * RECORD_ALIGN;
  }

  put(key: string, offset: number, told: number): void {
    this.putHashed(hashA(key), hashB(key), offset, told);
  }

  putHashed(a: number, b: number, offset: number, told: number): void {
    if ((this.count + 1) * 4 > this.#capacity * 3) this.#grow();
    const slot = this.#slotFor(a, b);
    this.#place[slot] = offset / RECORD_ALIGN;
    this.#cluster[slot] = Math.floor(told / TOLD_CLUSTER);
    this.#told[slot] = (told % TOLD_CLUSTER) | SEEN;
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
    const old = { a: this.#hashA, b: this.#hashB, place: this.#place, cluster: this.#cluster, told: this.#told };
    this.#capacity *= 2;
    ({ hashA: this.#hashA, hashB: this.#hashB, place: this.#place, cluster: this.#cluster, told: this.#told } = emptyArrays(this.#capacity));
    this.count = 0;
    for (let i = 0; i < old.told.length; i++) {
      if (old.told[i] === EMPTY) continue;
      const slot = this.#slotFor(old.a[i]!, old.b[i]!);
      this.#place[slot] = old.place[i]!;
      this.#cluster[slot] = old.cluster[i]!;
      this.#told[slot] = old.told[i]!;
    }
  }
}

function emptyArrays(capacity: number): FactsIndexArrays {
  return { count: 0, hashA: new Uint32Array(capacity), hashB: new Uint32Array(capacity), place: new Uint32Array(capacity), cluster: new Uint32Array(capacity), told: new Uint8Array(capacity).fill(EMPTY) };
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
