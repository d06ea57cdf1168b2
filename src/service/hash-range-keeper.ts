import { performance } from 'node:perf_hooks';
import type { Logger } from '../common/logger.js';
import type { DeltaData } from '../engine/delta-data.js';
import { deltaHashes, hashRangesOffThread, type DeltaHashes, type HashRanges } from '../engine/hash-ranges.js';
import type { SnapshotData } from '../engine/snapshot-data.js';
import type { ServedData } from './served-data.js';

/** A snapshot's ranges (the mirror's entries are made from them too). */
export interface SnapshotHashes {
  readonly data: SnapshotData;
  readonly ranges: HashRanges;
}

/**
 * Keeps what is served hashed by h(upi) (engine/hash-ranges.ts), on the
 * thread that owns what is served: each snapshot's ranges, made off-thread
 * once it is served (range lookups answer 503 until then: about 15 s at 10M,
 * bench/MEASUREMENTS.md "Range records in hash order"), and each state of the delta's
 * hashes, made here as it is handed out (only its new VPAs are hashed).
 */
export class HashRangeKeeper {
  readonly #served: ServedData;
  readonly #threads: number;
  readonly #logger: Logger;
  #snapshot: SnapshotHashes | null = null;
  #lastDelta: { readonly delta: DeltaData; readonly hashes: DeltaHashes | null } | null = null;
  readonly #listeners = new Set<(hashes: SnapshotHashes) => void>();
  #closed = false;

  constructor(served: ServedData, options: { readonly threads: number; readonly logger: Logger }) {
    this.#served = served;
    this.#threads = options.threads;
    this.#logger = options.logger;
    this.#make(served.current.data);
    served.onSwap((event) => this.#make(event.next.data));
  }

  /** The served snapshot's ranges, or null while they are being made. */
  get snapshot(): SnapshotHashes | null {
    const held = this.#snapshot;
    return held !== null && held.data === this.#served.current.data ? held : null;
  }

  /** Bytes of the ranges held: those of the last snapshot hashed, until the next one's are made. */
  get bytes(): number {
    const held = this.#snapshot;
    if (held === null) return 0;
    const { starts, order, records } = held.ranges;
    return starts.byteLength + order.byteLength + records.byteLength;
  }

  /** The hashes of a state of the delta (null for an empty one); the state before's are reused. */
  hashesOf(delta: DeltaData): DeltaHashes | null {
    const last = this.#lastDelta;
    if (last !== null && last.delta === delta) return last.hashes;
    const hashes = deltaHashes(delta, last?.hashes ?? null);
    this.#lastDelta = { delta, hashes };
    return hashes;
  }

  /** Called with each snapshot's ranges once made; the function returned stops that. */
  onRanges(listener: (hashes: SnapshotHashes) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#closed = true;
    this.#listeners.clear();
  }

  #make(data: SnapshotData): void {
    const started = performance.now();
    hashRangesOffThread(data, this.#threads).then(
      (ranges) => {
        // A snapshot replaced meanwhile is not served any more: its ranges are of no use.
        if (this.#closed || this.#served.current.data !== data) return;
        const made = { data, ranges };
        this.#snapshot = made;
        this.#logger.info({ snapshot: data.meta.id, vpas: data.meta.vpaCount, largestRange: ranges.largest, ms: Math.round(performance.now() - started) }, 'VPA hash ranges made');
        for (const listener of this.#listeners) listener(made);
      },
      (error: unknown) => {
        this.#logger.error({ snapshot: data.meta.id, err: error instanceof Error ? error.message : String(error) }, 'VPA hash ranges could not be made; range lookups answer 503 for this snapshot');
      },
    );
  }
}
