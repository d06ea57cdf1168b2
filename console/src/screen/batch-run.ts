/**
 * Screen a list in batches of 100 (the spec's limit), a few at a time, in
 * input order. Retries follow the spec: a 429 waits for `retry_after` (else
 * 1 s doubling to 32 s, with jitter), a 500 or 503 is retried after 1, 2
 * and 4 s; any other failure stops the run.
 */
import { ApiError } from '../api/client.js';
import { lookUpBatch } from '../api/screening.js';
import type { BatchItem } from '../api/types.js';

export const BATCH_SIZE = 100;
/** Batches in flight at once: enough to hide a round trip, few enough not to crowd the key's quota. */
export const PARALLEL_BATCHES = 4;

const SERVER_ERROR_DELAYS_MS = [1000, 2000, 4000];
const MAX_RATE_LIMIT_RETRIES = 8;

export interface ScreenedRow {
  readonly item: BatchItem;
  /** X-Request-Id and X-Data-Version of the batch that answered it: the spec asks callers to log them. */
  readonly requestId: string | null;
  readonly dataVersion: string | null;
}

export interface BatchProgress {
  readonly done: number;
  readonly total: number;
}

export async function screenInBatches(vpas: readonly string[], signal: AbortSignal, onProgress: (progress: BatchProgress) => void): Promise<ScreenedRow[]> {
  const batches: string[][] = [];
  for (let i = 0; i < vpas.length; i += BATCH_SIZE) batches.push(vpas.slice(i, i + BATCH_SIZE));
  const answers = new Array<ScreenedRow[]>(batches.length);
  let next = 0;
  let done = 0;
  onProgress({ done, total: vpas.length });

  const worker = async () => {
    while (next < batches.length) {
      signal.throwIfAborted();
      const index = next++;
      const batch = batches[index]!;
      const answer = await withRetries(() => lookUpBatch(batch, signal), signal);
      answers[index] = answer.body.results.map((item) => ({ item, requestId: answer.requestId, dataVersion: answer.dataVersion }));
      done += batch.length;
      onProgress({ done, total: vpas.length });
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_BATCHES, batches.length) }, worker));
  return answers.flat();
}

async function withRetries<T>(attempt: () => Promise<T>, signal: AbortSignal): Promise<T> {
  let serverErrors = 0;
  let rateLimited = 0;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      let delay: number;
      if (error.status === 429 && rateLimited < MAX_RATE_LIMIT_RETRIES) {
        const retryAfter = error.body.retry_after;
        const backoff = Math.min(32_000, 1000 * 2 ** rateLimited) + Math.random() * 500;
        delay = typeof retryAfter === 'number' ? retryAfter * 1000 : backoff;
        rateLimited++;
      } else if ((error.status === 500 || error.status === 503) && serverErrors < SERVER_ERROR_DELAYS_MS.length) {
        delay = SERVER_ERROR_DELAYS_MS[serverErrors++]!;
      } else {
        throw error;
      }
      await sleep(delay, signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the signal's reason, as fetch rejects with: an AbortError unless the caller chose another
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
