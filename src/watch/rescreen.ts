import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from '../common/logger.js';
import type { ServedData } from '../service/served-data.js';
import type { WatchStore } from './watch-store.js';
import { changedEnough, itemOf, newEventId, passesFilters, sameState, stateOf, type WatchEvent, type WatchedState } from './watchlist.js';

/** Watched VPAs screened between two turns of the main thread's event loop. */
export const SCREEN_SLICE = 2_000;

export interface PassReport {
  readonly watched: number;
  readonly changed: number;
  readonly events: number;
  readonly ms: number;
  readonly dataVersion: string;
}

/**
 * Screens every watched VPA again whenever what is served changes (a delta
 * applied, a snapshot swapped), in slices so the main thread keeps
 * answering between them, and records the new states with the events they
 * make in one durable step. Passes never overlap: a change during a pass
 * makes one more pass after it.
 */
export class Rescreener {
  readonly #store: WatchStore;
  readonly #served: ServedData;
  readonly #logger: Logger;
  readonly #onEvents: () => void;
  readonly #ownerActive: (keyId: string) => boolean;
  #running: Promise<void> | null = null;
  #again = false;
  #closed = false;
  #last: PassReport | null = null;
  readonly #listeners: ((report: PassReport) => void)[] = [];
  /** Stop hearing of what is served (from start()). */
  #unsubscribe: (() => void)[] = [];

  constructor(store: WatchStore, served: ServedData, options: { logger: Logger; onEvents: () => void; ownerActive?: (keyId: string) => boolean }) {
    this.#store = store;
    this.#served = served;
    this.#logger = options.logger;
    this.#onEvents = options.onEvents;
    this.#ownerActive = options.ownerActive ?? (() => true);
  }

  /** Screen now (what changed while the server was down), and after every change from now on. */
  start(): void {
    // schedule() never rejects: a failed pass is caught and logged in it.
    this.#unsubscribe = [this.#served.onDelta(() => void this.schedule()), this.#served.onSwap(() => void this.schedule())];
    void this.schedule();
  }

  get lastPass(): PassReport | null {
    return this.#last;
  }

  onPass(listener: (report: PassReport) => void): void {
    this.#listeners.push(listener);
  }

  /** Run a pass, or one more after the running one; resolves when the pass that covers this call has ended. */
  schedule(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#running !== null) {
      this.#again = true;
      return this.#running.then(() => this.#running ?? undefined);
    }
    this.#running = this.#pass()
      .catch((error: Error) => this.#logger.error({ err: error.message }, 'watchlist screening failed; the next change screens again'))
      .finally(() => {
        this.#running = null;
        if (this.#again && !this.#closed) {
          this.#again = false;
          void this.schedule();
        }
      });
    return this.#running;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const stop of this.#unsubscribe) stop();
    this.#unsubscribe = [];
    await this.#running;
  }

  async #pass(): Promise<void> {
    // Screened against the journal as others last wrote it (a fleet's previous lease holder): from
    // states out of date, a change already made would be made again, as an event of another id.
    await this.#store.sync();
    const started = performance.now();
    const view = this.#served.view;
    const now = Date.now();
    const occurredAt = new Date(now).toISOString();
    const changes: { watchlistId: string; upi: string; state: WatchedState }[] = [];
    const events: WatchEvent[] = [];
    let watched = 0;
    let sinceTurn = 0;
    for (const { watchlist, states } of this.#store.watched()) {
      // A revoked key's watchlists tell nobody anything more.
      if (!this.#ownerActive(watchlist.owner)) continue;
      for (const [upi, before] of states) {
        const after = view.batchItem(upi);
        const state = stateOf(after);
        watched++;
        if (!sameState(before, state)) {
          changes.push({ watchlistId: watchlist.id, upi, state });
          if (changedEnough(before, state) && passesFilters(watchlist.filters, after)) {
            events.push({
              id: newEventId(now),
              type: 'vpa.changed',
              watchlist_id: watchlist.id,
              upi,
              before: itemOf(upi, before),
              after,
              data_version: view.version,
              occurred_at: occurredAt,
            });
          }
        }
        if (++sinceTurn === SCREEN_SLICE) {
          sinceTurn = 0;
          await nextTurn();
          if (this.#closed) return;
        }
      }
    }
    await this.#store.screened(changes, events);
    const report: PassReport = { watched, changed: changes.length, events: events.length, ms: Math.round(performance.now() - started), dataVersion: view.version };
    this.#last = report;
    if (events.length > 0) {
      this.#logger.info({ ...report }, 'watched VPAs changed');
      this.#onEvents();
    }
    for (const listener of this.#listeners) listener(report);
  }
}
