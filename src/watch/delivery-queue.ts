import { lowerBound } from '../common/lower-bound.js';
import type { StoredEvent } from './watchlist.js';

interface HeadEntry {
  /** When the head is due (its nextAttemptAt), ms. */
  readonly at: number;
  readonly id: string;
  readonly line: string;
}

/** A watchlist in the order of its earliest head: when it is due, and which event it is. */
interface ListEntry {
  readonly at: number;
  readonly id: string;
  readonly watchlist: string;
}

/**
 * The outbox's pending events, in the order delivery may take them. Events
 * of one watchlist and VPA (a line) go one after another, oldest first: only
 * a line's head may be attempted. Each watchlist's heads wait in a min-heap
 * by when they are due, and the watchlists in another by their earliest
 * head, so finding what is due costs the events found, not a pass over
 * every pending event; over a backlog of N events, a pass per attempt would
 * be N² work on the main thread. Taking at most a few heads of each
 * watchlist at a time (`due`'s `perWatchlist`) keeps one watchlist's
 * backlog from filling every delivery slot while others' events wait.
 *
 * The heaps are lazy: a head that changes (attempted, delivered, overtaken
 * by an older event sent again) pushes new entries, and entries that no
 * longer match their line's head, or their watchlist's earliest head, are
 * dropped as they reach the top.
 */
export class DeliveryQueue {
  /** Pending events per line, sorted by id (ids sort by time). */
  readonly #lines = new Map<string, StoredEvent[]>();
  /** Per watchlist, its lines' heads by when due. */
  readonly #heads = new Map<string, HeadEntry[]>();
  /** The watchlists by when their earliest head is due. */
  readonly #lists: ListEntry[] = [];
  /** Entries in every heap of heads, stale ones included. */
  #entries = 0;

  /** Add a pending event, or replace it with its new delivery state. */
  set(line: string, stored: StoredEvent): void {
    let events = this.#lines.get(line);
    if (events === undefined) {
      events = [];
      this.#lines.set(line, events);
    }
    const at = position(events, stored.event.id);
    if (events[at]?.event.id === stored.event.id) events[at] = stored;
    else events.splice(at, 0, stored);
    if (at === 0) this.#pushHead(line, stored);
  }

  /** Take an event out (delivered, given up on, or its watchlist gone); nothing when it is not pending. */
  delete(line: string, eventId: string): void {
    const events = this.#lines.get(line);
    if (events === undefined) return;
    const at = position(events, eventId);
    if (events[at]?.event.id !== eventId) return;
    events.splice(at, 1);
    if (events.length === 0) {
      this.#lines.delete(line);
      // A line that ends pushes no head, and so no look at the stale entries: looked at here.
      this.#rebuildIfStale();
    } else if (at === 0) this.#pushHead(line, events[0]!);
  }

  clear(): void {
    this.#lines.clear();
    this.#heads.clear();
    this.#lists.length = 0;
    this.#entries = 0;
  }

  /**
   * The heads due at `now`, earliest first, at most `limit`, and at most
   * `perWatchlist` of any one watchlist; they stay queued until deleted or
   * set again.
   */
  due(now: number, limit: number, perWatchlist = Infinity): StoredEvent[] {
    const events: StoredEvent[] = [];
    const taken = new Map<string, HeadEntry[]>();
    const lines = new Set<string>();
    while (events.length < limit) {
      const top = this.#validList();
      if (top === undefined || top.at > now) break;
      popEntry(this.#lists);
      const mine = taken.get(top.watchlist) ?? [];
      taken.set(top.watchlist, mine);
      // Another entry of a watchlist that has had its share: it goes back with the others at the end.
      if (mine.length >= perWatchlist) continue;
      const heap = this.#heads.get(top.watchlist)!;
      const head = popEntry(heap);
      this.#entries--;
      // A head set again unchanged has two entries: the second is dropped.
      if (!lines.has(head.line)) {
        lines.add(head.line);
        mine.push(head);
        events.push(this.#lines.get(head.line)![0]!);
      }
      if (mine.length >= perWatchlist) continue;
      const next = this.#validHead(top.watchlist);
      if (next !== undefined) pushEntry(this.#lists, { at: next.at, id: next.id, watchlist: top.watchlist });
    }
    // What was taken stays queued: its heads go back, and each watchlist by its earliest.
    for (const [watchlist, heads] of taken) {
      if (heads.length > 0) {
        const heap = this.#heapOf(watchlist);
        for (const head of heads) pushEntry(heap, head);
        this.#entries += heads.length;
      }
      const first = this.#validHead(watchlist);
      if (first !== undefined) pushEntry(this.#lists, { at: first.at, id: first.id, watchlist });
    }
    this.#rebuildIfStale();
    return events;
  }

  /** When the earliest head is due, or null with nothing pending. */
  nextDue(): number | null {
    const top = this.#validList();
    return top === undefined || top.at === Infinity ? null : top.at;
  }

  #pushHead(line: string, stored: StoredEvent): void {
    const watchlist = stored.event.watchlist_id;
    const entry = { at: stored.delivery.nextAttemptAt ?? Infinity, id: stored.event.id, line };
    pushEntry(this.#heapOf(watchlist), entry);
    this.#entries++;
    pushEntry(this.#lists, { at: entry.at, id: entry.id, watchlist });
    this.#rebuildIfStale();
  }

  /** Stale entries outnumbering the heads: the heaps laid out again from the heads alone. */
  #rebuildIfStale(): void {
    if (this.#entries > 2 * this.#lines.size + 1024 || this.#lists.length > 2 * this.#heads.size + 1024) this.#rebuild();
  }

  #heapOf(watchlist: string): HeadEntry[] {
    let heap = this.#heads.get(watchlist);
    if (heap === undefined) {
      heap = [];
      this.#heads.set(watchlist, heap);
    }
    return heap;
  }

  /** A watchlist's earliest head once stale entries above it are dropped; undefined (and the heap gone) when it has none. */
  #validHead(watchlist: string): HeadEntry | undefined {
    const heap = this.#heads.get(watchlist);
    if (heap === undefined) return undefined;
    while (heap.length > 0) {
      const top = heap[0]!;
      const head = this.#lines.get(top.line)?.[0];
      if (head !== undefined && head.event.id === top.id && (head.delivery.nextAttemptAt ?? Infinity) === top.at) return top;
      popEntry(heap);
      this.#entries--;
    }
    this.#heads.delete(watchlist);
    return undefined;
  }

  /**
   * The watchlist whose head is due first. An entry that no longer names its
   * watchlist's earliest head (another line's went: delivered, retried
   * later) is put back under the one it has now.
   */
  #validList(): ListEntry | undefined {
    while (this.#lists.length > 0) {
      const top = this.#lists[0]!;
      const head = this.#validHead(top.watchlist);
      if (head !== undefined && head.id === top.id && head.at === top.at) return top;
      popEntry(this.#lists);
      if (head !== undefined) pushEntry(this.#lists, { at: head.at, id: head.id, watchlist: top.watchlist });
    }
    return undefined;
  }

  #rebuild(): void {
    this.#heads.clear();
    this.#lists.length = 0;
    this.#entries = 0;
    for (const [line, events] of this.#lines) {
      const head = events[0]!;
      pushEntry(this.#heapOf(head.event.watchlist_id), { at: head.delivery.nextAttemptAt ?? Infinity, id: head.event.id, line });
      this.#entries++;
    }
    for (const [watchlist, heap] of this.#heads) pushEntry(this.#lists, { at: heap[0]!.at, id: heap[0]!.id, watchlist });
  }
}

/** Earlier due first; among equals, the older event. */
function before(a: { readonly at: number; readonly id: string }, b: { readonly at: number; readonly id: string }): boolean {
  return a.at < b.at || (a.at === b.at && a.id < b.id);
}

function pushEntry<T extends { readonly at: number; readonly id: string }>(heap: T[], entry: T): void {
  let i = heap.push(entry) - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i]!, heap[parent]!)) break;
    [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
    i = parent;
  }
}

function popEntry<T extends { readonly at: number; readonly id: string }>(heap: T[]): T {
  const top = heap[0]!;
  const last = heap.pop()!;
  if (heap.length > 0) {
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
      if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
      if (least === i) break;
      [heap[i], heap[least]] = [heap[least]!, heap[i]!];
      i = least;
    }
  }
  return top;
}

/** Where `id` is, or would go, in events sorted by id. */
function position(events: readonly StoredEvent[], id: string): number {
  return lowerBound(events.length, (i) => events[i]!.event.id < id);
}
