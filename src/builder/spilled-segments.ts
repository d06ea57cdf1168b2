import { closeSync, openSync } from 'node:fs';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import { readAllAtSync } from '../common/atomic-file.js';
import { extendCrc } from '../common/file-crc.js';
import { isSpilled, type Segment, type SpilledSegment } from './carry.js';

/**
 * Carried segments of records in files (BuilderOptions.spillDir): a segment
 * never changes once made, so once its blocks are made (record-blocks.ts)
 * it is written out and its shared memory let go. Builds read a spilled
 * segment whole on the thread that aggregates it; corrections read only
 * the blocks that may hold their VPAs. The page cache, not the process,
 * holds what is read often (the memory this saves: bench/MEASUREMENTS.md,
 * "Carried records in files").
 */

/** Reads ranges of one segment's bytes, [start, end). */
export type SegmentRange = (start: number, end: number) => Uint8Array;

/**
 * Run `read` with a way to read ranges of `segment`: views of its memory,
 * or reads of its file, opened once for all the ranges `read` asks for (a
 * correction may read dozens of blocks of one segment).
 */
export function readSegment<T>(segment: ArrayBufferLike | SpilledSegment, read: (range: SegmentRange) => T): T {
  if (!isSpilled(segment)) return read((start, end) => new Uint8Array(segment, start, end - start));
  const fd = openSync(segment.path, 'r');
  try {
    return read((start, end) => {
      const bytes = new Uint8Array(end - start);
      if (!readAllAtSync(fd, bytes, start)) throw new Error(`carried records file ${segment.path} ends before ${end} bytes, ${segment.byteLength} were written`);
      return bytes;
    });
  } finally {
    closeSync(fd);
  }
}

/** `segment`'s records whole, as a buffer the record readers take. */
export function segmentBuffer(segment: ArrayBufferLike | SpilledSegment): ArrayBufferLike {
  return isSpilled(segment) ? readSegment(segment, (range) => range(0, segment.byteLength)).buffer : segment;
}

/** The name of a segment's file: the writer's pid, a tag of its own (a pid comes back after a restart) and a number. */
export const SEGMENT_FILE_NAME = /^[1-9][0-9]{0,9}-[0-9a-f]{8}-[0-9]{1,15}\.records$/;

/** Bytes written, and added to the CRC, at a time. */
const WRITE_BYTES = 8 * 1024 * 1024;

/** A carry kept in the folder: the files it is in, the segment files it names, and how to remove it. */
interface KeptFiles {
  readonly segments: ReadonlySet<SpilledSegment>;
  readonly names: readonly string[];
  readonly remove: () => Promise<void>;
}

/**
 * The files of one builder's spilled segments: written, then removed once
 * no carry holds them, no build reads them (pinned) and the carry kept in
 * the folder does not name them (keptBy).
 */
export class SegmentFiles {
  readonly #dir: string;
  readonly #tag = randomBytes(4).toString('hex');
  #next = 0;
  #ready: Promise<void> | undefined;
  /** Every file written and not yet removed. */
  readonly #files = new Set<SpilledSegment>();
  /** How many running builds read each file. */
  readonly #pins = new Map<SpilledSegment, number>();
  /** The carry kept in this folder (keptBy), or null. */
  #kept: KeptFiles | null = null;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** The folder the files are in. */
  get dir(): string {
    return this.#dir;
  }

  /**
   * Take `segments`, files of the folder a kept carry names (kept-carry.ts),
   * as written by this builder: kept while a carry holds them, removed
   * with the others after. Before the first write.
   */
  adopt(segments: Iterable<SpilledSegment>): void {
    for (const segment of segments) this.#files.add(segment);
  }

  /**
   * A carry kept in this folder (kept-carry.ts), in the files `names`,
   * naming `segments`: it describes a true carry for as long as they are
   * all there, unchanged (a file is never written twice), so it stays
   * after it is read, and a crash later still finds it. Its files are
   * kept until it is replaced (a clean close keeps a new one) or dropped,
   * even once no carry holds them (a gathering merged them away): at most
   * one carry's files more on disk. The emptying of the folder at the
   * first write spares it too.
   */
  keptBy(segments: Iterable<SpilledSegment>, names: readonly string[], remove: () => Promise<void>): void {
    this.#kept = { segments: new Set(segments), names, remove };
  }

  /**
   * Remove the kept carry now, if there is one (it does not describe the
   * evidence files, or a keep failed part-way), and with it the hold on
   * its files. A removal that fails throws and keeps the hold: what is
   * left, the next start refuses by its checks.
   */
  async dropKept(): Promise<void> {
    const kept = this.#kept;
    if (kept === null) return;
    await kept.remove();
    this.#kept = null;
  }

  /**
   * Write `segment` to a file of its own, with its CRC-32. What a process
   * left before, but for files adopted, is removed first: its files name no
   * carry of this one.
   */
  async write(segment: SharedArrayBuffer): Promise<SpilledSegment> {
    this.#ready ??= this.#clear();
    try {
      await this.#ready;
    } catch (error) {
      // Tried again at the next write.
      this.#ready = undefined;
      throw error;
    }
    const path = join(this.#dir, `${process.pid}-${this.#tag}-${this.#next++}.records`);
    // Never over a file: an adopted one may be another process's with a tag of the same bytes.
    const file = await open(path, 'wx', 0o600);
    let crc = 0;
    try {
      const bytes = new Uint8Array(segment);
      let done = 0;
      while (done < bytes.length) {
        const slice = bytes.subarray(done, Math.min(bytes.length, done + WRITE_BYTES));
        crc = extendCrc(slice, crc);
        let written = 0;
        while (written < slice.length) written += (await file.write(slice, written, slice.length - written, done + written)).bytesWritten;
        done += slice.length;
      }
    } catch (error) {
      await file.close().catch(() => {});
      await rm(path, { force: true });
      throw error;
    }
    await file.close();
    const spilled: SpilledSegment = { path, byteLength: segment.byteLength, crc };
    this.#files.add(spilled);
    return spilled;
  }

  /** The folder made, and emptied of all but the files adopted and the carry kept of them. */
  async #clear(): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
    const adopted = new Set([...[...this.#files].map((segment) => basename(segment.path)), ...(this.#kept?.names ?? [])]);
    const names = await readdir(this.#dir);
    await Promise.all(names.filter((name) => !adopted.has(name)).map((name) => rm(join(this.#dir, name), { recursive: true, force: true })));
  }

  /** Keep the spilled ones of `segments` until `unpin`: a build reads them. */
  pin(segments: Iterable<Segment>): SpilledSegment[] {
    const pinned: SpilledSegment[] = [];
    for (const segment of segments) {
      if (!isSpilled(segment)) continue;
      this.#pins.set(segment, (this.#pins.get(segment) ?? 0) + 1);
      pinned.push(segment);
    }
    return pinned;
  }

  unpin(pinned: readonly SpilledSegment[]): void {
    for (const segment of pinned) {
      const count = (this.#pins.get(segment) ?? 1) - 1;
      if (count > 0) this.#pins.set(segment, count);
      else this.#pins.delete(segment);
    }
  }

  /** Remove every file but those `held` (the carry's), those pinned and those the kept carry names. */
  async removeAllBut(held: Iterable<Segment>): Promise<void> {
    const keep = new Set<Segment>(held);
    const kept = this.#kept?.segments;
    const gone = [...this.#files].filter((segment) => !keep.has(segment) && !this.#pins.has(segment) && kept?.has(segment) !== true);
    for (const segment of gone) this.#files.delete(segment);
    await Promise.all(gone.map((segment) => rm(segment.path, { force: true })));
  }

  /** Bytes of the files kept. */
  get bytes(): number {
    let bytes = 0;
    for (const segment of this.#files) bytes += segment.byteLength;
    return bytes;
  }
}
