/**
 * Work split into chunks, a few at a time, results in input order. The
 * first failure cancels the chunks still running and is what the call throws.
 */
import { childController } from './abort.js';

export function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let start = 0; start < items.length; start += size) chunks.push(items.slice(start, start + size));
  return chunks;
}

/** `work` on every input, at most `concurrency` at once; the results in input order. */
export async function mapConcurrently<T, R>(
  inputs: readonly T[],
  concurrency: number,
  signal: AbortSignal | undefined,
  work: (input: T, index: number, signal: AbortSignal) => Promise<R>,
): Promise<R[]> {
  const { controller, release } = childController(signal);
  const results: R[] = new Array<R>(inputs.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async () => {
    while (failure === null && next < inputs.length) {
      const index = next++;
      try {
        results[index] = await work(inputs[index]!, index, controller.signal);
      } catch (error) {
        // The first failure is the call's; the ones it causes by cancelling the rest are not.
        if (failure === null) {
          failure = { error };
          controller.abort(error);
        }
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, inputs.length) }, worker));
  } finally {
    release();
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}
