/**
 * Worker side of loadSnapshotOffThread: read, verify and decode one snapshot
 * into shared memory and post it back. The arrays are views of one
 * SharedArrayBuffer, so posting them shares that memory instead of copying it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readSnapshotFile } from './snapshot-files.js';
import { longestKey } from './vpa-index.js';
import type { SnapshotData } from './snapshot-data.js';
import { answerOneOff } from '../common/one-off-worker.js';

const { path, niceIncrement } = workerData as { path: string; niceIncrement: number };
await answerOneOff(
  (reply) => parentPort!.postMessage(reply),
  async (): Promise<SnapshotData> => {
    if (niceIncrement > 0) {
      // Best effort: without the binding (or the right) the load simply runs at normal priority.
      await import('@napi-rs/nice').then((binding) => binding.nice(niceIncrement)).catch(() => {});
    }
    const data = await readSnapshotFile(path, { shared: true });
    return { ...data, maxKeyLength: longestKey(data) };
  },
);
