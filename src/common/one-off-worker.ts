import { Worker } from 'node:worker_threads';

/** What a one-off worker posts back: its value, or why it failed. */
export type OneOffReply<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

/**
 * Run one task on a worker thread of its own that posts one OneOffReply and
 * ends (hash-ranges-worker.ts, mirror-cut-worker.ts): for work of seconds
 * that no coordinating or serving thread may stall on. Rejects with `what`
 * and the worker's message when it fails or exits without answering.
 */
export function runOneOffWorker<T>(url: URL, workerData: unknown, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(url, { workerData });
    let settled = false;
    worker.once('message', (reply: OneOffReply<T>) => {
      settled = true;
      if (reply.ok) resolve(reply.value);
      else reject(new Error(`${what} failed: ${reply.message}`));
    });
    worker.once('error', (error) => {
      if (!settled) reject(error);
      settled = true;
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`${what}: its thread exited with code ${code} before answering`));
      settled = true;
    });
  });
}

/** The worker side: post `work`'s value, or its failure. */
export function answerOneOff<T>(post: (reply: OneOffReply<T>) => void, work: () => T): void {
  try {
    post({ ok: true, value: work() });
  } catch (error) {
    post({ ok: false, message: error instanceof Error ? error.message : String(error) });
  }
}
