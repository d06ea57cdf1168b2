import { isSpilled, type Segment, type SpilledSegment } from './carry.js';
import { FIXED_BYTES, fnv1aBytes, recordEndAt, upiLengthAt } from './record-codec.js';
import { segmentBuffer } from './spilled-segments.js';

/**
 * Blocks of a segment of carried records (carry.ts), each with a small
 * Bloom filter of its records' VPAs, so that a correction finds the records
 * of a few VPAs by reading the few blocks that may hold them instead of
 * every record of their partition (carry-reader.ts; the cost per record:
 * bench/MEASUREMENTS.md, "Corrections at 1M").
 *
 * A block is BLOCK_RECORDS records; its filter is FILTER_BITS bits with two
 * probes per VPA: about 5 % of the blocks that hold none of a VPA's records
 * still pass, for 1 KiB a block (about 1 byte a record, 1 % of a record).
 * Segments never change once written, so their blocks are made once, a
 * slice at a time on the main thread (BlockIndex.warm, BlockIndex.made), or
 * at once when a correction needs them first; a segment moved to a file
 * keeps the blocks made of it in memory (BlockIndex.adopt).
 */

export const BLOCK_RECORDS = 1024;
const FILTER_BITS = 8192;
const FILTER_WORDS = FILTER_BITS / 32;
const PROBE_MASK = FILTER_BITS - 1;

/** A segment's blocks. */
export interface RecordBlocks {
  /** Records in the segment. */
  readonly records: number;
  readonly blocks: number;
  /** Where block b starts in the segment, bytes; starts[blocks] is the segment's length. */
  readonly starts: Float64Array;
  /** Block b's filter: words [b * FILTER_WORDS, (b + 1) * FILTER_WORDS). */
  readonly filters: Int32Array;
}

/** Whether `blocks` can be a segment of `byteLength` bytes' blocks: starts ascending from 0 to its end, a filter for each (a kept carry's are checked so). */
export function blocksFit(blocks: RecordBlocks, byteLength: number): boolean {
  const { starts, filters } = blocks;
  if (starts.length !== blocks.blocks + 1 || filters.length !== blocks.blocks * FILTER_WORDS) return false;
  if (blocks.blocks === 0) return byteLength === 0 && blocks.records === 0 && starts[0] === 0;
  // Every block but the last is full.
  if (blocks.records <= (blocks.blocks - 1) * BLOCK_RECORDS || blocks.records > blocks.blocks * BLOCK_RECORDS) return false;
  if (starts[0] !== 0 || starts[blocks.blocks] !== byteLength) return false;
  for (let b = 0; b < blocks.blocks; b++) if (!(starts[b]! < starts[b + 1]!)) return false;
  return true;
}

/** The 32-bit hash the filters are probed with, of a VPA's bytes: FNV-1a (record-codec.ts), mixed so that both probes take well-spread bits. */
export function vpaProbe(bytes: Uint8Array, start: number, end: number): number {
  let hash = fnv1aBytes(bytes, start, end);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x7feb352d);
  hash ^= hash >>> 15;
  hash = Math.imul(hash, 0x846ca68b);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/** Whether block `b` may hold a record of a VPA whose probe is among `probes`. */
export function blockMayHold(blocks: RecordBlocks, b: number, probes: Uint32Array): boolean {
  const filters = blocks.filters;
  const base = b * FILTER_WORDS;
  for (let i = 0; i < probes.length; i++) {
    const probe = probes[i]!;
    const first = probe & PROBE_MASK;
    const second = (probe >>> 13) & PROBE_MASK;
    if ((filters[base + (first >>> 5)]! & (1 << (first & 31))) !== 0 && (filters[base + (second >>> 5)]! & (1 << (second & 31))) !== 0) return true;
  }
  return false;
}

/** Makes a segment's blocks a number of records at a time. */
class BlockMaker {
  readonly #bytes: Uint8Array;
  #at = 0;
  #records = 0;
  #starts: number[] = [];
  #filters = new Int32Array(FILTER_WORDS * 16);

  constructor(segment: ArrayBufferLike) {
    this.#bytes = new Uint8Array(segment);
  }

  /** Read up to `records` more records: the blocks once the segment is read whole, else null. */
  step(records: number): RecordBlocks | null {
    const bytes = this.#bytes;
    const end = bytes.length;
    let left = records;
    while (this.#at < end && left-- > 0) {
      const at = this.#at;
      const b = Math.floor(this.#records / BLOCK_RECORDS);
      if (this.#records % BLOCK_RECORDS === 0) {
        this.#starts.push(at);
        if ((b + 1) * FILTER_WORDS > this.#filters.length) {
          const grown = new Int32Array(this.#filters.length * 2);
          grown.set(this.#filters);
          this.#filters = grown;
        }
      }
      const upiStart = at + FIXED_BYTES;
      const probe = vpaProbe(bytes, upiStart, upiStart + upiLengthAt(bytes, at));
      const first = probe & PROBE_MASK;
      const second = (probe >>> 13) & PROBE_MASK;
      const base = b * FILTER_WORDS;
      this.#filters[base + (first >>> 5)]! |= 1 << (first & 31);
      this.#filters[base + (second >>> 5)]! |= 1 << (second & 31);
      this.#at = recordEndAt(bytes, at);
      this.#records++;
    }
    if (this.#at < end) return null;
    const blocks = this.#starts.length;
    return {
      records: this.#records,
      blocks,
      starts: Float64Array.from([...this.#starts, end]),
      filters: this.#filters.slice(0, blocks * FILTER_WORDS),
    };
  }
}

/** Records read per slice of a warm-up: about a millisecond of the main thread. */
const WARM_SLICE_RECORDS = 50_000;

/**
 * The blocks of every segment a builder has carried, made once per segment
 * and forgotten with it (the segments are the keys).
 */
export class BlockIndex {
  readonly #done = new WeakMap<Segment, RecordBlocks>();
  readonly #making = new WeakMap<SharedArrayBuffer, BlockMaker>();
  #warming: readonly SharedArrayBuffer[] = [];

  /** `segment`'s blocks, made now (a spilled one read whole for it) if they are not made yet. */
  of(segment: Segment): RecordBlocks {
    const done = this.#done.get(segment);
    if (done !== undefined) return done;
    if (isSpilled(segment)) {
      const blocks = new BlockMaker(segmentBuffer(segment)).step(Number.POSITIVE_INFINITY)!;
      this.#done.set(segment, blocks);
      return blocks;
    }
    const maker = this.#making.get(segment) ?? new BlockMaker(segment);
    const blocks = maker.step(Number.POSITIVE_INFINITY)!;
    this.#making.delete(segment);
    this.#done.set(segment, blocks);
    return blocks;
  }

  /** `segment`'s blocks, made a slice at a time between the event loop's other work if they are not made yet. */
  async made(segment: SharedArrayBuffer): Promise<RecordBlocks> {
    for (;;) {
      const blocks = this.#done.get(segment) ?? this.#slice(segment);
      if (blocks !== null) return blocks;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Make one slice more of `segment`'s blocks: the blocks once the last is made, else null. */
  #slice(segment: SharedArrayBuffer): RecordBlocks | null {
    let maker = this.#making.get(segment);
    if (maker === undefined) {
      maker = new BlockMaker(segment);
      this.#making.set(segment, maker);
    }
    const blocks = maker.step(WARM_SLICE_RECORDS);
    if (blocks !== null) {
      this.#making.delete(segment);
      this.#done.set(segment, blocks);
    }
    return blocks;
  }

  /** `segment`'s blocks if they are made, without making them. */
  madeOf(segment: Segment): RecordBlocks | undefined {
    return this.#done.get(segment);
  }

  /** `spilled` holds the records of `segment`, whose blocks it keeps. */
  adopt(spilled: SpilledSegment, blocks: RecordBlocks): void {
    this.#done.set(spilled, blocks);
  }

  /**
   * Make the blocks of `segments` that are not made yet, a slice at a time
   * between the event loop's other work: the next correction then reads
   * only blocks. A later call replaces the segments being warmed; spilled
   * ones are left until a correction needs them.
   */
  warm(segments: readonly Segment[]): void {
    const idle = this.#warming.length === 0;
    this.#warming = segments.filter((segment): segment is SharedArrayBuffer => !isSpilled(segment) && !this.#done.has(segment));
    if (idle && this.#warming.length > 0) this.#next();
  }

  /** Stop warming: the segments being warmed are let go (a lean build drops the carry). */
  forget(): void {
    this.#warming = [];
  }

  #warmSlice(): void {
    const segment = this.#warming[0];
    if (segment === undefined) return;
    if (!this.#done.has(segment) && this.#slice(segment) === null) {
      this.#next();
      return;
    }
    this.#warming = this.#warming.slice(1);
    if (this.#warming.length > 0) this.#next();
  }

  /** The next slice, after whatever the event loop has waiting; it keeps no process alive. */
  #next(): void {
    setImmediate(() => this.#warmSlice()).unref();
  }

  /** Bytes the blocks of `segments` hold, those made so far. */
  bytesOf(segments: readonly Segment[]): number {
    let bytes = 0;
    for (const segment of segments) {
      const blocks = this.#done.get(segment);
      if (blocks !== undefined) bytes += blocks.starts.byteLength + blocks.filters.byteLength;
    }
    return bytes;
  }
}
