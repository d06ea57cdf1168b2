import { performance } from 'node:perf_hooks';
import { messageOf } from '../common/errors.js';
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
 * (about 15 s at 10M, bench/MEASUREMENTS.md "Range records hashed once"),
 * and each state of the delta's hashes, made here as it is handed out
 * (only its new VPAs are hashed). A publication's or another process's
 * snapshot is hashed before it is served (ServedData.beforeServing), while
 * the snapshot before serves on with its own ranges; the first snapshot
 * of a start and a compaction's own are hashed once served, and range
 * lookups answer 503 until then.
 */
export class HashRangeKeeper {
  readonly #served: ServedData;
  readonly #threads: number;
  readonly #logger: Logger;
  #snapshot: SnapshotHashes | null = null;
  /** The ranges of the snapshot about to be served, made before its swap. */
  #next: SnapshotHashes | null = null;
  #lastDelta: { readonly delta: DeltaData; readonly hashes: DeltaHashes | null } | null = null;
  readonly #listeners = new Set<(hashes: SnapshotHashes) => void>();
  #closed = false;

  constructor(served: ServedData, options: { readonly threads: number; readonly logger: Logger }) {
    this.#served = served;
    this.#threads = options.threads;
    this.#logger = options.logger;
    this.#make(served.current.data);
    served.beforeServing((data) => this.#prepare(data));
    served.onSwap((event) => this.#swapped(event.next.data));
  }

  /** The served snapshot's ranges, or null while they are being made. */
  get snapshot(): SnapshotHashes | null {
    const held = this.#snapshot;
    return held !== null && held.data === this.#served.current.data ? held : null;
  }

  /** The ranges of `data` when they are made, served or about to be (whatever order the swap's listeners run in); else null. */
  rangesOf(data: SnapshotData): HashRanges | null {
    for (const held of [this.#snapshot, this.#next]) if (held?.data === data) return held.ranges;
    return null;
  }

  /** Bytes of the ranges held: the served snapshot's, and the next one's from when they are made until its swap. */
  get bytes(): number {
    let bytes = 0;
    for (const held of [this.#snapshot, this.#next]) {
      if (held === null) continue;
      const { starts, order, records } = held.ranges;
      bytes += starts.byteLength + order.byteLength + records.byteLength;
    }
    return bytes;
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

  /** Make the ranges of `data` before it is served; resolves once they are (rejects when they cannot be: the swap goes on, and they are made after it). */
  async #prepare(data: SnapshotData): Promise<void> {
    if (this.#closed || this.#next?.data === data) return;
    const ranges = await this.#hash(data, 'VPA hash ranges made before the snapshot is served');
    // A snapshot as new was served meanwhile (a compaction's): this one will not be, and is not held for it.
    if (this.#closed || data.meta.id <= this.#served.current.meta.id) return;
    this.#next = { data, ranges };
  }

  /** `data` is served from now: its ranges made before are served with it, or made now when there are none. */
  #swapped(data: SnapshotData): void {
    const next = this.#next;
    this.#next = null;
    // The replaced snapshot's ranges are of no use from now. Held until the new ones are made, they kept the
    // replaced snapshot's own arrays reachable past the collection that gives its memory back
    // (http/snapshot-release.ts), and nothing collected again on an idle server (bench/MEASUREMENTS.md,
    // "A replaced snapshot held by its ranges").
    if (this.#snapshot?.data !== data) this.#snapshot = null;
    if (next?.data === data) this.#serve(next);
    else this.#make(data);
  }

  #make(data: SnapshotData): void {
    this.#hash(data, 'VPA hash ranges made').then(
      (ranges) => {
        // A snapshot replaced meanwhile is not served any more: its ranges are of no use.
        if (!this.#closed && this.#served.current.data === data) this.#serve({ data, ranges });
      },
      (error: unknown) => {
        this.#logger.error({ snapshot: data.meta.id, err: messageOf(error) }, 'VPA hash ranges could not be made; range lookups answer 503 for this snapshot');
      },
    );
  }

  /** The served snapshot's ranges from now, told to the listeners. */
  #serve(made: SnapshotHashes): void {
    this.#snapshot = made;
    for (const listener of this.#listeners) listener(made);
  }

  /** Hash `data` off this thread, logged with `message` once done. */
  async #hash(data: SnapshotData, message: string): Promise<HashRanges> {
    const started = performance.now();
    const ranges = await hashRangesOffThread(data, this.#threads);
    this.#logger.info({ snapshot: data.meta.id, vpas: data.meta.vpaCount, largestRange: ranges.largest, ms: Math.round(performance.now() - started) }, message);
    return ranges;
  }
}
