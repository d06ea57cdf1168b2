import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { readAllAt } from '../common/atomic-file.js';
import { HistoryError } from '../common/errors.js';

/**
 * Open (or create, with its directory) one of the history's files, and
 * hand it to `read`, which checks it and makes what is kept open on it. A
 * file that cannot be opened, or that `read` refuses, is closed, and the
 * failure thrown as HistoryError.
 */
export async function openHistoryFile<T>(path: string, read: (handle: FileHandle) => Promise<T>): Promise<T> {
  let handle: FileHandle;
  try {
    await mkdir(dirname(path), { recursive: true });
    handle = await open(path, 'a+');
  } catch (error) {
    throw new HistoryError(`cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    return await read(handle);
  } catch (error) {
    await handle.close();
    throw error instanceof HistoryError ? error : new HistoryError(`cannot read ${path}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * The format version of the history file at `path` when it begins with
 * `magic` (bytes 8 to 12), as the service writes each of them; null for no
 * file, or one that does not begin so. HistoryError when it cannot be read.
 */
export async function formatOf(path: string, magic: string): Promise<number | null> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new HistoryError(`cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const head = Buffer.alloc(magic.length + 4);
    if (!(await readAllAt(handle, head, 0)) || head.toString('latin1', 0, magic.length) !== magic) return null;
    return head.readUInt32LE(magic.length);
  } catch (error) {
    throw new HistoryError(`cannot read ${path}: ${(error as Error).message}`, { cause: error });
  } finally {
    await handle.close();
  }
}
