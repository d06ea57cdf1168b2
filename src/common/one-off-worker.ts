import { Worker } from 'node:worker_threads';

/** Why a one-off worker's task failed: what it takes to rebuild its error on the calling thread, code included. */
export interface OneOffFailure {
  readonly name: string;
  readonly message: string;
  readonly code: string | undefined;
  readonly stack: string | undefined;
}

/** What a one-off worker posts back: its value, or why it failed. */
export type OneOffReply<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: OneOffFailure };

/**
 * Run one task on a worker thread of its own that posts one OneOffReply and
 * ends (snapshot-loader-worker.ts, hash-ranges-worker.ts,
 * mirror-cut-worker.ts): for work of seconds that no coordinating or
 * serving thread may stall on. Rejects with `revive` of the worker's
 * failure (by default an Error naming `what` and its message), or naming
 * `what` when the thread exits without answering.
 */
export function runOneOffWorker<T>(
  url: URL,
  workerData: unknown,
  what: string,
  revive: (failure: OneOffFailure) => Error = (failure) => new Error(`${what} failed: ${failure.message}`),
): Promise<T> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(url, { workerData });
    let settled = false;
    worker.once('message', (reply: OneOffReply<T>) => {
      settled = true;
      if (reply.ok) resolve(reply.value);
      else reject(revive(reply.error));
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
export async function answerOneOff<T>(post: (reply: OneOffReply<T>) => void, work: () => T | Promise<T>): Promise<void> {
  let reply: OneOffReply<T>;
  try {
    reply = { ok: true, value: await work() };
  } catch (error) {
    const e: Error & { code?: unknown } = error instanceof Error ? error : new Error(String(error));
    reply = { ok: false, error: { name: e.name, message: e.message, code: typeof e.code === 'string' ? e.code : undefined, stack: e.stack } };
  }
  post(reply);
}
