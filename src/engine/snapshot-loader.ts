import { resolve } from 'node:path';
import { SnapshotError, isSnapshotErrorCode } from '../common/errors.js';
import type { SnapshotData } from './snapshot-data.js';
import { runOneOffWorker, type OneOffFailure } from '../common/one-off-worker.js';

const WORKER_URL = new URL('./snapshot-loader-worker.js', import.meta.url);

/**
 * Read, verify and decode a snapshot file on a short-lived worker thread, so
 * the reading, checksum and validation never block this thread. The arrays
 * come back in SharedArrayBuffers: nothing big is copied here. Failures
 * reject with the error the worker met, rebuilt here (a SnapshotError keeps
 * its code and message). `niceIncrement` lowers the loader thread's
 * priority, as for background builds (SnapshotBuilder).
 */
export function loadSnapshotOffThread(path: string, options: { readonly niceIncrement?: number } = {}): Promise<SnapshotData> {
  return runOneOffWorker<SnapshotData>(WORKER_URL, { path: resolve(path), niceIncrement: options.niceIncrement ?? 0 }, 'loading a snapshot', reviveError);
}

function reviveError(error: OneOffFailure): Error {
  if (error.name === 'SnapshotError' && isSnapshotErrorCode(error.code)) {
    return new SnapshotError(error.code, error.message);
  }
  const revived = new Error(error.message) as Error & { code?: string };
  revived.name = error.name;
  if (error.code !== undefined) revived.code = error.code;
  return revived;
}
