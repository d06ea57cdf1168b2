import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';

/**
 * A full garbage collection on demand, so a replaced snapshot's memory is
 * given back when it is dropped rather than at some later collection.
 *
 * Snapshots live in SharedArrayBuffers, and V8 does not count a shared
 * buffer as external memory of the threads holding it (it would be counted
 * once per thread). Dropping a snapshot of 1.5 GiB therefore puts no
 * pressure on any collector: a thread that allocates little (a serving
 * thread with few requests, the main thread between builds) keeps every
 * replaced snapshot until its next full collection, which may not come for
 * a long time. Measured on an idle server at 10M VPAs: resident memory grew
 * by a snapshot per rebuild, from 6.2 to 14.3 GiB over four.
 */

/**
 * Make `gc` available: threads started after this call have it as a
 * global, and this thread through `threadCollector` (jest's leak detector
 * enables it at run time the same way). The flag adds that function to
 * contexts made from then on. It also changes V8's flag hash, so code
 * caches made before it no longer match; worker threads took as long to
 * start with it as without (medians of 22–29 ms either way, measured here).
 */
export function enableCollector(): void {
  setFlagsFromString('--expose-gc');
}

/**
 * A full collection of this thread's heap, returning how long it held the
 * thread (ms, to a tenth, for the log); undefined when `enableCollector` was
 * not called before the thread started.
 */
export function threadCollector(): (() => number) | undefined {
  const gc = exposedGc();
  if (gc === undefined) return undefined;
  return () => {
    const started = performance.now();
    gc();
    return Math.round((performance.now() - started) * 10) / 10;
  };
}

function exposedGc(): (() => void) | undefined {
  const global = (globalThis as { gc?: unknown }).gc;
  if (typeof global === 'function') return global as () => void;
  try {
    // A context made now has `gc` when the flag is set; it collects the whole heap of this thread.
    const created: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
    return typeof created === 'function' ? (created as () => void) : undefined;
  } catch {
    return undefined;
  }
}
