import { open, rename, unlink, mkdir } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * Write `data` to `path` so that a crash at any moment leaves either the old
 * file or the complete new one, never a half-written file: write a temporary
 * file beside it, fsync it, rename it over the target, fsync the directory.
 * Temporary names start with `.tmp-` so readers and cleanup can skip them.
 */
export async function writeFileAtomic(path: string, data: Uint8Array | readonly Uint8Array[], mode = 0o644): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `${TEMP_PREFIX}${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}`);
  const handle = await open(temp, 'w', mode);
  try {
    const parts = data instanceof Uint8Array ? [data] : data;
    for (const part of parts) {
      let written = 0;
      while (written < part.byteLength) {
        const { bytesWritten } = await handle.write(part, written, part.byteLength - written);
        written += bytesWritten;
      }
    }
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

export const TEMP_PREFIX = '.tmp-';

/** Make a rename durable: the directory entry itself must reach the disk. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
