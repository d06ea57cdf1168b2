import type { Delivery, PreviousSecret, StoredEvent, WatchEvent, WatchedState, Watchlist } from './watchlist.js';

/**
 * Where watchlists, their VPAs with the state each was last screened in,
 * and the outbox of events live. The embedded server keeps them in its data
 * directory (FileWatchStore).
 */
export interface WatchStore {
  create(watchlist: Watchlist): Promise<void>;
  /** The watchlist if it exists and belongs to `owner`. */
  find(owner: string, id: string): Watchlist | null;
  /** The watchlists of `owner`, or of every key when null. */
  list(owner: string | null): Watchlist[];
  /** A watchlist whoever owns it (the admin API). */
  get(id: string): Watchlist | null;
  vpaCount(id: string): number;
  /** Delete a watchlist with its VPAs and its events not yet delivered. */
  remove(id: string): Promise<void>;
  /**
   * A new signing secret in place of `replaces` (nothing changes when
   * another rotation replaced that first); `previous`, when given, signs
   * beside it until its time.
   */
  setSecret(id: string, secret: string, replaces: string, previous?: PreviousSecret): Promise<void>;
  /**
   * Watch VPAs, each with its verdict now (already watched ones change
   * nothing); null, with nothing added, when the watchlist would then hold
   * more than `room`.
   */
  addVpas(id: string, entries: readonly (readonly [string, WatchedState])[], room?: number): Promise<{ added: number; total: number } | null>;
  removeVpas(id: string, upis: readonly string[]): Promise<{ removed: number; total: number }>;
  /** Watched VPAs in VPA order after `cursor` (exclusive), at most `limit`. */
  pageVpas(id: string, cursor: string | null, limit: number): { upis: string[]; next: string | null };
  /** Every watchlist with its watched VPAs and their last states, for a screening pass (live maps: read, do not change). */
  watched(): Iterable<{ watchlist: Watchlist; states: ReadonlyMap<string, WatchedState> }>;
  /** Record the outcome of a screening pass: new states, and the events they made, together. */
  screened(changes: readonly { readonly watchlistId: string; readonly upi: string; readonly state: WatchedState }[], events: readonly WatchEvent[]): Promise<void>;
  /** Events due for an attempt: the oldest pending one of each watchlist and VPA, if its time has come; at most `perWatchlist` of a watchlist. */
  due(now: number, limit: number, perWatchlist?: number): StoredEvent[];
  /** Record an attempt and what comes of the event. */
  attempted(eventId: string, delivery: Delivery): Promise<void>;
  /** A watchlist's events, newest first, before `cursor` (an event id, exclusive). */
  events(watchlistId: string, cursor: string | null, limit: number): { events: StoredEvent[]; next: string | null };
  findEvent(watchlistId: string, eventId: string): StoredEvent | null;
  /** The earliest time an event that may go next (the oldest pending one of its watchlist and VPA) is due, or null with none pending. */
  nextDue(): number | null;
  /** Read what other replicas wrote up to now (a journal in the fleet's store); nothing to do for a data directory. */
  sync(): Promise<void>;
  close(): Promise<void>;
}
