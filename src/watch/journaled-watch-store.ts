import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { AdminStateError } from '../common/errors.js';
import { KEPT_ATTEMPTS, type Delivery, type PreviousSecret, type StoredEvent, type WatchEvent, type WatchedState, type Watchlist } from './watchlist.js';
import type { WatchStore } from './watch-store.js';
import { DeliveryQueue } from './delivery-queue.js';
import { RISK_CATEGORIES } from '../vpa/categories.js';
import { EventOrder } from './event-order.js';

/**
 * Watchlists held in memory and changed only by journal lines, applied in
 * order: the data directory's journal file (FileWatchStore) or the fleet
 * store's journal table (PostgresWatchStore). Every replica that applies
 * the same lines holds the same watchlists.
 *
 * Journal lines, each a JSON object with `op`:
 *   watchlist {w}        a new watchlist
 *   remove {id}          a watchlist deleted
 *   secret {id, secret, previous?, replaces?}  a new signing secret, the previous one kept until a time;
 *                        with `replaces`, only over the secret of that digest (secretDigest)
 *   add {id, e: [[upi, state]]}   VPAs watched, with their state
 *   drop {id, upis}      VPAs no longer watched
 *   screened {c: [[id, upi, state]], events: [event]}   a screening pass
 *   attempted {id, d}    an event's delivery after an attempt
 *   reset {}             start afresh: the lines that follow make the whole state
 */
export type JournalLine =
  | { op: 'watchlist'; w: Watchlist }
  | { op: 'remove'; id: string }
  | { op: 'secret'; id: string; secret: string; previous?: PreviousSecret; replaces?: string }
  | { op: 'add'; id: string; e: [string, WatchedState][] }
  | { op: 'drop'; id: string; upis: string[] }
  | { op: 'screened'; c: [string, string, WatchedState][]; events: WatchEvent[] }
  | { op: 'attempted'; id: string; d: Delivery }
  /** `rows`: how many rows the image that follows has, this one included. */
  | { op: 'reset'; rows?: number };

/** Changes (with their events) per journal line of a screening pass. */
const SCREENED_LINE = 1000;
/** Finished (delivered or failed) events kept per watchlist, for GET .../events. */
export const KEPT_FINISHED_EVENTS = 1000;
interface ListState {
  watchlist: Watchlist;
  states: Map<string, WatchedState>;
  /** Events by id (ids sort by time). */
  events: Map<string, StoredEvent>;
  /** The ids of `events` in id order, for paging. */
  order: EventOrder;
  /** How many of `events` are delivered or failed. */
  finished: number;
}

export abstract class JournaledWatchStore implements WatchStore {
  readonly #lists = new Map<string, ListState>();
  /** Pending events by id: the outbox. */
  readonly #pending = new Map<string, { listId: string; stored: StoredEvent }>();
  /** The pending events in the order they may be attempted. */
  readonly #queue = new DeliveryQueue();

  /** Make a line durable and applied, in journal order. */
  protected abstract commit(line: JournalLine): Promise<void>;

  /**
   * Bring the state up to date before a change that depends on it (which
   * VPAs are watched): a journal others write to is read up to now first.
   */
  protected async beforeChange(): Promise<void> {}

  sync(): Promise<void> {
    return this.beforeChange();
  }
  abstract close(): Promise<void>;

  /** Apply a journal line to memory; throws what `fail` makes on a line this store did not write. */
  protected apply(line: JournalLine, fail: (why: string) => Error = (why) => new AdminStateError(why)): void {
    checkLine(line, fail);
    switch (line.op) {
      case 'watchlist': {
        const w = line.w;
        // Ids are random: a second line with one is not this store's (a replayed or damaged journal), and must not wipe the first.
        if (this.#lists.has(w.id)) throw fail(`watchlist ${w.id} created twice`);
        this.#lists.set(w.id, { watchlist: w, states: new Map(), events: new Map(), order: new EventOrder(), finished: 0 });
        return;
      }
      case 'remove': {
        const list = this.#lists.get(line.id);
        if (list === undefined) return;
        for (const stored of list.events.values()) {
          this.#pending.delete(stored.event.id);
          this.#queue.delete(deliveryLine(line.id, stored.event.upi), stored.event.id);
        }
        this.#lists.delete(line.id);
        return;
      }
      case 'secret': {
        const list = this.#list(line.id, fail);
        // A rotation written over a secret that another, written first, had already replaced: it lost, and changes nothing.
        if (line.replaces !== undefined && line.replaces !== secretDigest(list.watchlist.secret)) return;
        const { previous: _replaced, ...watchlist } = list.watchlist;
        list.watchlist = line.previous === undefined ? { ...watchlist, secret: line.secret } : { ...watchlist, secret: line.secret, previous: line.previous };
        return;
      }
      case 'add': {
        const list = this.#list(line.id, fail);
        for (const [upi, state] of line.e) if (!list.states.has(upi)) list.states.set(upi, checkState(state, fail));
        return;
      }
      case 'drop': {
        const list = this.#list(line.id, fail);
        for (const upi of line.upis) list.states.delete(upi);
        return;
      }
      case 'screened':
        for (const [id, upi, state] of line.c) {
          const list = this.#lists.get(id);
          if (list?.states.has(upi)) list.states.set(upi, checkState(state, fail));
        }
        for (const event of line.events) {
          const list = this.#lists.get(event.watchlist_id);
          if (list === undefined) continue;
          this.#putEvent(list, { event, delivery: { state: 'pending', attempts: [], nextAttemptAt: Date.parse(event.occurred_at) } });
        }
        return;
      case 'attempted': {
        const pending = this.#pending.get(line.id);
        const list = pending === undefined ? this.#findEventList(line.id) : this.#lists.get(pending.listId);
        const current = list?.events.get(line.id);
        if (list === undefined || current === undefined) return;
        this.#putEvent(list, { event: current.event, delivery: line.d });
        return;
      }
      case 'reset':
        this.#lists.clear();
        this.#pending.clear();
        this.#queue.clear();
        return;
      default:
        throw fail(`unknown op ${JSON.stringify((line as { op: unknown }).op)}`);
    }
  }

  #list(id: string, fail: (why: string) => Error): ListState {
    const list = this.#lists.get(id);
    if (list === undefined) throw fail(`no watchlist ${id}`);
    return list;
  }

  #findEventList(eventId: string): ListState | undefined {
    for (const list of this.#lists.values()) if (list.events.has(eventId)) return list;
    return undefined;
  }

  /** Store an event with its delivery state: in the outbox while pending, among the finished ones after. */
  #putEvent(list: ListState, stored: StoredEvent): void {
    const id = stored.event.id;
    const line = deliveryLine(list.watchlist.id, stored.event.upi);
    const before = list.events.get(id);
    if (before === undefined) list.order.add(id);
    else if (before.delivery.state !== 'pending') list.finished--;
    list.events.set(id, stored);
    if (stored.delivery.state === 'pending') {
      this.#pending.set(id, { listId: list.watchlist.id, stored });
      this.#queue.set(line, stored);
      return;
    }
    list.finished++;
    this.#pending.delete(id);
    this.#queue.delete(line, id);
    this.#trimFinished(list);
  }

  /** Keep the newest KEPT_FINISHED_EVENTS finished events of a watchlist (the oldest come first in `events`). */
  #trimFinished(list: ListState): void {
    if (list.finished <= KEPT_FINISHED_EVENTS) return;
    for (const [id, stored] of list.events) {
      if (list.finished <= KEPT_FINISHED_EVENTS) break;
      if (stored.delivery.state === 'pending') continue;
      list.events.delete(id);
      list.order.drop();
      list.finished--;
    }
  }

  /** The lines that make the present state from nothing (after a `reset`). */
  protected image(): JournalLine[] {
    const lines: JournalLine[] = [];
    const now = Date.now();
    for (const list of this.#lists.values()) {
      // A previous secret past its time signs nothing: it is not carried on.
      const { previous, ...current } = list.watchlist;
      lines.push({ op: 'watchlist', w: previous !== undefined && previous.until > now ? list.watchlist : current });
      let chunk: [string, WatchedState][] = [];
      for (const entry of list.states) {
        chunk.push(entry);
        if (chunk.length === 1000) {
          lines.push({ op: 'add', id: list.watchlist.id, e: chunk });
          chunk = [];
        }
      }
      if (chunk.length > 0) lines.push({ op: 'add', id: list.watchlist.id, e: chunk });
      const events = [...list.events.values()];
      if (events.length > 0) lines.push({ op: 'screened', c: [], events: events.map((s) => s.event) });
      // Every delivery but the one `screened` makes (a redelivery not yet attempted included).
      for (const s of events) if (!isFirstDelivery(s)) lines.push({ op: 'attempted', id: s.event.id, d: s.delivery });
    }
    return lines;
  }

  create(watchlist: Watchlist): Promise<void> {
    return this.commit({ op: 'watchlist', w: watchlist });
  }

  find(owner: string, id: string): Watchlist | null {
    const list = this.#lists.get(id);
    return list !== undefined && list.watchlist.owner === owner ? list.watchlist : null;
  }

  list(owner: string | null): Watchlist[] {
    return [...this.#lists.values()].filter((l) => owner === null || l.watchlist.owner === owner).map((l) => l.watchlist);
  }

  get(id: string): Watchlist | null {
    return this.#lists.get(id)?.watchlist ?? null;
  }

  vpaCount(id: string): number {
    return this.#lists.get(id)?.states.size ?? 0;
  }

  remove(id: string): Promise<void> {
    return this.commit({ op: 'remove', id });
  }

  async setSecret(id: string, secret: string, replaces: string, previous?: PreviousSecret): Promise<void> {
    const line = { op: 'secret', id, secret, replaces: secretDigest(replaces) } as const;
    await this.commit(previous === undefined ? line : { ...line, previous });
  }

  async addVpas(id: string, entries: readonly (readonly [string, WatchedState])[], room = Infinity): Promise<{ added: number; total: number } | null> {
    await this.beforeChange();
    const list = this.#list(id, (why) => new AdminStateError(why));
    const fresh = new Map(entries.filter(([upi]) => !list.states.has(upi)));
    if (list.states.size + fresh.size > room) return null;
    if (fresh.size > 0) await this.commit({ op: 'add', id, e: [...fresh] });
    return { added: fresh.size, total: list.states.size };
  }

  async removeVpas(id: string, upis: readonly string[]): Promise<{ removed: number; total: number }> {
    await this.beforeChange();
    const list = this.#list(id, (why) => new AdminStateError(why));
    const watched = [...new Set(upis)].filter((upi) => list.states.has(upi));
    if (watched.length > 0) await this.commit({ op: 'drop', id, upis: watched });
    return { removed: watched.length, total: list.states.size };
  }

  pageVpas(id: string, cursor: string | null, limit: number): { upis: string[]; next: string | null } {
    const list = this.#lists.get(id);
    if (list === undefined) return { upis: [], next: null };
    // Sorted on each call: pages are asked for rarely, and the set changes between them.
    const sorted = [...list.states.keys()].filter((upi) => cursor === null || upi > cursor).sort();
    const upis = sorted.slice(0, limit);
    return { upis, next: sorted.length > limit ? upis.at(-1)! : null };
  }

  *watched(): Iterable<{ watchlist: Watchlist; states: ReadonlyMap<string, WatchedState> }> {
    for (const list of this.#lists.values()) yield { watchlist: list.watchlist, states: list.states };
  }

  /**
   * Written as lines of at most SCREENED_LINE changes, each with the events
   * of its VPAs, the main thread yielding between them: a crash that cuts
   * the last lines off leaves their VPAs in their old state, and the next
   * pass makes their events again.
   */
  async screened(changes: readonly { readonly watchlistId: string; readonly upi: string; readonly state: WatchedState }[], events: readonly WatchEvent[]): Promise<void> {
    if (changes.length === 0 && events.length === 0) return;
    const eventsOf = new Map<string, WatchEvent[]>();
    for (const event of events) {
      const key = `${event.watchlist_id}\n${event.upi}`;
      eventsOf.set(key, [...(eventsOf.get(key) ?? []), event]);
    }
    const written: Promise<void>[] = [];
    for (let i = 0; i < Math.max(1, changes.length); i += SCREENED_LINE) {
      const group = changes.slice(i, i + SCREENED_LINE);
      const groupEvents = group.flatMap((c) => {
        const key = `${c.watchlistId}\n${c.upi}`;
        const of = eventsOf.get(key) ?? [];
        eventsOf.delete(key);
        return of;
      });
      // Events of no change listed (none in a pass) go with the last line.
      if (i + SCREENED_LINE >= changes.length) for (const rest of eventsOf.values()) groupEvents.push(...rest);
      written.push(this.commit({ op: 'screened', c: group.map((c) => [c.watchlistId, c.upi, c.state]), events: groupEvents }));
      await nextTurn();
    }
    await Promise.all(written);
  }

  due(now: number, limit: number, perWatchlist?: number): StoredEvent[] {
    return this.#queue.due(now, limit, perWatchlist);
  }

  nextDue(): number | null {
    return this.#queue.nextDue();
  }

  attempted(eventId: string, delivery: Delivery): Promise<void> {
    return this.commit({ op: 'attempted', id: eventId, d: { ...delivery, attempts: delivery.attempts.slice(-KEPT_ATTEMPTS) } });
  }

  events(watchlistId: string, cursor: string | null, limit: number): { events: StoredEvent[]; next: string | null } {
    const list = this.#lists.get(watchlistId);
    if (list === undefined) return { events: [], next: null };
    const { ids, more } = list.order.page(cursor, limit, (id) => list.events.has(id));
    return { events: ids.map((id) => list.events.get(id)!), next: more ? ids.at(-1)! : null };
  }

  findEvent(watchlistId: string, eventId: string): StoredEvent | null {
    return this.#lists.get(watchlistId)?.events.get(eventId) ?? null;
  }

}

/** What a `secret` line names the secret it replaces by: not the secret itself, which the line need not hold twice. */
function secretDigest(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 32);
}

/** Whether an event's delivery is the one a `screened` line gives it: pending, never attempted, due at the event. */
function isFirstDelivery(s: StoredEvent): boolean {
  const d = s.delivery;
  return d.state === 'pending' && d.attempts.length === 0 && d.since === undefined && d.nextAttemptAt === Date.parse(s.event.occurred_at);
}

/** Events of one watchlist and VPA are delivered in order, one after another. */
function deliveryLine(watchlistId: string, upi: string): string {
  return `${watchlistId}\n${upi}`;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Check a journal line's shape before it is applied (a file or a database row is an input like any other); throws what `fail` makes. */
function checkLine(line: JournalLine, fail: (why: string) => Error): void {
  if (!isObject(line)) throw fail('not an object');
  const l = line as unknown as Record<string, unknown>;
  switch (line.op) {
    case 'watchlist': {
      const w = l.w;
      if (!isObject(w) || !['id', 'owner', 'name', 'webhook_url', 'secret', 'created_at'].every((k) => isString(w[k])) || !isFilters(w.filters) || !isPrevious(w.previous)) throw fail('not a watchlist');
      return;
    }
    case 'remove':
      if (!isString(l.id)) throw fail('remove without a watchlist id');
      return;
    case 'secret':
      if (!isString(l.id) || !isString(l.secret) || !isPrevious(l.previous) || !(l.replaces === undefined || isString(l.replaces))) throw fail('secret without a watchlist id and secret');
      return;
    case 'add':
      if (!isString(l.id) || !Array.isArray(l.e) || !l.e.every((e) => Array.isArray(e) && e.length === 2 && isString(e[0]))) throw fail('add without [upi, state] entries');
      return;
    case 'drop':
      if (!isString(l.id) || !Array.isArray(l.upis) || !l.upis.every(isString)) throw fail('drop without VPAs');
      return;
    case 'screened':
      if (!Array.isArray(l.c) || !l.c.every((c) => Array.isArray(c) && c.length === 3 && isString(c[0]) && isString(c[1]))) throw fail('screened without [watchlist, upi, state] changes');
      if (
        !Array.isArray(l.events) ||
        !l.events.every((e) => isObject(e) && ['id', 'watchlist_id', 'upi', 'data_version'].every((k) => isString(e[k])) && isObject(e.before) && isObject(e.after) && isString(e.occurred_at) && !Number.isNaN(Date.parse(e.occurred_at)))
      ) {
        throw fail('screened with an event that is not one');
      }
      return;
    case 'attempted': {
      const d = l.d;
      if (!isString(l.id) || !isDelivery(d)) throw fail('attempted without a delivery');
      return;
    }
    case 'reset':
      return;
    default:
      throw fail(`unknown op ${JSON.stringify(l.op)}`);
  }
}

function isFilters(value: unknown): boolean {
  if (!isObject(value)) return false;
  const { statuses, risk_categories: categories } = value;
  if (statuses !== undefined && !(Array.isArray(statuses) && statuses.every((s) => s === 'FLAGGED' || s === 'CLEARED'))) return false;
  return categories === undefined || (Array.isArray(categories) && categories.every((c) => (RISK_CATEGORIES as readonly unknown[]).includes(c)));
}

const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isPrevious = (value: unknown): boolean => value === undefined || (isObject(value) && isString(value.secret) && isTime(value.until));

/** A delivery as `attempted` writes it: a pending one with the time of its next attempt, a finished one with none. */
function isDelivery(value: unknown): boolean {
  if (!isObject(value) || !Array.isArray(value.attempts) || value.attempts.length > KEPT_ATTEMPTS) return false;
  const attemptsOk = value.attempts.every(
    (a) =>
      isObject(a) &&
      isString(a.at) &&
      !Number.isNaN(Date.parse(a.at)) &&
      // Any three digits: Node's client takes any status a receiver sends (999, 000).
      (a.status === null || (Number.isInteger(a.status) && (a.status as number) >= 0 && (a.status as number) <= 999)) &&
      (a.error === null || isString(a.error)) &&
      isTime(a.duration_ms),
  );
  if (!attemptsOk || !(value.since === undefined || isTime(value.since))) return false;
  if (value.state === 'pending') return isTime(value.nextAttemptAt);
  return (value.state === 'delivered' || value.state === 'failed') && value.nextAttemptAt === null;
}

export function checkState(state: unknown, fail: (why: string) => Error): WatchedState {
  if (!Array.isArray(state) || state.length !== 6 || !state.every((n) => Number.isSafeInteger(n))) throw fail('a watched state is not six integers');
  return state as unknown as WatchedState;
}
