/**
 * Snapshot files in the data directory: `<snapshots>/snapshot-<id>.upisnap`,
 * where the id (SnapshotMeta.id, from newSnapshotId) starts with a fixed-width
 * UTC timestamp, so name order is age order. Writes are atomic; the newest
 * few are kept so a bad newest file still leaves something to serve.
 */
import { randomBytes } from 'node:crypto';
import { open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { ErrorCode, SnapshotError } from '../common/errors.js';
import { SNAPSHOT_HEADER_LENGTH } from './snapshot-format/format.js';
import { decodeSnapshot } from './snapshot-format/decode.js';
import { encodeSnapshot } from './snapshot-format/encode.js';
import type { SnapshotData } from './snapshot-data.js';

/** How many snapshots survive a write (the one just written among them). */
export const SNAPSHOTS_KEPT = 3;
export const SNAPSHOT_EXTENSION = '.upisnap';

const SNAPSHOT_ID = /^\d{8}T\d{9}Z-[0-9a-f]{6}$/;
const SNAPSHOT_FILE = /^snapshot-(\d{8}T\d{9}Z-[0-9a-f]{6})\.upisnap$/;
// Chunks small enough to overlap reading with checksumming, big enough to keep calls few.
const READ_CHUNK = 32 * 1024 * 1024;
const READS_IN_FLIGHT = 4;

/**
 * A snapshot id: the UTC time to the millisecond, then a 24-bit suffix, e.g.
 * `20261122T051700123Z-3fa9c1`. Ids sort by time. The suffix starts at a
 * random value per process and counts up, so one process never repeats an id
 * (purely random suffixes collided in tests: 1000 draws of 24 bits meet about
 * 3 % of the time), and two processes clash only when they build in the same
 * millisecond from nearby starting points.
 */
export function newSnapshotId(now: number): string {
  const date = new Date(now);
  const year = date.getUTCFullYear();
  if (!Number.isFinite(now) || year < 1000 || year > 9999) throw new RangeError(`cannot make a snapshot id for time ${now}`);
  const stamp = date.toISOString().replace(/[-:.]/g, ''); // 20261122T051700123Z
  const suffix = nextSuffix;
  nextSuffix = (nextSuffix + 1) & 0xffffff;
  return `${stamp}-${suffix.toString(16).padStart(6, '0')}`;
}

let nextSuffix = randomBytes(3).readUIntBE(0, 3);

export function isSnapshotId(id: string): boolean {
  return SNAPSHOT_ID.test(id);
}

export function snapshotPath(dir: DataDir, id: string): string {
  if (!isSnapshotId(id)) throw new RangeError(`${JSON.stringify(id)} is not a snapshot id (make ids with newSnapshotId)`);
  return join(dir.snapshots, `snapshot-${id}${SNAPSHOT_EXTENSION}`);
}

/**
 * Write `data` as `snapshot-<meta.id>.upisnap`, atomically and durably, then
 * delete all but the newest SNAPSHOTS_KEPT snapshots, never the one just
 * written. Returns its path.
 */
export async function writeSnapshot(dir: DataDir, data: SnapshotData): Promise<string> {
  const path = snapshotPath(dir, data.meta.id);
  await writeFileAtomic(path, encodeSnapshot(data));
  await pruneSnapshots(dir, path);
  return path;
}

async function pruneSnapshots(dir: DataDir, keep: string): Promise<void> {
  const paths = await listSnapshots(dir);
  for (const path of paths.slice(SNAPSHOTS_KEPT)) {
    if (path === keep) continue;
    try {
      await unlink(path);
    } catch {
      // The new snapshot is already durable; a file that cannot go now is retried on the next write.
    }
  }
}

/** Paths of the snapshot files, newest first. Temporary and unrelated files are left out. */
export async function listSnapshots(dir: DataDir): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir.snapshots);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .filter((name) => SNAPSHOT_FILE.test(name))
    .sort()
    .reverse()
    .map((name) => join(dir.snapshots, name));
}

/**
 * Read, verify and decode one snapshot file. The file is read straight into
 * the memory the arrays will live in (a SharedArrayBuffer with
 * `shared: true`), so loading copies nothing after the read, and the
 * checksum is computed as the chunks arrive. Errors are SnapshotErrors naming
 * the file; a missing file is ERR_SNAPSHOT_NOT_FOUND.
 */
export async function readSnapshotFile(path: string, options: { readonly shared?: boolean } = {}): Promise<SnapshotData> {
  const shared = options.shared === true;
  const { bytes, bodyCrc } = await readWholeFile(path, shared);
  try {
    return decodeSnapshot(bytes, { shared, bodyCrc });
  } catch (error) {
    if (error instanceof SnapshotError) {
      throw new SnapshotError(error.code, `${path}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/**
 * The whole file, with the CRC-32 of everything after the header. Several
 * chunk reads are in flight at once (they run on libuv's pool and spend most
 * of their time faulting in fresh pages), while this thread checksums the
 * chunks that have arrived, in order.
 */
async function readWholeFile(path: string, shared: boolean): Promise<{ bytes: Uint8Array; bodyCrc: number }> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new SnapshotError(ErrorCode.SNAPSHOT_NOT_FOUND, `${path}: snapshot file not found`, { cause: error });
    }
    throw error;
  }
  const pending: Promise<number>[] = [];
  try {
    const { size } = await handle.stat();
    // Own, zero-offset memory: every array view of it is aligned.
    const memory = shared ? new SharedArrayBuffer(size) : Buffer.allocUnsafeSlow(size).buffer;
    const bytes = new Uint8Array(memory, 0, size);
    const readChunk = async (start: number): Promise<number> => {
      const length = Math.min(READ_CHUNK, size - start);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await handle.read(bytes, start + done, length - done, start + done);
        if (bytesRead === 0) break; // the file shrank while being read
        done += bytesRead;
      }
      return done;
    };
    let next = 0;
    const schedule = (): void => {
      while (pending.length < READS_IN_FLIGHT && next < size) {
        const read = readChunk(next);
        read.catch(() => {}); // a failure is seen when its turn comes; until then it must not count as unhandled
        pending.push(read);
        next += READ_CHUNK;
      }
    };
    schedule();
    let bodyCrc = 0;
    let filled = 0;
    while (pending.length > 0) {
      const got = await pending[0]!;
      void pending.shift(); // the read just awaited: it has resolved
      const end = filled + got;
      if (end > SNAPSHOT_HEADER_LENGTH) bodyCrc = crc32(bytes.subarray(Math.max(filled, SNAPSHOT_HEADER_LENGTH), end), bodyCrc);
      if (got < Math.min(READ_CHUNK, size - filled)) {
        // Short: decoding reports the file as truncated.
        return { bytes: bytes.subarray(0, end), bodyCrc };
      }
      filled = end;
      schedule();
    }
    return { bytes, bodyCrc };
  } finally {
    // Reads still in flight write into the buffer through this handle: let them finish first.
    await Promise.allSettled(pending);
    await handle.close();
  }
}

export interface LoadNewestOptions {
  /** Load into SharedArrayBuffers (see readSnapshotFile). */
  readonly shared?: boolean;
  /** Told about each snapshot passed over, newest first, with why. */
  readonly onSkip?: (path: string, error: unknown) => void;
  /** How to load one file; readSnapshotFile by default (loadSnapshotOffThread fits here). */
  readonly read?: (path: string) => Promise<SnapshotData>;
  /** Consider only files for which this holds (a caller can pass over files it already refused, or older ones). */
  readonly accept?: (path: string) => boolean;
}

/**
 * Load the newest snapshot that reads and decodes cleanly, passing over (and
 * reporting) any that fail for whatever reason, since an older snapshot is
 * better than none. Null when there is none.
 */
export async function loadNewestValidSnapshot(
  dir: DataDir,
  options: LoadNewestOptions = {},
): Promise<{ path: string; data: SnapshotData } | null> {
  const read = options.read ?? ((path: string) => readSnapshotFile(path, { shared: options.shared === true }));
  for (const path of await listSnapshots(dir)) {
    if (options.accept !== undefined && !options.accept(path)) continue;
    try {
      return { path, data: await read(path) };
    } catch (error) {
      options.onSkip?.(path, error);
    }
  }
  return null;
}
