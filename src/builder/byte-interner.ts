import { hashKeyBytes } from '../engine/hash.js';
import { freshArrays, type ArrayAllocator, type TypedArrayType } from '../common/scratch-arrays.js';

/**
 * Interns byte strings (VPA keys, urls, evidence ids) to dense ids without
 * making JS strings: open addressing over a power-of-two table of
 * [id, hash] pairs, bytes appended to one growing blob. At tens of millions of
 * records, a Map of decoded strings spent most of the build in allocation
 * and garbage collection; this keeps the working set in a few typed arrays.
 */
/**
 * Everything an interner holds, as typed arrays over their own buffers: it
 * crosses threads by transfer, so a build can carry the evidence ids it has
 * seen to the next build without re-reading them.
 */
export interface ByteInternerState {
  readonly table: Int32Array;
  readonly offsets: Uint32Array;
  readonly bytes: Uint8Array;
  readonly size: number;
}

export class ByteInterner {
  // Two words per slot, [id, hash], id -1 when empty: a probe rejects a
  // colliding entry by its hash without a second random read.
  #table: Int32Array;
  #mask: number;
  #offsets: Uint32Array;
  #bytes: Uint8Array;
  #size = 0;
  readonly #arrays: ArrayAllocator;
  /** Whether the last `intern` call added a new entry. */
  added = false;

  /**
   * `arrays` supplies the table, offsets and bytes, as they grow too: an
   * interner that dies with its task takes them from the task's scratch
   * memory (scratch-arrays.ts); `state()` and `finish()` of such an interner
   * are valid only until that memory is reset.
   */
  constructor(expectedEntries = 1024, expectedBytes = expectedEntries * 16, arrays: ArrayAllocator = freshArrays) {
    const capacity = powerOfTwoAtLeast(Math.max(16, Math.ceil(expectedEntries * 2)));
    this.#arrays = arrays;
    this.#table = emptyTable(capacity, arrays);
    this.#mask = capacity - 1;
    this.#offsets = arrays.zeroed(Uint32Array, Math.max(16, expectedEntries) + 1);
    this.#bytes = arrays.zeroed(Uint8Array, Math.max(64, expectedBytes));
  }

  /** An interner holding exactly what `state` describes (its arrays are used, not copied). */
  static fromState(state: ByteInternerState): ByteInterner {
    const capacity = state.table.length / 2;
    if (!Number.isInteger(capacity) || capacity < 16 || (capacity & (capacity - 1)) !== 0) {
      throw new RangeError(`interner table must hold a power of two of at least 16 slots, got ${state.table.length} words`);
    }
    if (!Number.isInteger(state.size) || state.size < 0 || state.size * 2 > capacity || state.size + 1 > state.offsets.length) {
      throw new RangeError(`interner size ${state.size} does not fit its table or offsets`);
    }
    if (state.offsets[state.size]! > state.bytes.length) throw new RangeError('interner offsets reach past its bytes');
    const interner = new ByteInterner(0, 0);
    interner.#table = state.table;
    interner.#mask = capacity - 1;
    interner.#offsets = state.offsets;
    interner.#bytes = state.bytes;
    interner.#size = state.size;
    return interner;
  }

  get size(): number {
    return this.#size;
  }

  /** The interner's arrays as they are (not copied): hand them on and stop using this interner. */
  state(): ByteInternerState {
    return { table: this.#table, offsets: this.#offsets, bytes: this.#bytes, size: this.#size };
  }

  /**
   * The state for keeping a long while (a builder's carry between builds):
   * like `state()`, but when more than a quarter of the offsets or bytes is
   * spare, they are copied to the size in use plus an eighth. The first build
   * sizes them from its input, in which ids are a small part, and growth
   * doubles them: without this, a part of the carried memory was never
   * used (bench/MEASUREMENTS.md, 'Memory kept for incremental builds'). The eighth left over takes the next builds' new ids
   * without a copy; trimming to the exact size made every build that added
   * one id double the arrays and trim them again. The table keeps its
   * size: it must stay a power of two at most half full.
   */
  compactState(): ByteInternerState {
    const entries = this.#size + 1;
    const used = this.#offsets[this.#size]!;
    const offsets = this.#offsets.length > entries + (entries >>> 2) ? this.#offsets.slice(0, entries + (entries >>> 3)) : this.#offsets;
    const bytes = this.#bytes.length > used + (used >>> 2) ? this.#bytes.slice(0, used + (used >>> 3)) : this.#bytes;
    return { table: this.#table, offsets, bytes, size: this.#size };
  }

  /** Id of bytes[start..end), adding it when new (then `added` is true); `hash` when the caller has it already. */
  intern(bytes: Uint8Array, start: number, end: number, hash = hashKeyBytes(bytes, start, end)): number {
    const length = end - start;
    const table = this.#table;
    const mask = this.#mask;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const id = table[2 * slot]!;
      if (id < 0) break;
      if (table[2 * slot + 1] === (hash | 0) && this.#equals(id, bytes, start, length)) {
        this.added = false;
        return id;
      }
    }
    const id = this.#append(hash, bytes, start, end);
    this.added = true;
    return id;
  }

  /** Id of bytes[start..end), or -1 when it was never interned; `hash` when the caller has it already. */
  find(bytes: Uint8Array, start: number, end: number, hash = hashKeyBytes(bytes, start, end)): number {
    const table = this.#table;
    const mask = this.#mask;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const id = table[2 * slot]!;
      if (id < 0) return -1;
      if (table[2 * slot + 1] === (hash | 0) && this.#equals(id, bytes, start, end - start)) return id;
    }
  }

  /** The bytes of entry `id` (a view, not a copy). */
  bytesOf(id: number): Uint8Array {
    return this.#bytes.subarray(this.#offsets[id]!, this.#offsets[id + 1]!);
  }

  /**
   * Offsets (size+1 entries) and bytes of every entry, in id order, trimmed;
   * copied into arrays from `arrays` when given (shared memory, for a
   * snapshot), else into new ones.
   */
  finish(options: { readonly arrays?: ArrayAllocator } = {}): { bytes: Uint8Array; offsets: Uint32Array } {
    const entries = this.#size + 1;
    const used = this.#offsets[this.#size]!;
    if (options.arrays === undefined) return { bytes: this.#bytes.slice(0, used), offsets: this.#offsets.slice(0, entries) };
    const offsets = options.arrays.zeroed(Uint32Array, entries);
    offsets.set(this.#offsets.subarray(0, entries));
    const bytes = options.arrays.zeroed(Uint8Array, used);
    bytes.set(this.#bytes.subarray(0, used));
    return { bytes, offsets };
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
    if (id + 1 >= this.#offsets.length) this.#offsets = grow(this.#offsets, Uint32Array, this.#offsets.length * 2, this.#arrays);
    const at = this.#offsets[id]!;
    const needed = at + end - start;
    if (needed > this.#bytes.length) this.#bytes = grow(this.#bytes, Uint8Array, Math.max(needed, this.#bytes.length * 2), this.#arrays);
    // Most entries are a few dozen bytes: a loop beats making a subarray for each.
    const stored = this.#bytes;
    for (let i = start, to = at; i < end; i++, to++) stored[to] = bytes[i]!;
    this.#offsets[id + 1] = needed;
    this.#size = id + 1;
    this.#place(id, hash);
    // Keep load ≤ 0.5 so probes stay short.
    const capacity = this.#mask + 1;
    if (this.#size * 2 > capacity) this.#rehash(capacity * 2);
    return id;
  }

  #place(id: number, hash: number): void {
    const table = this.#table;
    const mask = this.#mask;
    let slot = hash & mask;
    while (table[2 * slot]! >= 0) slot = (slot + 1) & mask;
    table[2 * slot] = id;
    table[2 * slot + 1] = hash;
  }

  #rehash(capacity: number): void {
    const old = this.#table;
    this.#table = emptyTable(capacity, this.#arrays);
    this.#mask = capacity - 1;
    for (let slot = 0; slot < old.length; slot += 2) if (old[slot]! >= 0) this.#place(old[slot]!, old[slot + 1]!);
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

/** A table of `capacity` empty [id, hash] slots. */
function emptyTable(capacity: number, arrays: ArrayAllocator): Int32Array {
  const table = arrays.zeroed(Int32Array, 2 * capacity);
  for (let slot = 0; slot < capacity; slot++) table[2 * slot] = -1;
  return table;
}

function powerOfTwoAtLeast(n: number): number {
  let p = 16;
  while (p < n) p *= 2;
  return p;
}

function grow<T extends Uint8Array | Uint32Array>(array: T, type: TypedArrayType<T>, length: number, arrays: ArrayAllocator): T {
  const next = arrays.zeroed(type, length);
  next.set(array);
  return next;
}
