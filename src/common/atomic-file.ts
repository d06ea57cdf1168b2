import { readSync } from 'node:fs';
import { open, rename, unlink, mkdir, type FileHandle } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { isValidPid, ownIdentity } from './process-identity.js';

/**
 * Write `data` to `path` so that a crash at any moment leaves either the old
 * file or the complete new one, never a half-written file: write a temporary
 * file beside it, fsync it, rename it over the target, fsync the directory.
 * The temporary name (tempFileName) starts with `.tmp-` so readers skip it,
 * and names its writer so cleanup can tell a crashed writer's file.
 */
export async function writeFileAtomic(path: string, data: Uint8Array | readonly Uint8Array[], mode = 0o644): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, tempFileName(basename(path)));
  const handle = await open(temp, 'w', mode);
  try {
    await writeAllAt(handle, data instanceof Uint8Array ? [data] : data, 0);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await handle.close();
  try {
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(dir);
}

/** Write every byte of `parts`, in order, from `position` on, however the system splits the writes. */
export async function writeAllAt(file: FileHandle, parts: readonly Uint8Array[], position: number): Promise<void> {
  const rest = parts.filter((part) => part.byteLength > 0);
  let at = position;
  while (rest.length > 0) {
    const { bytesWritten } = await file.writev(rest, at);
    at += bytesWritten;
    let skipped = bytesWritten;
    while (rest.length > 0 && skipped >= rest[0]!.byteLength) skipped -= rest.shift()!.byteLength;
    if (skipped > 0) rest[0] = rest[0]!.subarray(skipped);
  }
}

/**
 * Fill `bytes` from the file at `position` on, however the system splits
 * the reads: false when the file ends first.
 */
export async function readAllAt(file: FileHandle, bytes: Uint8Array, position: number): Promise<boolean> {
  for (let done = 0; done < bytes.byteLength; ) {
    const { bytesRead } = await file.read(bytes, done, bytes.byteLength - done, position + done);
    if (bytesRead === 0) return false;
    done += bytesRead;
  }
  return true;
}

/** readAllAt, for a file descriptor and a thread that reads synchronously. */
export function readAllAtSync(fd: number, bytes: Uint8Array, position: number): boolean {
  for (let done = 0; done < bytes.byteLength; ) {
    const read = readSync(fd, bytes, done, bytes.byteLength - done, position + done);
    if (read === 0) return false;
    done += read;
  }
  return true;
}

export const TEMP_PREFIX = '.tmp-';

/**
 * A temporary file name for `base`, unique to this process and naming it:
 * `.tmp-<base>.<pid>-<start ticks>-<boot id, first 8 hex>.<8 random hex>`,
 * or `.tmp-<base>.<pid>.<8 random hex>` where /proc does not give the start
 * time and boot id (process-identity.ts). Cleanup (temp-cleanup.ts) removes
 * such a file once that process has ended.
 */
export function tempFileName(base: string): string {
  const self = ownIdentity();
  const writer = self === null ? String(process.pid) : `${self.pid}-${self.startTicks}-${self.bootId.slice(0, BOOT_TAG_LENGTH)}`;
  return `${TEMP_PREFIX}${base}.${writer}.${randomBytes(4).toString('hex')}`;
}

const BOOT_TAG_LENGTH = 8;

/** The writer a temporary file name names: its pid, and its start time and boot id prefix when the name carries them. */
export type TempFileWriter =
  | { readonly pid: number; readonly startTicks: number; readonly bootId: string }
  | { readonly pid: number; readonly startTicks?: undefined; readonly bootId?: undefined };

// The segment before the random part tells the forms apart: `<pid>-<ticks>-<boot>` holds dashes, a bare pid none.
const CURRENT_NAME = /^\.tmp-.+\.([1-9]\d{0,9})-(\d{1,15})-([0-9a-f]{8})\.[0-9a-f]{8}$/;
/** Names written before the start time was added: writeFileAtomic and demo data (random hex), the parse cache (a chunk number). */
const PID_ONLY_NAME = /^\.tmp-.+\.([1-9]\d{0,9})\.(?:[0-9a-f]{8}|\d{1,10})$/;
/** The evidence store's name before it used tempFileName. */
const PID_ONLY_INGEST_NAME = /^\.tmp-ingest-([1-9]\d{0,9})-[0-9a-f]{8}$/;

/** Who wrote a temporary file, from its name; null for a name none of this service's writers makes. */
export function tempFileWriter(name: string): TempFileWriter | null {
  const current = CURRENT_NAME.exec(name);
  if (current !== null) {
    const pid = Number(current[1]);
    return isValidPid(pid) ? { pid, startTicks: Number(current[2]), bootId: current[3]! } : null;
  }
  const pidOnly = PID_ONLY_NAME.exec(name) ?? PID_ONLY_INGEST_NAME.exec(name);
  const pid = pidOnly === null ? 0 : Number(pidOnly[1]);
  return isValidPid(pid) ? { pid } : null;
}

/** Make a rename durable: the directory entry itself must reach the disk. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
