import { performance } from 'node:perf_hooks';
import type { Logger } from '../common/logger.js';
import type { DeltaData } from '../engine/delta-data.js';
import { deltaHashes, hashRangesOffThread, type DeltaHashes, type HashRanges, type VpaHashHeads } from '../engine/hash-ranges.js';
import type { SnapshotData } from '../engine/snapshot-data.js';
import type { ServedData } from './served-data.js';

/** A snapshot's ranges with the hash heads they were made from, when kept (the mirror's entries are made from those). */
export interface SnapshotHashes {
  readonly data: SnapshotData;
  readonly ranges: HashRanges;
  /** Null unless the keeper keeps them (`keepHeads`): 8 bytes a VPA only the mirror needs, until it has made its entries of them (releaseHeads). */
  readonly heads: VpaHashHeads | null;
}

/**
 * Keeps what is served hashed by h(upi) (engine/hash-ranges.ts), on the
 * thread that owns what is served: each snapshot's ranges, made off-thread
 * once it is served (range lookups answer 503 until then: seconds at 10M,
 * bench/MEASUREMENTS.md "VPA hashes"), and each state of the delta's
 * hashes, made here as it is handed out (only its new VPAs are hashed).
 */
export class HashRangeKeeper {
  readonly #served: ServedData;
  readonly #threads: number;
  readonly #logger: Logger;
  readonly #keepHeads: boolean;
  #snapshot: SnapshotHashes | null = null;
  #lastDelta: { readonly delta: DeltaData; readonly hashes: DeltaHashes | null } | null = null;
  readonly #listeners = new Set<(hashes: SnapshotHashes) => void>();
  #closed = false;

  constructor(served: ServedData, options: { readonly threads: number; readonly logger: Logger; readonly keepHeads?: boolean }) {
    this.#served = served;
    this.#threads = options.threads;
    this.#logger = options.logger;
    this.#keepHeads = options.keepHeads ?? false;
    this.#make(served.current.data);
    served.onSwap((event) => this.#make(event.next.data));
  }

  /** Whether the snapshots' hash heads are kept (SnapshotHashes.heads). */
  get keepsHeads(): boolean {
    return this.#keepHeads;
  }

  /** The served snapshot's ranges and heads, or null while they are being made. */
  get snapshot(): SnapshotHashes | null {
    const held = this.#snapshot;
    return held !== null && held.data === this.#served.current.data ? held : null;
  }

  /** The hashes of a state of the delta (null for an empty one); the state before's are reused. */
  hashesOf(delta: DeltaData): DeltaHashes | null {
    const last = this.#lastDelta;
    if (last !== null && last.delta === delta) return last.hashes;
    const hashes = deltaHashes(delta, last?.hashes ?? null);
    this.#lastDelta = { delta, hashes };
    return hashes;
  }

  /** Let go of the hash heads of snapshot `data`, once the mirror has made what it needs of them. */
  releaseHeads(data: SnapshotData): void {
    const held = this.#snapshot;
    if (held !== null && held.data === data) this.#snapshot = { ...held, heads: null };
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
      ({ ranges, heads }) => {
        // A snapshot replaced meanwhile is not served any more: its ranges are of no use.
        if (this.#closed || this.#served.current.data !== data) return;
        const made = { data, ranges, heads: this.#keepHeads ? heads : null };
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
