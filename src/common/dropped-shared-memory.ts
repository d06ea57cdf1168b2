import { startIncrementalMarking } from './collector.js';

/**
 * Shared memory a thread has let go of, counted until it is collected.
 *
 * V8 counts no SharedArrayBuffer as external memory of the threads holding
 * it (collector.ts says why), so dropping one puts no pressure on the
 * collector. A thread that replaces the live delta over and over (every
 * merge, every correction: each makes a new delta in shared memory) kept
 * every replaced one until a full collection it had no other reason to
 * run: a server grew by hundreds of megabytes over thousands of
 * corrections (bench/MEASUREMENTS.md, "Corrections: two followers at 1M,
 * and 10M"). Told of each drop, this runs `collect` once the bytes dropped
 * since the last one pass a threshold.
 */
export class DroppedSharedMemory {
  readonly #thresholdBytes: number;
  readonly #collect: () => void;
  #bytes = 0;

  constructor(thresholdBytes: number, collect: () => void) {
    this.#thresholdBytes = thresholdBytes;
    this.#collect = collect;
  }

  /** `bytes` of shared memory were let go of. */
  dropped(bytes: number): void {
    this.#bytes += bytes;
    if (this.#bytes < this.#thresholdBytes) return;
    this.#bytes = 0;
    this.#collect();
  }

  /** Bytes dropped since the last collection. */
  get pending(): number {
    return this.#bytes;
  }
}

/** Replaced deltas a thread may hold before it collects: a few of a large delta, many of a small one. */
export const DELTA_COLLECT_BYTES = 64 * 1024 * 1024;

/**
 * The replaced deltas of a thread that must not pause for long (a serving
 * thread, or the main thread that hands deltas to them): collected by
 * marking in steps, or with `collect` at once where marking cannot start.
 */
export function droppedDeltas(collect: (() => unknown) | undefined): DroppedSharedMemory {
  return new DroppedSharedMemory(DELTA_COLLECT_BYTES, () => {
    if (!startIncrementalMarking()) collect?.();
  });
}
