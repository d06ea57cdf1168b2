/**
 * Working arrays for a task, carved from memory its thread keeps between
 * tasks.
 *
 * A build at 10M VPAs asks for several GiB of working arrays (hash tables,
 * per-record rows, orderings) that it drops when it ends. Each large
 * `new Float64Array(n)` is a fresh mapping from the C allocator, unmapped
 * again when collected, so every build touches every page of it anew. On a
 * VM that hands freed memory back to its host (free page reporting), the
 * first touch of a page costs many times a touch of a page already touched,
 * and a large rebuild spends a good part of its time faulting pages in (see
 * bench/MEASUREMENTS.md, 'First touch of a page'). Arrays taken from a
 * ScratchArrays reuse the pages
 * the thread's earlier tasks touched.
 *
 * Only for arrays that die with the task: an array handed out is valid
 * until the next `reset()`, and one must never be transferred to another
 * thread (transferring its buffer would take the whole chunk, and every
 * other array in it, away from this thread).
 */

/** A typed array constructor, as the view constructors take their arguments. */
export interface TypedArrayType<T> {
  // The constructors' signatures name ArrayBuffer only; shared memory is fine.
  new (buffer: ArrayBuffer, byteOffset: number, length: number): T;
  readonly BYTES_PER_ELEMENT: number;
}

/** Where working arrays come from. */
export interface ArrayAllocator {
  /** A zeroed array of `length` elements of `type`. */
  zeroed<T>(type: TypedArrayType<T>, length: number): T;
}

/** Each array over a new buffer of its own: for arrays that outlive the task, and for callers with no scratch memory. */
export const freshArrays: ArrayAllocator = {
  zeroed: (type, length) => new type(new ArrayBuffer(length * type.BYTES_PER_ELEMENT), 0, length),
};

export interface ScratchArraysOptions {
  /**
   * Smallest chunk to allocate, bytes. An array that fits in no chunk gets a
   * new one of this size, or of its own size plus an eighth when that is
   * larger. Default 64 MiB.
   */
  readonly chunkBytes?: number;
  /** A chunk no task used for this many resets in a row is let go. Default 16. */
  readonly idleResets?: number;
}

interface Chunk {
  readonly buffer: ArrayBuffer;
  used: number;
  /**
   * Bytes below this were handed out before and may hold values; above it
   * the chunk is as allocated, zero, and possibly not yet backed by pages.
   */
  written: number;
  /** Resets in a row this chunk went unused through. */
  idle: number;
}

const MiB = 1024 * 1024;
// Every array starts on an 8-byte boundary, which suits every element type.
const ALIGN = 8;

export class ScratchArrays implements ArrayAllocator {
  readonly #chunkBytes: number;
  readonly #idleResets: number;
  #chunks: Chunk[] = [];

  constructor(options: ScratchArraysOptions = {}) {
    const chunkBytes = options.chunkBytes ?? 64 * MiB;
    const idleResets = options.idleResets ?? 16;
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1024) throw new RangeError(`chunkBytes must be an integer of at least 1024, got ${chunkBytes}`);
    if (!Number.isSafeInteger(idleResets) || idleResets < 1) throw new RangeError(`idleResets must be a positive integer, got ${idleResets}`);
    this.#chunkBytes = chunkBytes;
    this.#idleResets = idleResets;
  }

  zeroed<T>(type: TypedArrayType<T>, length: number): T {
    if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`length must be a non-negative integer, got ${length}`);
    const bytes = length * type.BYTES_PER_ELEMENT;
    const chunk = this.#chunkWithRoom(bytes);
    const at = chunk.used;
    chunk.used = alignUp(at + bytes);
    chunk.idle = 0;
    // Memory an earlier task used holds its values: cleared, as a new array
    // would be. Memory never handed out is zero already, and is left
    // untouched: capacity a task reserves but never uses then costs no pages.
    const end = at + bytes;
    if (at < chunk.written) new Uint8Array(chunk.buffer, at, Math.min(end, chunk.written) - at).fill(0);
    if (end > chunk.written) chunk.written = end;
    return new type(chunk.buffer, at, length);
  }

  /**
   * Every array handed out so far may be reused from now on. Chunks that
   * went unused through `idleResets` resets in a row are let go, so memory
   * sized for work that stopped coming returns to the system.
   */
  reset(): void {
    const kept: Chunk[] = [];
    for (const chunk of this.#chunks) {
      // A detached buffer (transferred despite the rule) holds nothing any more.
      if (chunk.buffer.byteLength === 0) continue;
      if (chunk.used === 0) chunk.idle++;
      chunk.used = 0;
      if (chunk.idle < this.#idleResets) kept.push(chunk);
    }
    this.#chunks = kept;
  }

  /** Let go of every chunk: for a thread that must give its working memory back now (a lean build's). */
  release(): void {
    this.#chunks = [];
  }

  /** Bytes this thread keeps for scratch arrays. */
  get retainedBytes(): number {
    let bytes = 0;
    for (const chunk of this.#chunks) bytes += chunk.buffer.byteLength;
    return bytes;
  }

  /**
   * The chunk with the least room that still fits `bytes` (best fit keeps
   * the large chunks for the large arrays that made them), or a new one.
   */
  #chunkWithRoom(bytes: number): Chunk {
    let best: Chunk | undefined;
    let bestRoom = Number.POSITIVE_INFINITY;
    for (const chunk of this.#chunks) {
      // A detached buffer (transferred despite the rule) has no room even for an empty array.
      if (chunk.buffer.byteLength === 0) continue;
      const room = chunk.buffer.byteLength - chunk.used;
      if (room >= bytes && room < bestRoom) {
        best = chunk;
        bestRoom = room;
      }
    }
    if (best !== undefined) return best;
    // An eighth to spare: the next build's data is usually a little larger.
    const size = Math.max(this.#chunkBytes, alignUp(Math.ceil(bytes + bytes / 8)));
    const chunk: Chunk = { buffer: new ArrayBuffer(size), used: 0, written: 0, idle: 0 };
    this.#chunks.push(chunk);
    return chunk;
  }
}

function alignUp(n: number): number {
  return Math.ceil(n / ALIGN) * ALIGN;
}
