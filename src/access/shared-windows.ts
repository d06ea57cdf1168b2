import { FixedWindows, type Windows, type WindowState } from './fixed-windows.js';

/**
 * Fixed windows in shared memory: the serving threads of one process count
 * a key's requests against one quota, and each still decides at once,
 * inside the request handler.
 *
 * Deciding at once matters beyond speed. uWebSockets.js cannot hold a
 * pipelined request while an earlier answer on the same connection is
 * pending: it aborts the pending one and reads nothing further, so a
 * quota asked of another thread by message lost every pipelined request.
 *
 * The table is one SharedArrayBuffer of SLOTS slots, found by hashing
 * "namespace, key id" (open addressing, claimed with compare-and-swap and
 * never freed: API keys are few and their ids are not reused). A slot holds
 * a tag (a second hash of the name, never 0), a lock word, the count and,
 * in a Float64Array over the same buffer, the time the window ends. The
 * lock guards a handful of loads and stores, so a thread waiting on it
 * spins instead of sleeping.
 *
 * Two names share a slot only when their tags are equal and one's probe
 * reaches the other's slot, about one chance in a million among a few
 * thousand keys; they would then share one window. When every slot is
 * taken, which needs thousands of keys, further names fall back to windows
 * of their own thread.
 */
export class SharedWindowTable {
  /** Slots in a table; each key with traffic takes two (its burst and sustained windows). */
  static readonly SLOTS = 16_384;
  readonly buffer: SharedArrayBuffer;
  readonly #words: Int32Array;
  readonly #endsAt: Float64Array;
  readonly #mask: number;

  /** A new table, or a view of `buffer` made by another thread's table. */
  constructor(buffer?: SharedArrayBuffer) {
    const slots = SharedWindowTable.SLOTS;
    const bytes = slots * WORDS * 4 + slots * 8;
    if (buffer !== undefined && buffer.byteLength !== bytes) {
      throw new RangeError(`a shared window table is ${bytes} bytes, got ${buffer.byteLength}`);
    }
    this.buffer = buffer ?? new SharedArrayBuffer(bytes);
    this.#words = new Int32Array(this.buffer, 0, slots * WORDS);
    this.#endsAt = new Float64Array(this.buffer, slots * WORDS * 4, slots);
    this.#mask = slots - 1;
  }

  /** The slot of `name`, claimed if new; -1 when the table is full. */
  slotOf(name: string): number {
    const home = fnv1a(name, FNV_OFFSET);
    const tag = fnv1a(name, SECOND_OFFSET) | 1;
    const words = this.#words;
    for (let probe = 0, slot = home & this.#mask; probe <= this.#mask; probe++, slot = (slot + 1) & this.#mask) {
      const at = slot * WORDS + TAG;
      let current = Atomics.load(words, at);
      if (current === 0) {
        // Claim the empty slot, unless another thread has just claimed it (for this name or another).
        const before = Atomics.compareExchange(words, at, 0, tag);
        current = before === 0 ? tag : before;
      }
      if (current === tag) return slot;
    }
    return -1;
  }

  /** Count one request in `slot` at `now`; see FixedWindows.consume. */
  consume(slot: number, points: number, durationMs: number, now: number): { readonly rejected: boolean; readonly state: WindowState } {
    const words = this.#words;
    const base = slot * WORDS;
    this.#lock(base);
    let endsAt = this.#endsAt[slot]!;
    let consumed = words[base + COUNT]!;
    if (endsAt <= now) {
      endsAt = now + durationMs;
      consumed = 0;
      this.#endsAt[slot] = endsAt;
    }
    // Saturates far above any limit: a flood must not wrap the count into the admitted range.
    if (consumed < 0x7fffffff) consumed++;
    words[base + COUNT] = consumed;
    Atomics.store(words, base + LOCK, 0);
    return { rejected: consumed > points, state: windowState(points, consumed, endsAt, now) };
  }

  /** The open window of `slot` without counting, or null; see FixedWindows.get. */
  get(slot: number, points: number, now: number): WindowState | null {
    const base = slot * WORDS;
    this.#lock(base);
    const endsAt = this.#endsAt[slot]!;
    const consumed = this.#words[base + COUNT]!;
    Atomics.store(this.#words, base + LOCK, 0);
    return endsAt <= now ? null : windowState(points, consumed, endsAt, now);
  }

  #lock(base: number): void {
    while (Atomics.compareExchange(this.#words, base + LOCK, 0, 1) !== 0) {
      // Held by another thread for a few instructions (or until the kernel runs it again).
    }
  }
}

/**
 * The windows of one limit (one plan's burst or sustained window) in a
 * shared table, keyed by `namespace` and key id: FixedWindows' arithmetic.
 */
export class SharedFixedWindows implements Windows {
  readonly points: number;
  readonly #durationMs: number;
  readonly #table: SharedWindowTable;
  readonly #namespace: string;
  /** Slot per key id, so a request hashes nothing; -1 for ids that fell back to #overflow. */
  readonly #slots = new Map<string, number>();
  readonly #overflow: FixedWindows;

  constructor(table: SharedWindowTable, namespace: string, points: number, durationSeconds: number) {
    this.#overflow = new FixedWindows(points, durationSeconds);
    this.points = points;
    this.#durationMs = durationSeconds * 1000;
    this.#table = table;
    this.#namespace = namespace;
  }

  consume(id: string, now: number): { readonly rejected: boolean; readonly state: WindowState } {
    const slot = this.#slot(id);
    return slot < 0 ? this.#overflow.consume(id, now) : this.#table.consume(slot, this.points, this.#durationMs, now);
  }

  get(id: string, now: number): WindowState | null {
    const slot = this.#slot(id);
    return slot < 0 ? this.#overflow.get(id, now) : this.#table.get(slot, this.points, now);
  }

  #slot(id: string): number {
    let slot = this.#slots.get(id);
    if (slot === undefined) {
      slot = this.#table.slotOf(`${this.#namespace}\u0000${id}`);
      this.#slots.set(id, slot);
    }
    return slot;
  }
}

/** Int32 words per slot: tag, lock, count, and one to keep slots 16 bytes. */
const WORDS = 4;
const TAG = 0;
const LOCK = 1;
const COUNT = 2;

const FNV_OFFSET = 0x811c9dc5;
const SECOND_OFFSET = 0x2545f491;

/** 32-bit FNV-1a over UTF-16 code units, from `offset`. */
function fnv1a(text: string, offset: number): number {
  let h = offset;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

function windowState(points: number, consumed: number, endsAt: number, now: number): WindowState {
  return { consumedPoints: consumed, remainingPoints: Math.max(0, points - consumed), msBeforeNext: endsAt - now };
}
