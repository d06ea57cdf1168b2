import { closeSync, openSync } from 'node:fs';
import { readAllAtSync } from '../common/atomic-file.js';
import { hashKeyBytes } from '../engine/hash.js';
import { ByteInterner, compareByteRanges, type ByteInternerState } from './byte-interner.js';

/**
 * The evidence ids a builder has kept, numbered densely in the order they
 * were first read, carried from build to build (carry.ts) so that the next
 * build tells a new id from a duplicate without reading every file again.
 *
 * In two parts. The ids up to the last freeze: a table of their hashes in
 * memory (9 to 10 bytes an id), their bytes in FrozenIdBytes, shared
 * memory until the builder writes it beside the carried records, then read
 * from that file only when a hash matches (a duplicate, or about one
 * lookup in a thousand at 10M ids). The ids since: a ByteInterner, an open
 * table in memory. A carry at 10M held 1,014 MiB of ids in memory when
 * they were all in one open table (bench/MEASUREMENTS.md#frozen-id-tables).
 */

/**
 * The frozen ids' offsets (count + 1 of them, 32-bit) then their bytes, in
 * shared memory or in a file: the shape of a carried segment (carry.ts).
 */
export type FrozenIdBytes = SharedArrayBuffer | { readonly path: string; readonly byteLength: number; readonly crc?: number };

/** The ids 0 to count - 1, as the last freeze left them. */
export interface FrozenIds {
  readonly count: number;
  /** Bucket b (a hash's top bits) holds entries starts[b] to starts[b + 1] - 1. */
  readonly starts: Uint32Array;
  /** Two words an entry, [hash, id], by bucket. */
  readonly entries: Int32Array;
  readonly bytes: FrozenIdBytes;
}

/** Everything CarriedIds holds, as it crosses threads (phases.ts, carriedIdsBuffers) and is kept (kept-carry.ts). */
export interface CarriedIdsState {
  readonly frozen: FrozenIds | null;
  /** The ids since, numbered here from 0: id frozen.count + i is their i-th. */
  readonly recent: ByteInternerState;
}

/** Fewer new ids than this are not frozen, whatever their share: each freeze is a file written, and a handful of ids is not worth one. */
const MIN_FREEZE = 16;

/** Offsets a FrozenIdBytes holds before its bytes: one per id and one more. */
function offsetsLength(count: number): number {
  return 4 * (count + 1);
}

export class CarriedIds {
  #frozen: FrozenIds | null = null;
  #count = 0;
  #shift = 32;
  /** The frozen ids' offsets and bytes when in shared memory. */
  #offsets: Uint32Array | null = null;
  #bytes: Uint8Array | null = null;
  /** Their file, once opened (close). */
  #fd = -1;
  #recent: ByteInterner;
  /** Whether the last `intern` call added a new id. */
  added = false;

  /** No ids yet: sized for about `expectedIds` ids of `expectedBytes` bytes in all. */
  constructor(expectedIds = 1024, expectedBytes = expectedIds * 16) {
    this.#recent = new ByteInterner(expectedIds, expectedBytes);
  }

  /**
   * The ids `state` describes (its arrays used, not copied), their
   * lengths checked against each other; for a state read from a file, see
   * `fromStoredState`. A file of frozen ids is opened at the first read of
   * it: `close` the result when done.
   */
  static fromState(state: CarriedIdsState): CarriedIds {
    const ids = new CarriedIds(0, 0);
    ids.#recent = ByteInterner.fromState(state.recent);
    if (state.frozen !== null) ids.#takeFrozen(state.frozen);
    return ids;
  }

  /** `fromState`, with every bucket and frozen entry checked too: buckets in order, each entry in its hash's bucket, and each id there once. */
  static fromStoredState(state: CarriedIdsState): CarriedIds {
    const ids = CarriedIds.fromState(state);
    if (state.frozen !== null) {
      const { starts, entries, count } = state.frozen;
      for (let b = 0; b + 1 < starts.length; b++) if (starts[b]! > starts[b + 1]!) throw new RangeError(`frozen ids: bucket ${b} ends before it starts`);
      const met = new Uint8Array(count);
      for (let b = 0; b + 1 < starts.length; b++) {
        for (let e = starts[b]!; e < starts[b + 1]!; e++) {
          const id = entries[2 * e + 1]!;
          if (id < 0 || id >= count || met[id] === 1) throw new RangeError(`frozen entry ${e} names id ${id}, out of range or twice`);
          met[id] = 1;
          if (entries[2 * e]! >>> ids.#shift !== b) throw new RangeError(`frozen entry ${e} is not in its hash's bucket`);
        }
      }
    }
    return ids;
  }

  get size(): number {
    return this.#count + this.#recent.size;
  }

  /** Number of bytes[start..end), adding it when new (then `added` is true). */
  intern(bytes: Uint8Array, start: number, end: number): number {
    const hash = hashKeyBytes(bytes, start, end);
    if (this.#count > 0) {
      const id = this.#findFrozen(hash, bytes, start, end);
      if (id >= 0) {
        this.added = false;
        return id;
      }
    }
    const id = this.#recent.intern(bytes, start, end, hash);
    this.added = this.#recent.added;
    return this.#count + id;
  }

  /** Number of bytes[start..end), or -1 when it was never interned. */
  find(bytes: Uint8Array, start: number, end: number): number {
    const hash = hashKeyBytes(bytes, start, end);
    if (this.#count > 0) {
      const id = this.#findFrozen(hash, bytes, start, end);
      if (id >= 0) return id;
    }
    const id = this.#recent.find(bytes, start, end, hash);
    return id < 0 ? -1 : this.#count + id;
  }

  /** The bytes of id `id` (a view of memory, or a copy of what was read from the file). */
  bytesOf(id: number): Uint8Array {
    return id < this.#count ? this.#frozenBytesOf(id) : this.#recent.bytesOf(id - this.#count);
  }

  /**
   * The state to hand on (this object is not used after): the ids frozen
   * anew (fresh table, bytes in new shared memory) once those since the
   * last freeze are an eighth of the frozen ones or more (and MIN_FREEZE),
   * so the open table holds only the few of the next builds; else the recent ones'
   * spare memory trimmed (ByteInterner.compactState).
   */
  compactState(): CarriedIdsState {
    const recent = this.#recent.size;
    if (recent >= MIN_FREEZE && recent * 8 >= this.#count) {
      const frozen = this.#freeze();
      this.close();
      // The open table at its least, its offsets and bytes empty: they grow with the next builds' ids.
      return { frozen, recent: new ByteInterner(8, 0).compactState() };
    }
    return { frozen: this.#frozen, recent: this.#recent.compactState() };
  }

  /** Close the file of frozen ids, if one was opened. */
  close(): void {
    if (this.#fd >= 0) closeSync(this.#fd);
    this.#fd = -1;
  }

  #takeFrozen(frozen: FrozenIds): void {
    const { starts, entries, count, bytes } = frozen;
    const buckets = starts.length - 1;
    if (!Number.isInteger(count) || count < 0 || entries.length !== 2 * count) throw new RangeError(`frozen ids: ${entries.length} words of entries for ${count} ids`);
    if (buckets < 16 || buckets > 2 ** 30 || (buckets & (buckets - 1)) !== 0 || starts[0] !== 0 || starts[buckets] !== count) {
      throw new RangeError(`frozen ids: ${starts.length} bucket starts do not fit ${count} ids`);
    }
    if (bytes.byteLength < offsetsLength(count)) throw new RangeError(`frozen ids: ${bytes.byteLength} bytes cannot hold the offsets of ${count} ids`);
    if (bytes instanceof SharedArrayBuffer) {
      this.#offsets = new Uint32Array(bytes, 0, count + 1);
      this.#bytes = new Uint8Array(bytes, offsetsLength(count));
      if (this.#offsets[count]! !== this.#bytes.length) throw new RangeError('frozen ids: their offsets do not end at their bytes');
    }
    this.#frozen = frozen;
    this.#count = count;
    this.#shift = 32 - Math.log2(buckets);
  }

  #findFrozen(hash: number, bytes: Uint8Array, start: number, end: number): number {
    const { starts, entries } = this.#frozen!;
    const bucket = hash >>> this.#shift;
    for (let e = starts[bucket]!, to = starts[bucket + 1]!; e < to; e++) {
      if (entries[2 * e] !== (hash | 0)) continue;
      const id = entries[2 * e + 1]!;
      if (this.#frozenEquals(id, bytes, start, end)) return id;
    }
    return -1;
  }

  /** Only on a hash match (a duplicate, or a collision): a view of memory, or a read of the file. */
  #frozenEquals(id: number, bytes: Uint8Array, start: number, end: number): boolean {
    const stored = this.#frozenBytesOf(id);
    return compareByteRanges(stored, 0, stored.length, bytes, start, end) === 0;
  }

  #frozenBytesOf(id: number): Uint8Array {
    if (this.#offsets !== null) return this.#bytes!.subarray(this.#offsets[id]!, this.#offsets[id + 1]!);
    const pair = new Uint32Array(2);
    this.#read(new Uint8Array(pair.buffer), 4 * id);
    const from = pair[0]!;
    const to = pair[1]!;
    if (to < from) throw new Error(`frozen ids file ${this.#path()} holds offsets out of order at id ${id}`);
    const bytes = new Uint8Array(to - from);
    this.#read(bytes, offsetsLength(this.#count) + from);
    return bytes;
  }

  /** Fill `into` from the frozen ids' file at `position`. */
  #read(into: Uint8Array, position: number): void {
    if (this.#fd < 0) this.#fd = openSync(this.#path(), 'r');
    if (!readAllAtSync(this.#fd, into, position)) throw new Error(`frozen ids file ${this.#path()} ends before ${position + into.length} bytes`);
  }

  #path(): string {
    return (this.#frozen!.bytes as { readonly path: string }).path;
  }

  /** Every id into a new FrozenIds: a table by hash, and the offsets and bytes of all in new shared memory. */
  #freeze(): FrozenIds {
    const count = this.size;
    const hashes = new Int32Array(count);
    if (this.#frozen !== null) {
      const entries = this.#frozen.entries;
      for (let e = 0; e < entries.length; e += 2) hashes[entries[e + 1]!] = entries[e]!;
    }
    const recent = this.#recent.state();
    for (let slot = 0; slot < recent.table.length; slot += 2) if (recent.table[slot]! >= 0) hashes[this.#count + recent.table[slot]!] = recent.table[slot + 1]!;
    // About four ids a bucket: a lookup reads one or two cache lines of entries.
    let buckets = 16;
    while (buckets * 4 < count) buckets *= 2;
    const shift = 32 - Math.log2(buckets);
    const starts = new Uint32Array(buckets + 1);
    for (let id = 0; id < count; id++) starts[(hashes[id]! >>> shift) + 1]!++;
    for (let b = 0; b < buckets; b++) starts[b + 1]! += starts[b]!;
    const fill = starts.slice(0, buckets);
    const entries = new Int32Array(2 * count);
    for (let id = 0; id < count; id++) {
      const e = fill[hashes[id]! >>> shift]!++;
      entries[2 * e] = hashes[id]!;
      entries[2 * e + 1] = id;
    }
    return { count, starts, entries, bytes: this.#allBytes() };
  }

  /** The offsets and bytes of every id, frozen and recent, in new shared memory (FrozenIdBytes). */
  #allBytes(): SharedArrayBuffer {
    const frozenCount = this.#count;
    const recent = this.#recent.finish();
    const old = this.#frozen === null ? null : this.#frozenWhole();
    const oldLength = old === null ? 0 : old.offsets[frozenCount]!;
    const count = frozenCount + this.#recent.size;
    const memory = new SharedArrayBuffer(offsetsLength(count) + oldLength + recent.bytes.length);
    const offsets = new Uint32Array(memory, 0, count + 1);
    const bytes = new Uint8Array(memory, offsetsLength(count));
    if (old !== null) {
      offsets.set(old.offsets);
      bytes.set(old.bytes);
    }
    for (let i = 1; i < recent.offsets.length; i++) offsets[frozenCount + i] = oldLength + recent.offsets[i]!;
    bytes.set(recent.bytes, oldLength);
    return memory;
  }

  /** The frozen ids' offsets and bytes whole: from memory, or read from the file. */
  #frozenWhole(): { offsets: Uint32Array; bytes: Uint8Array } {
    if (this.#offsets !== null) return { offsets: this.#offsets, bytes: this.#bytes! };
    const whole = new Uint8Array(this.#frozen!.bytes.byteLength);
    this.#read(whole, 0);
    const offsets = new Uint32Array(whole.buffer, 0, this.#count + 1);
    const bytes = whole.subarray(offsetsLength(this.#count));
    if (offsets[this.#count]! !== bytes.length) throw new Error(`frozen ids file ${this.#path()}: its offsets do not end at its bytes`);
    return { offsets, bytes };
  }
}

/** Bytes of memory a state holds: its tables, and its frozen ids' bytes unless they are in a file. */
export function carriedIdsMemory(state: CarriedIdsState): number {
  const { table, offsets, bytes } = state.recent;
  let total = table.byteLength + offsets.byteLength + bytes.byteLength;
  if (state.frozen !== null) {
    total += state.frozen.starts.byteLength + state.frozen.entries.byteLength;
    if (state.frozen.bytes instanceof SharedArrayBuffer) total += state.frozen.bytes.byteLength;
  }
  return total;
}
