import { open, readFile, rename, stat, mkdir } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { dirname, join } from 'node:path';
import type { DataDir } from '../common/data-dir.js';
import { AdminStateError } from '../common/errors.js';
import { tempFileName } from '../common/atomic-file.js';
import { KEPT_ATTEMPTS, type Delivery, type StoredEvent, type WatchEvent, type WatchedState, type Watchlist } from './watchlist.js';
import type { WatchStore } from './watch-store.js';

/**
 * Watchlists of a data directory: held in memory, and kept durable by a
 * journal (`watch/journal.ndjson`) of every change, appended and fsynced
 * before the change is acknowledged, and replayed at start. Appends made
 * together share one write and one fsync. When the journal has grown well
 * past what it describes, it is rewritten as the few lines that make the
 * present state (temporary file, fsync, rename).
 *
 * Journal lines, each a JSON object with `op`:
 *   watchlist {w}        a new watchlist
 *   remove {id}          a watchlist deleted
 *   secret {id, secret}  a new signing secret
 *   add {id, e: [[upi, state]]}   VPAs watched, with their state
 *   drop {id, upis}      VPAs no longer watched
 *   screened {c: [[id, upi, state]], events: [event]}   a screening pass
 *   attempted {id, d}    an event's delivery after an attempt
 */
type JournalLine =
  | { op: 'watchlist'; w: Watchlist }
  | { op: 'remove'; id: string }
  | { op: 'secret'; id: string; secret: string }
  | { op: 'add'; id: string; e: [string, WatchedState][] }
  | { op: 'drop'; id: string; upis: string[] }
  | { op: 'screened'; c: [string, string, WatchedState][]; events: WatchEvent[] }
  | { op: 'attempted'; id: string; d: Delivery };

/** Changes (with their events) per journal line of a screening pass. */
const SCREENED_LINE = 1000;
/** Finished (delivered or failed) events kept per watchlist, for GET .../events. */
export const KEPT_FINISHED_EVENTS = 1000;
/** Rewrite the journal once it is this many times the size of a fresh one (and at least MIN_COMPACT_BYTES). */
const COMPACT_FACTOR = 4;
const MIN_COMPACT_BYTES = 64 * 1024 * 1024;

export function watchJournalPath(dir: DataDir): string {
  return join(dir.root, 'watch', 'journal.ndjson');
}

interface ListState {
  watchlist: Watchlist;
  states: Map<string, WatchedState>;
  /** Events by id (ids sort by time). */
  events: Map<string, StoredEvent>;
}

export class FileWatchStore implements WatchStore {
  readonly #path: string;
  readonly #lists = new Map<string, ListState>();
  /** Pending events by id: the outbox. */
  readonly #pending = new Map<string, { listId: string; stored: StoredEvent }>();
  #bytes = 0;
  #freshBytes = 0;
  #queue: { line: string; done: () => void; failed: (error: Error) => void }[] = [];
  #flushing: Promise<void> | null = null;
  readonly #minCompactBytes: number;

  private constructor(path: string, minCompactBytes: number) {
    this.#path = path;
    this.#minCompactBytes = minCompactBytes;
  }

  /** `minCompactBytes`: the journal is never rewritten below this size. */
  static async open(path: string, minCompactBytes = MIN_COMPACT_BYTES): Promise<FileWatchStore> {
    const store = new FileWatchStore(path, minCompactBytes);
    let text = '';
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new AdminStateError(`cannot read the watchlist journal ${path}: ${(error as Error).message}`, { cause: error });
    }
    const lines = text.split('\n');
    // The piece after the last newline is empty, or a write a crash cut short.
    lines.pop();
    for (const [i, line] of lines.entries()) {
      let parsed: JournalLine;
      try {
        parsed = JSON.parse(line) as JournalLine;
      } catch {
        throw new AdminStateError(`watchlist journal ${path}, line ${i + 1}: not JSON`);
      }
      store.#apply(parsed, (why) => new AdminStateError(`watchlist journal ${path}, line ${i + 1}: ${why}`));
    }
    store.#bytes = Buffer.byteLength(text);
    store.#freshBytes = store.#bytes;
    return store;
  }

  /** Apply a journal line to memory; throws what `fail` makes on a line this store did not write. */
  #apply(line: JournalLine, fail: (why: string) => Error = (why) => new AdminStateError(why)): void {
    if (typeof line !== 'object' || line === null) throw fail('not an object');
    switch (line.op) {
      case 'watchlist': {
        const w = line.w;
        if (typeof w?.id !== 'string' || typeof w.owner !== 'string' || typeof w.secret !== 'string' || typeof w.webhook_url !== 'string') throw fail('not a watchlist');
        this.#lists.set(w.id, { watchlist: w, states: new Map(), events: new Map() });
        return;
      }
      case 'remove': {
        const list = this.#lists.get(line.id);
        if (list === undefined) return;
        for (const id of list.events.keys()) this.#pending.delete(id);
        this.#lists.delete(line.id);
        return;
      }
      case 'secret': {
        const list = this.#list(line.id, fail);
        list.watchlist = { ...list.watchlist, secret: line.secret };
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
          const stored: StoredEvent = { event, delivery: { state: 'pending', attempts: [], nextAttemptAt: Date.parse(event.occurred_at) } };
          list.events.set(event.id, stored);
          this.#pending.set(event.id, { listId: list.watchlist.id, stored });
        }
        return;
      case 'attempted': {
        const pending = this.#pending.get(line.id);
        const list = pending === undefined ? this.#findEventList(line.id) : this.#lists.get(pending.listId);
        const current = list?.events.get(line.id);
        if (list === undefined || current === undefined) return;
        const stored: StoredEvent = { event: current.event, delivery: line.d };
        list.events.set(line.id, stored);
        if (line.d.state === 'pending') this.#pending.set(line.id, { listId: list.watchlist.id, stored });
        else {
          this.#pending.delete(line.id);
          this.#trimFinished(list);
        }
        return;
      }
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

  /** Keep the newest KEPT_FINISHED_EVENTS finished events of a watchlist. */
  #trimFinished(list: ListState): void {
    let finished = 0;
    for (const stored of list.events.values()) if (stored.delivery.state !== 'pending') finished++;
    if (finished <= KEPT_FINISHED_EVENTS) return;
    for (const [id, stored] of list.events) {
      if (finished <= KEPT_FINISHED_EVENTS) break;
      if (stored.delivery.state === 'pending') continue;
      list.events.delete(id);
      finished--;
    }
  }

  /** Apply a change in memory and make it durable; resolves once it is on disk. */
  #commit(line: JournalLine): Promise<void> {
    this.#apply(line);
    return this.#append(JSON.stringify(line));
  }

  #append(line: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ line, done: resolve, failed: reject });
      if (this.#flushing === null) this.#flushing = this.#flush();
    });
  }

  async #flush(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        const text = batch.map((b) => `${b.line}\n`).join('');
        try {
          await mkdir(dirname(this.#path), { recursive: true });
          const handle = await open(this.#path, 'a', 0o600);
          try {
            await handle.write(text);
            await handle.sync();
          } finally {
            await handle.close();
          }
          this.#bytes += Buffer.byteLength(text);
          for (const b of batch) b.done();
        } catch (error) {
          const failure = new AdminStateError(`cannot append to the watchlist journal ${this.#path}: ${(error as Error).message}`, { cause: error });
          for (const b of batch) b.failed(failure);
        }
        if (this.#bytes > Math.max(this.#minCompactBytes, COMPACT_FACTOR * this.#freshBytes) && this.#queue.length === 0) await this.#compact();
      }
    } finally {
      this.#flushing = null;
    }
  }

  /** Rewrite the journal as the lines that make the present state. */
  async #compact(): Promise<void> {
    const lines: JournalLine[] = [];
    for (const list of this.#lists.values()) {
      lines.push({ op: 'watchlist', w: list.watchlist });
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
      for (const s of events) if (s.delivery.attempts.length > 0 || s.delivery.state !== 'pending') lines.push({ op: 'attempted', id: s.event.id, d: s.delivery });
    }
    const text = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
    const temp = join(dirname(this.#path), tempFileName('journal.ndjson'));
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.write(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, this.#path);
    this.#bytes = (await stat(this.#path)).size;
    this.#freshBytes = this.#bytes;
  }

  create(watchlist: Watchlist): Promise<void> {
    return this.#commit({ op: 'watchlist', w: watchlist });
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
    return this.#commit({ op: 'remove', id });
  }

  setSecret(id: string, secret: string): Promise<void> {
    return this.#commit({ op: 'secret', id, secret });
  }

  async addVpas(id: string, entries: readonly (readonly [string, WatchedState])[]): Promise<{ added: number; total: number }> {
    const list = this.#list(id, (why) => new AdminStateError(why));
    const fresh = entries.filter(([upi]) => !list.states.has(upi)).map(([upi, state]) => [upi, state] as [string, WatchedState]);
    if (fresh.length > 0) await this.#commit({ op: 'add', id, e: fresh });
    return { added: new Set(fresh.map(([upi]) => upi)).size, total: list.states.size };
  }

  async removeVpas(id: string, upis: readonly string[]): Promise<{ removed: number; total: number }> {
    const list = this.#list(id, (why) => new AdminStateError(why));
    const watched = [...new Set(upis)].filter((upi) => list.states.has(upi));
    if (watched.length > 0) await this.#commit({ op: 'drop', id, upis: watched });
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
      written.push(this.#commit({ op: 'screened', c: group.map((c) => [c.watchlistId, c.upi, c.state]), events: groupEvents }));
      await nextTurn();
    }
    await Promise.all(written);
  }

  due(now: number, limit: number): StoredEvent[] {
    // The oldest pending event of each watchlist and VPA: a later one waits for it, so each VPA's events arrive in order.
    const heads = new Map<string, StoredEvent>();
    for (const { listId, stored } of this.#pending.values()) {
      const key = `${listId}\n${stored.event.upi}`;
      const head = heads.get(key);
      if (head === undefined || stored.event.id < head.event.id) heads.set(key, stored);
    }
    return [...heads.values()].filter((s) => (s.delivery.nextAttemptAt ?? Infinity) <= now).sort((a, b) => (a.event.id < b.event.id ? -1 : 1)).slice(0, limit);
  }

  nextDue(): number | null {
    let next: number | null = null;
    for (const { stored } of this.#pending.values()) {
      const at = stored.delivery.nextAttemptAt;
      if (at !== null && (next === null || at < next)) next = at;
    }
    return next;
  }

  attempted(eventId: string, delivery: Delivery): Promise<void> {
    return this.#commit({ op: 'attempted', id: eventId, d: { ...delivery, attempts: delivery.attempts.slice(-KEPT_ATTEMPTS) } });
  }

  events(watchlistId: string, cursor: string | null, limit: number): { events: StoredEvent[]; next: string | null } {
    const list = this.#lists.get(watchlistId);
    if (list === undefined) return { events: [], next: null };
    const newestFirst = [...list.events.values()].filter((s) => cursor === null || s.event.id < cursor).sort((a, b) => (a.event.id < b.event.id ? 1 : -1));
    const events = newestFirst.slice(0, limit);
    return { events, next: newestFirst.length > limit ? events.at(-1)!.event.id : null };
  }

  findEvent(watchlistId: string, eventId: string): StoredEvent | null {
    return this.#lists.get(watchlistId)?.events.get(eventId) ?? null;
  }

  async close(): Promise<void> {
    await this.#flushing;
  }
}

function checkState(state: unknown, fail: (why: string) => Error): WatchedState {
  if (!Array.isArray(state) || state.length !== 6 || !state.every((n) => Number.isSafeInteger(n))) throw fail('a watched state is not six integers');
  return state as unknown as WatchedState;
}
