import { ARRAY_FIELDS, type SnapshotData } from '../engine/snapshot-data.js';

/**
 * Where a replaced snapshot's memory is given back.
 *
 * A snapshot's arrays live in SharedArrayBuffers shared by every thread, and
 * the memory is returned to the system by whichever thread lets go of it
 * last, inside that thread's garbage collection. Unmapping a large
 * snapshot takes a while (134 ms for 1.5 GiB in 4 KiB pages, measured here),
 * and a serving thread must not spend that between two requests. So the
 * main thread, which serves no request, keeps each replaced snapshot until
 * every serving thread reports that its collector has dropped its own
 * references (ReleaseWatch), and is then the one to let go.
 */
const SWEEP_GRACE_MS = 1000;

export class RetiredSnapshots {
  readonly #threads: number;
  readonly #maxHeld: number;
  readonly #held = new Map<string, { data: SnapshotData; waiting: number }>();

  /**
   * `maxHeld` bounds the memory this can keep: a serving thread that does
   * not collect for a long while (an idle one) must not make snapshots pile
   * up. Past it the oldest is let go at once, and freed wherever it is last
   * dropped, as without this class.
   */
  constructor(threads: number, maxHeld = 2) {
    this.#threads = threads;
    this.#maxHeld = maxHeld;
  }

  /** Keep a snapshot that serving threads are being told to replace. */
  retire(data: SnapshotData): void {
    this.#held.set(data.meta.id, { data, waiting: this.#threads });
    while (this.#held.size > this.#maxHeld) this.#held.delete(this.#held.keys().next().value!);
  }

  /** One serving thread has dropped snapshot `id`; after the last, it is let go here. */
  released(id: string): void {
    const entry = this.#held.get(id);
    if (entry === undefined) return;
    entry.waiting--;
    // A thread reports from a finalization callback, which may run before its
    // collector has finished sweeping the buffers: give it a moment more.
    if (entry.waiting === 0) setTimeout(() => this.#held.delete(id), SWEEP_GRACE_MS).unref();
  }

  /** Ids of the snapshots held now, oldest first. */
  held(): string[] {
    return [...this.#held.keys()];
  }
}

/**
 * The serving-thread side of RetiredSnapshots: reports a replaced snapshot
 * once this thread's collector has reclaimed every buffer object it had for
 * it, so its share of the memory is no longer counted here.
 */
export class ReleaseWatch {
  readonly #remaining = new Map<string, number>();
  readonly #registry: FinalizationRegistry<string>;

  constructor(onReleased: (id: string) => void) {
    this.#registry = new FinalizationRegistry((id) => {
      const left = (this.#remaining.get(id) ?? 1) - 1;
      if (left > 0) {
        this.#remaining.set(id, left);
      } else {
        this.#remaining.delete(id);
        onReleased(id);
      }
    });
  }

  /** Watch a snapshot this thread has stopped serving; call after dropping the reference to it. */
  watch(data: SnapshotData): void {
    const buffers = new Set<ArrayBufferLike>(ARRAY_FIELDS.map((field) => data[field].buffer));
    this.#remaining.set(data.meta.id, buffers.size);
    for (const buffer of buffers) this.#registry.register(buffer, data.meta.id);
  }
}
