/**
 * Fixed windows per key id, in this process: the arithmetic of
 * rate-limiter-flexible's RateLimiterMemory (a window opens with the first
 * request and lasts `duration`; every request counts, refused ones too),
 * answered synchronously. A key's quota is checked on every request, and
 * the library's promise per check was a measurable share of a lookup.
 * Memory is one entry per key id, and API keys are few.
 */
export interface WindowState {
  /** Requests counted in the current window, this one included. */
  readonly consumedPoints: number;
  readonly remainingPoints: number;
  /** Until the window closes. */
  readonly msBeforeNext: number;
}

/** Fixed windows of one limit, per key id: here per thread, or shared by threads (shared-windows.ts). */
export interface Windows {
  readonly points: number;
  /** Count one request of `id` at `now` (epoch ms); rejected once the window holds more than `points`. */
  consume(id: string, now: number): { readonly rejected: boolean; readonly state: WindowState };
  /** The open window of `id` without counting, or null when none is open. */
  get(id: string, now: number): WindowState | null;
}

interface Window {
  endsAt: number;
  consumed: number;
}

export class FixedWindows implements Windows {
  readonly points: number;
  readonly #durationMs: number;
  readonly #windows = new Map<string, Window>();

  constructor(points: number, durationSeconds: number) {
    if (!Number.isSafeInteger(points) || points < 1) throw new RangeError(`points must be a positive integer, got ${points}`);
    if (!(durationSeconds > 0)) throw new RangeError(`duration must be positive, got ${durationSeconds}`);
    this.points = points;
    this.#durationMs = durationSeconds * 1000;
  }

  /** Count one request of `id` at `now` (epoch ms); rejected once the window holds more than `points`. */
  consume(id: string, now: number): { readonly rejected: boolean; readonly state: WindowState } {
    let window = this.#windows.get(id);
    if (window === undefined) {
      window = { endsAt: now + this.#durationMs, consumed: 0 };
      this.#windows.set(id, window);
    } else if (window.endsAt <= now) {
      window.endsAt = now + this.#durationMs;
      window.consumed = 0;
    }
    window.consumed++;
    return { rejected: window.consumed > this.points, state: this.#state(window, now) };
  }

  /** The open window of `id` without counting, or null when none is open. */
  get(id: string, now: number): WindowState | null {
    const window = this.#windows.get(id);
    return window === undefined || window.endsAt <= now ? null : this.#state(window, now);
  }

  #state(window: Window, now: number): WindowState {
    return { consumedPoints: window.consumed, remainingPoints: Math.max(0, this.points - window.consumed), msBeforeNext: window.endsAt - now };
  }
}
