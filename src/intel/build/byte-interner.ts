import { hashKeyBytes } from '../../engine/hash.js';

/**
 * Interns byte strings (VPA keys, urls, evidence ids) to dense ids without
 * making JS strings: open addressing over a power-of-two table with the hash
 * kept per id, bytes appended to one growing blob. At tens of millions of
 * records, a Map of decoded strings spent most of the build in allocation
 * and garbage collection; this keeps the working set in a few typed arrays.
 */
export class ByteInterner {
  #table: Int32Array;
  #mask: number;
  #hashes: Uint32Array;
  #offsets: Uint32Array;
  #bytes: Uint8Array;
  #size = 0;
  /** Whether the last `intern` call added a new entry. */
  added = false;

  constructor(expectedEntries = 1024, expectedBytes = expectedEntries * 16) {
    const capacity = powerOfTwoAtLeast(Math.max(16, Math.ceil(expectedEntries * 2)));
    this.#table = new Int32Array(capacity).fill(-1);
    this.#mask = capacity - 1;
    this.#hashes = new Uint32Array(Math.max(16, expectedEntries));
    this.#offsets = new Uint32Array(Math.max(16, expectedEntries) + 1);
    this.#bytes = new Uint8Array(Math.max(64, expectedBytes));
  }

  get size(): number {
    return this.#size;
  }

  /** Id of bytes[start..end), adding it when new (then `added` is true). */
  intern(bytes: Uint8Array, start: number, end: number): number {
    const hash = hashKeyBytes(bytes, start, end);
    const length = end - start;
    const table = this.#table;
    const mask = this.#mask;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const id = table[slot]!;
      if (id < 0) break;
      if (this.#hashes[id] === hash && this.#equals(id, bytes, start, length)) {
        this.added = false;
        return id;
      }
    }
    const id = this.#append(hash, bytes, start, end);
    this.added = true;
    return id;
  }

  /** Offsets (size+1 entries) and bytes of every entry, in id order, trimmed. */
  finish(): { bytes: Uint8Array; offsets: Uint32Array } {
    const offsets = this.#offsets.slice(0, this.#size + 1);
    return { bytes: this.#bytes.slice(0, offsets[this.#size]!), offsets };
  }

  #equals(id: number, bytes: Uint8Array, start: number, length: number): boolean {
    const from = this.#offsets[id]!;
    if (this.#offsets[id + 1]! - from !== length) return false;
    const stored = this.#bytes;
    for (let i = 0; i < length; i++) if (stored[from + i] !== bytes[start + i]) return false;
    return true;
  }

  #append(hash: number, bytes: Uint8Array, start: number, end: number): number {
    const id = this.#size;
    if (id + 1 >= this.#hashes.length) {
      this.#hashes = grow(this.#hashes, this.#hashes.length * 2);
      this.#offsets = grow(this.#offsets, this.#offsets.length * 2);
    }
    const at = this.#offsets[id]!;
    const needed = at + end - start;
    if (needed > this.#bytes.length) this.#bytes = grow(this.#bytes, Math.max(needed, this.#bytes.length * 2));
    this.#bytes.set(bytes.subarray(start, end), at);
    this.#offsets[id + 1] = needed;
    this.#hashes[id] = hash;
    this.#size = id + 1;
    // Keep load ≤ 0.5 so probes stay short.
    if (this.#size * 2 > this.#table.length) this.#rehash(this.#table.length * 2);
    else this.#place(id, hash);
    return id;
  }

  #place(id: number, hash: number): void {
    const table = this.#table;
    const mask = this.#mask;
    let slot = hash & mask;
    while (table[slot]! >= 0) slot = (slot + 1) & mask;
    table[slot] = id;
  }

  #rehash(capacity: number): void {
    this.#table = new Int32Array(capacity).fill(-1);
    this.#mask = capacity - 1;
    for (let id = 0; id < this.#size; id++) this.#place(id, this.#hashes[id]!);
  }
}

/** Lexicographic byte order of a[aStart..aEnd) and b[bStart..bEnd): code-unit order for ASCII and UTF-8. */
export function compareByteRanges(a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): number {
  const length = Math.min(aEnd - aStart, bEnd - bStart);
  for (let i = 0; i < length; i++) {
    const d = a[aStart + i]! - b[bStart + i]!;
    if (d !== 0) return d;
  }
  return aEnd - aStart - (bEnd - bStart);
}

function powerOfTwoAtLeast(n: number): number {
  let p = 16;
  while (p < n) p *= 2;
  return p;
}

function grow<T extends Uint8Array | Uint32Array>(array: T, length: number): T {
  const next = new (array.constructor as new (n: number) => T)(length);
  next.set(array);
  return next;
}
