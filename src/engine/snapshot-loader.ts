import { Worker } from 'node:worker_threads';
import { resolve } from 'node:path';
import { SnapshotError, isSnapshotErrorCode } from '../common/errors.js';
import type { SnapshotData } from './snapshot-data.js';

/** What the loader worker posts back. */
export type LoaderReply =
  | { readonly ok: true; readonly data: SnapshotData }
  | { readonly ok: false; readonly error: LoaderFailure };

interface LoaderFailure {
  readonly name: string;
  readonly message: string;
  readonly code: string | undefined;
  readonly stack: string | undefined;
}

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
  return new Promise((resolvePromise, reject) => {
    const worker = new Worker(WORKER_URL, { workerData: { path: resolve(path), niceIncrement: options.niceIncrement ?? 0 } });
    let settled = false;
    worker.once('message', (reply: LoaderReply) => {
      settled = true;
      if (reply.ok) resolvePromise(reply.data);
      else reject(reviveError(reply.error));
    });
    worker.once('error', (error) => {
      if (settled) return;
      settled = true;
      reject(error);
    });
    worker.once('exit', (code) => {
      if (settled) return;
      settled = true;
      reject(new Error(`snapshot loader thread exited with code ${code} before answering`));
    });
  });
}

function reviveError(error: LoaderFailure): Error {
  if (error.name === 'SnapshotError' && isSnapshotErrorCode(error.code)) {
    return new SnapshotError(error.code, error.message);
  }
  const revived = new Error(error.message) as Error & { code?: string };
  revived.name = error.name;
  if (error.code !== undefined) revived.code = error.code;
  return revived;
}
