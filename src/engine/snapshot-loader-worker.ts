/**
 * Worker side of loadSnapshotOffThread: read, verify and decode one snapshot
 * into shared memory and post it back. The arrays are views of one
 * SharedArrayBuffer, so posting them shares that memory instead of copying it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readSnapshotFile } from './snapshot-files.js';
import { longestKey } from './vpa-index.js';
import type { LoaderReply } from './snapshot-loader.js';

const { path, niceIncrement } = workerData as { path: string; niceIncrement: number };
if (niceIncrement > 0) {
  // Best effort: without the binding (or the right) the load simply runs at normal priority.
  await import('@napi-rs/nice').then((binding) => binding.nice(niceIncrement)).catch(() => {});
}
let reply: LoaderReply;
try {
  const data = await readSnapshotFile(path, { shared: true });
  reply = { ok: true, data: { ...data, maxKeyLength: longestKey(data) } };
} catch (error) {
  const e: Error & { code?: unknown } = error instanceof Error ? error : new Error(String(error));
  reply = {
    ok: false,
    error: { name: e.name, message: e.message, code: typeof e.code === 'string' ? e.code : undefined, stack: e.stack },
  };
}
parentPort!.postMessage(reply);
