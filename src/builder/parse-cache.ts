import { closeSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { readdir, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { ParseResult, ParseTask } from './phases.js';
import { TEMP_PREFIX, tempFileName } from '../common/atomic-file.js';
import { extendCrc } from '../common/file-crc.js';

/**
 * Parsed evidence chunks, kept on disk between builds (DIR/state/parsed/).
 *
 * Evidence files never change once ingested, so a chunk's binary records
 * are the same at every build. Parsing JSON is the largest phase of a build
 * (bench/MEASUREMENTS.md, 'Memory kept for incremental builds'); with this cache a rebuild after an ingest
 * parses only the new file and reads every other chunk back.
 *
 * The cache is derived data and never trusted: a chunk file that is
 * missing, torn, of another format or failing its CRC is ignored and the
 * chunk parsed again; deleting the folder is always safe. The name holds
 * everything the records depend on (file, byte range, chunk position,
 * partition count) and CACHE_VERSION, which must change with the record
 * format (record-codec.ts) or the parse rules. The header holds the size
 * and modification time of the file the chunk was parsed from, and a chunk
 * is used only for a file that still has both: a file replaced under the
 * same name (which the evidence contract forbids, but an operator may still
 * do) is parsed again, unless the replacement has the same size and the same
 * modification time (a copy that preserves times, on a file system with
 * coarse timestamps). A data folder copied without its files' times is
 * parsed again once, in full.
 *
 * Layout, little-endian: magic u32, version u32, body CRC-32 u32, partition
 * count u32, valid lines u32, invalid lines u32, chunk bytes f64, file size
 * f64, file modification time (ms) f64; then the
 * body: one u32 length per partition, a u32 length and the JSON of the
 * invalid-line samples, then the partitions' record bytes.
 */
const MAGIC = 0x43525055; // "UPRC"
export const CACHE_VERSION = 2;
const HEADER_BYTES = 48;

export function parseCacheDir(stateDir: string): string {
  return join(stateDir, 'parsed');
}

function cachePath(dir: string, task: ParseTask): string {
  return join(dir, `${basename(task.path)}.${task.start}-${task.end}.c${task.chunk}.p${task.partitions}.v${CACHE_VERSION}`);
}

/**
 * Remove the cache files of other format versions, which no build reads
 * again (the cache is about half the size of the evidence). Best effort.
 */
export async function removeOtherVersions(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  const current = `.v${CACHE_VERSION}`;
  const stale = names.filter((name) => !name.startsWith(TEMP_PREFIX) && /\.v\d+$/.test(name) && !name.endsWith(current));
  await Promise.all(stale.map((name) => unlink(join(dir, name)).catch(() => {})));
  return stale.length;
}

/** The cached parse of this chunk, or null when there is no sound one. */
export function readParsedChunk(dir: string, task: ParseTask): ParseResult | null {
  let file: Buffer;
  try {
    file = readFileSync(cachePath(dir, task));
  } catch {
    return null;
  }
  if (file.length < HEADER_BYTES) return null;
  const partitions = file.readUInt32LE(12);
  if (file.readUInt32LE(0) !== MAGIC || file.readUInt32LE(4) !== CACHE_VERSION || partitions !== task.partitions) return null;
  if (file.readDoubleLE(32) !== task.fileSize || file.readDoubleLE(40) !== task.fileMtimeMs) return null;
  const body = file.subarray(HEADER_BYTES);
  if (crc32(body) >>> 0 !== file.readUInt32LE(8)) return null;
  let at = partitions * 4;
  if (body.length < at + 4) return null;
  const samplesLength = body.readUInt32LE(at);
  at += 4;
  if (body.length < at + samplesLength) return null;
  const invalidSamples = JSON.parse(body.toString('utf8', at, at + samplesLength)) as string[];
  at += samplesLength;
  const parts: ArrayBuffer[] = [];
  for (let p = 0; p < partitions; p++) {
    const length = body.readUInt32LE(p * 4);
    if (body.length < at + length) return null;
    // Each part becomes its own ArrayBuffer: parts are transferred to different threads.
    const part = new Uint8Array(length);
    part.set(body.subarray(at, at + length));
    parts.push(part.buffer);
    at += length;
  }
  if (at !== body.length) return null;
  return { parts, validLines: file.readUInt32LE(16), invalidLines: file.readUInt32LE(20), invalidSamples, bytes: file.readDoubleLE(24) };
}

/**
 * Keep a chunk's parse for later builds. Best effort: a build never fails
 * because its cache could not be written. Written under a temporary name
 * and renamed, so a reader sees a whole file or none (a torn one would
 * fail its CRC anyway).
 */
export function writeParsedChunk(dir: string, task: ParseTask, result: ParseResult): void {
  const samples = Buffer.from(JSON.stringify(result.invalidSamples));
  const lengths = Buffer.alloc(result.parts.length * 4 + 4);
  result.parts.forEach((part, p) => lengths.writeUInt32LE(part.byteLength, p * 4));
  lengths.writeUInt32LE(samples.length, result.parts.length * 4);
  const body = [lengths, samples, ...result.parts.map((part) => new Uint8Array(part))];
  let crc = 0;
  for (const piece of body) {
    // Empty partitions are common: extendCrc passes over them.
    crc = extendCrc(piece, crc);
  }
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(MAGIC, 0);
  header.writeUInt32LE(CACHE_VERSION, 4);
  header.writeUInt32LE(crc >>> 0, 8);
  header.writeUInt32LE(result.parts.length, 12);
  header.writeUInt32LE(result.validLines, 16);
  header.writeUInt32LE(result.invalidLines, 20);
  header.writeDoubleLE(result.bytes, 24);
  header.writeDoubleLE(task.fileSize, 32);
  header.writeDoubleLE(task.fileMtimeMs, 40);
  const path = cachePath(dir, task);
  const temp = join(dir, tempFileName(basename(path)));
  try {
    mkdirSync(dir, { recursive: true });
    const fd = openSync(temp, 'w');
    try {
      for (const piece of [header, ...body]) {
        let written = 0;
        while (written < piece.byteLength) written += writeSync(fd, piece, written, piece.byteLength - written);
      }
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch {
    try {
      unlinkSync(temp);
    } catch {
      // nothing was written
    }
  }
}
