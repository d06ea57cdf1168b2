import type { Worker } from 'node:worker_threads';
import { ErrorCode, ServingError } from '../common/errors.js';
import type { FromEdge, ToEdge } from './edge-worker.js';

/**
 * Post a message to a serving thread and wait for its first reply of one of
 * `types` (with a matching id when the message has one). Rejects with
 * ERR_THREAD when the thread exits first, or has exited already: a message
 * to an exited thread is dropped and its 'exit' event has been emitted, so
 * waiting would never end (a scrape of /metrics on another thread would
 * hang with it).
 */
export function askThread(worker: Worker, message: ToEdge, ...types: FromEdge['type'][]): Promise<FromEdge> {
  return new Promise((resolve, reject) => {
    // Node sets threadId to -1 once the thread has stopped running.
    if (worker.threadId === -1) {
      reject(new ServingError(ErrorCode.THREAD, 'serving thread has exited'));
      return;
    }
    const id = 'id' in message ? message.id : undefined;
    const onMessage = (reply: FromEdge) => {
      if (!types.includes(reply.type)) return;
      if (id !== undefined && 'id' in reply && reply.id !== id) return;
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(reply);
    };
    const onExit = (code: number) => {
      worker.off('message', onMessage);
      reject(new ServingError(ErrorCode.THREAD, `serving thread exited with ${code}`));
    };
    worker.on('message', onMessage);
    worker.once('exit', onExit);
    worker.postMessage(message);
  });
}
