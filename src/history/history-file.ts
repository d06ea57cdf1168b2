import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
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
