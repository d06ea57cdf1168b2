import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';

/**
 * A full garbage collection on demand, so a replaced snapshot's memory is
 * given back when it is dropped rather than at some later collection.
 *
 * Snapshots live in SharedArrayBuffers, and V8 does not count a shared
 * buffer as external memory of the threads holding it (it would be counted
 * once per thread). Dropping a snapshot of gigabytes therefore puts no
 * pressure on any collector: a thread that allocates little (a serving
 * thread with few requests, the main thread between builds) keeps every
 * replaced snapshot until its next full collection, which may not come for
 * a long time: an idle server's resident memory grew by a snapshot with
 * every rebuild (bench/MEASUREMENTS.md, "Giving a replaced snapshot's
 * memory back").
 */

/**
 * Make `gc` available: threads started after this call have it as a
 * global, and this thread through `threadCollector` (jest's leak detector
 * enables it at run time the same way). The flag adds that function to
 * contexts made from then on. It also changes V8's flag hash, so code
 * caches made before it no longer match; worker threads took as long to
 * start with it as without (bench/MEASUREMENTS.md, "Giving a replaced
 * snapshot's memory back").
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

/**
 * V8 starts marking once a thread's external memory has grown 64 MiB past
 * what it was at its last full collection, and collects at once, with the
 * full pause, past half its old-generation limit. The buffer
 * `startIncrementalMarking` allocates must fall between: 256 MiB leaves room
 * for a thread whose external memory has shrunk since its last collection;
 * in a small heap, a quarter of the heap limit keeps it under the second
 * bound (with Node's defaults here the quarter is about 1 GiB, and 256 MiB
 * applies); below 96 MiB there is no room to be sure of the first.
 */
const MARKING_NUDGE_MAX_BYTES = 256 * 1024 * 1024;
const MARKING_NUDGE_MIN_BYTES = 96 * 1024 * 1024;

/**
 * Start incremental marking of this thread's heap, for a collection that
 * then runs in steps between tasks instead of holding the thread for the
 * whole of it: a full collection (`threadCollector`) of a serving thread's
 * heap holds it for milliseconds (bench/MEASUREMENTS.md, "Giving a replaced
 * snapshot's memory back"), and under load every request that arrives
 * meanwhile waits.
 *
 * Node offers no call for it. V8 starts marking by itself when a thread's
 * external memory (its ArrayBuffers, not its SharedArrayBuffers) grows
 * past a limit, its answer to memory held outside the heap, and an
 * ArrayBuffer counts from the moment it is allocated. So this allocates one
 * large buffer and drops it at once. Its pages are never touched (they come
 * zeroed from the system, mapped on demand), so it costs a map and an unmap,
 * not the memory. Returns false when it did not try: a heap limit too small
 * for a buffer that surely starts marking without forcing a full
 * collection, or no address space for the buffer. The caller then still has
 * `threadCollector` to fall back on, as it has should V8 not start marking.
 */
export function startIncrementalMarking(): boolean {
  const bytes = Math.min(MARKING_NUDGE_MAX_BYTES, Math.floor(getHeapStatistics().heap_size_limit / 4));
  if (bytes < MARKING_NUDGE_MIN_BYTES) return false;
  try {
    new ArrayBuffer(bytes);
    return true;
  } catch {
    // RangeError: the allocation failed. Nothing was started, and nothing is held.
    return false;
  }
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
