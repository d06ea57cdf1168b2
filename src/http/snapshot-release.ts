import { ARRAY_FIELDS, type SnapshotData } from '../engine/snapshot-data.js';

/**
 * Where a replaced snapshot's memory is given back.
 *
 * A snapshot's arrays live in SharedArrayBuffers shared by every thread, and
 * the memory is returned to the system by whichever thread lets go of it
 * last, inside that thread's garbage collection. Unmapping a large
 * snapshot takes a while (see bench/MEASUREMENTS.md, 'Giving a replaced
 * snapshot's memory back'), and a serving thread must not spend that
 * between two requests. So the
 * main thread, which serves no request, keeps each replaced snapshot until
 * every serving thread reports that its collector has dropped its own
 * references (ReleaseWatch), and is then the one to let go, or hands the
 * memory, which nothing reads any more, to the next build (`reuse`).
 *
 * Nothing makes a collector run when a snapshot is dropped (collector.ts
 * says why), so both sides run one themselves when given `collect`: the
 * main thread right after letting go, a serving thread once it has a moment
 * with no request in flight, or, while it answers requests, by starting
 * incremental marking.
 */
const SWEEP_GRACE_MS = 1000;

export class RetiredSnapshots {
  /** Serving threads still running, by index: a retired snapshot waits for each of them. */
  readonly #running: Set<number>;
  readonly #maxHeld: number;
  readonly #held = new Map<string, { data: SnapshotData; waiting: Set<number> }>();
  readonly #collect: () => void;
  readonly #reuse: ((data: SnapshotData) => boolean) | undefined;

  /**
   * `maxHeld` (default 2) bounds the memory this can keep: a serving thread
   * that does not collect for a long while must not make snapshots pile up.
   * Past it the oldest is let go at once, and freed wherever it is last
   * dropped, as without this class. `collect`, when given, runs a full
   * collection of this thread's heap after each snapshot let go. `reuse`,
   * when given, is handed each snapshot that every serving thread has
   * dropped, at once: when it keeps the memory (returns true) for the next
   * build's snapshot (SnapshotBuilder.reuseMemoryOf), nothing is let go
   * here; otherwise the snapshot is let go as without it. A snapshot let go
   * past `maxHeld` is never handed on, since a thread may still read it.
   */
  constructor(
    threads: number,
    options: { readonly maxHeld?: number; readonly collect?: () => void; readonly reuse?: (data: SnapshotData) => boolean } = {},
  ) {
    this.#running = new Set(Array.from({ length: threads }, (_, index) => index));
    this.#maxHeld = options.maxHeld ?? 2;
    this.#collect = options.collect ?? (() => {});
    this.#reuse = options.reuse;
  }

  /** Keep a snapshot that serving threads are being told to replace. */
  retire(data: SnapshotData): void {
    this.#held.set(data.meta.id, { data, waiting: new Set(this.#running) });
    // With no serving thread running, nobody holds it but this thread.
    if (this.#running.size === 0) this.#letGo(data.meta.id);
    if (this.#held.size <= this.#maxHeld) return;
    while (this.#held.size > this.#maxHeld) this.#held.delete(this.#held.keys().next().value!);
    this.#collect();
  }

  /** Serving thread `thread` has dropped snapshot `id`; after the last, it is let go here. */
  released(id: string, thread: number): void {
    const entry = this.#held.get(id);
    if (entry === undefined || !entry.waiting.delete(thread)) return;
    if (entry.waiting.size === 0) this.#letGo(id);
  }

  /**
   * Serving thread `thread` runs again (one started in place of a thread
   * that failed): snapshots retired from now on wait for it too. It never
   * had the ones retired before.
   */
  started(thread: number): void {
    this.#running.add(thread);
  }

  /** Serving thread `thread` has stopped: it holds nothing, and no snapshot waits for it any more. */
  exited(thread: number): void {
    this.#running.delete(thread);
    for (const [id, entry] of this.#held) {
      if (entry.waiting.delete(thread) && entry.waiting.size === 0) this.#letGo(id);
    }
  }

  /** Ids of the snapshots held now, oldest first. */
  held(): string[] {
    return [...this.#held.keys()];
  }

  #letGo(id: string): void {
    const entry = this.#held.get(id);
    // No thread can reach it any more (each one's collector has dropped every buffer object it had), so
    // the memory may be written over; kept for that, it stays mapped, and there is nothing to collect.
    if (entry !== undefined && this.#reuse?.(entry.data) === true) {
      this.#held.delete(id);
      return;
    }
    // A thread reports from a finalization callback, which may run before its
    // collector has finished sweeping the buffers: give it a moment more.
    setTimeout(() => {
      this.#held.delete(id);
      this.#collect();
    }, SWEEP_GRACE_MS).unref();
  }
}

/** How a serving thread collects the snapshots it replaced (ReleaseWatch). */
export interface IdleCollection {
  /** A full collection of this thread's heap (collector.ts). */
  readonly collect: () => void;
  /**
   * Start a collection that marks in steps between requests
   * (collector.ts, startIncrementalMarking), for a thread that is not idle:
   * it frees a replaced snapshot without the pause of `collect`.
   */
  readonly startMarking?: () => void;
  /** Requests this thread has answered so far: no change over a check interval, and none in flight, means it is idle. */
  readonly answered: () => number;
  /** Requests this thread has taken and not yet answered (one of them may still use the replaced snapshot). */
  readonly inFlight: () => number;
  /**
   * Collect after this long even if the thread is never idle, ms. Give each
   * thread a different value, so that under load they do not all pause at once.
   */
  readonly forceAfterMs: number;
  /**
   * A busy thread starts marking for a replaced snapshot no sooner than
   * this after the swap, ms (default 0: at the first check). Give each
   * thread a different value: a collection's closing pause on one serving
   * thread also held the other one's loop when both collected at once
   * (its helper threads take the cores), so they take turns.
   */
  readonly markAfterMs?: number;
}

/** How often a serving thread with a replaced snapshot outstanding looks whether it is idle, ms. */
const IDLE_CHECK_MS = 250;
/**
 * A collection that leaves a replaced snapshot outstanding (a slow request
 * still answers from it) is followed by the next only after twice the wait
 * before it, up to this, ms: a snapshot held for long costs a collection a
 * minute, not four a second.
 */
const MAX_COLLECTION_GAP_MS = 60_000;

/**
 * The serving-thread side of RetiredSnapshots: reports a replaced snapshot
 * once this thread's collector has reclaimed every buffer object it had for
 * it, so its share of the memory is no longer counted here.
 *
 * With `idle`, it also makes that collection happen: a full collection at
 * the first check interval in which the thread answered no request and has
 * none in flight. A full collection holds a serving thread for
 * milliseconds; idle, nobody waits for it. A thread under
 * load instead starts incremental marking (`startMarking`) at the first
 * check, and again at doubling intervals while the snapshot is outstanding
 * (a request that was in flight when marking began may have kept it alive);
 * only if that has not freed it after `forceAfterMs` does it pause for a
 * full collection. A collection that leaves a snapshot outstanding is
 * followed by more, further and further apart.
 */
export class ReleaseWatch {
  readonly #remaining = new Map<string, number>();
  readonly #registry: FinalizationRegistry<string>;
  readonly #idle: IdleCollection | undefined;
  #timer: NodeJS.Timeout | null = null;
  /**
   * When this thread last collected, or last replaced a snapshot, whichever
   * is later (performance.now): `#gap` and `forceAfterMs` count from it, so
   * a new swap gets its own chance to be freed by marking.
   */
  #last = 0;
  /** Least time from one collection to the next, ms; 0 again whenever a snapshot is replaced. */
  #gap = 0;
  /** When a busy thread next starts marking (performance.now), and the wait after that, ms. */
  #markAt = 0;
  #markGap = IDLE_CHECK_MS;

  constructor(onReleased: (id: string) => void, idle?: IdleCollection) {
    this.#idle = idle;
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
    this.#last = performance.now();
    this.#gap = 0;
    this.#markAt = this.#last + (this.#idle?.markAfterMs ?? 0);
    this.#markGap = IDLE_CHECK_MS;
    this.#collectWhenIdle();
  }

  /** Snapshots this thread still holds memory of, by id. */
  outstanding(): string[] {
    return [...this.#remaining.keys()];
  }

  #collectWhenIdle(): void {
    const idle = this.#idle;
    if (idle === undefined || this.#timer !== null) return;
    let seen = idle.answered();
    this.#timer = setInterval(() => {
      if (this.#remaining.size === 0) {
        clearInterval(this.#timer!);
        this.#timer = null;
        return;
      }
      const answered = idle.answered();
      const wasIdle = answered === seen && idle.inFlight() === 0;
      seen = answered;
      const now = performance.now();
      const since = now - this.#last;
      if (since < this.#gap) return;
      if (!wasIdle && since < idle.forceAfterMs) {
        if (idle.startMarking !== undefined && now >= this.#markAt) {
          idle.startMarking();
          this.#markAt = now + this.#markGap;
          this.#markGap = Math.min(2 * this.#markGap, MAX_COLLECTION_GAP_MS);
        }
        return;
      }
      idle.collect();
      this.#last = performance.now();
      seen = idle.answered();
      this.#gap = Math.min(Math.max(2 * this.#gap, 2 * IDLE_CHECK_MS), MAX_COLLECTION_GAP_MS);
      this.#markAt = this.#last;
      this.#markGap = IDLE_CHECK_MS;
    }, IDLE_CHECK_MS).unref();
  }
}
