/**
 * Cancellation helpers: whatever the injected `fetch` and `sleep` do, a
 * fired signal ends the wait at once.
 */
import { AbortError } from './errors.js';

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new AbortError('the call was aborted', { cause: signal.reason });
}

/** `work`, or an AbortError as soon as `signal` fires, whichever comes first. */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  throwIfAborted(signal);
  let onAbort: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new AbortError('the call was aborted', { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([work, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/** A controller that aborts when `parent` does; `release` stops following it. */
export function childController(parent: AbortSignal | undefined): { controller: AbortController; release: () => void } {
  const controller = new AbortController();
  if (parent === undefined) return { controller, release: () => {} };
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { controller, release: () => {} };
  }
  const follow = () => controller.abort(parent.reason);
  parent.addEventListener('abort', follow, { once: true });
  return { controller, release: () => parent.removeEventListener('abort', follow) };
}

/** setTimeout as a promise that settles early when `signal` fires. */
export const timerSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
