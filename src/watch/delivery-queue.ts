import { lowerBound } from '../common/lower-bound.js';
import type { StoredEvent } from './watchlist.js';

interface HeadEntry {
  /** When the head is due (its nextAttemptAt), ms. */
  readonly at: number;
  readonly id: string;
  readonly line: string;
}

/**
 * The outbox's pending events, in the order delivery may take them. Events
 * of one watchlist and VPA (a line) go one after another, oldest first: only
 * a line's head may be attempted. The heads wait in a min-heap by when they
 * are due, so finding what is due costs the events found, not a pass over
 * every pending event; over a backlog of N events, a pass per attempt would
 * be N² work on the main thread.
 *
 * The heap is lazy: a head that changes (attempted, delivered, overtaken by
 * an older event sent again) pushes a new entry, and entries that no longer
 * match their line's head are dropped as they reach the top.
 */
export class DeliveryQueue {
  /** Pending events per line, sorted by id (ids sort by time). */
  readonly #lines = new Map<string, StoredEvent[]>();
  readonly #heap: HeadEntry[] = [];

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
    if (events.length === 0) this.#lines.delete(line);
    else if (at === 0) this.#pushHead(line, events[0]!);
  }

  clear(): void {
    this.#lines.clear();
    this.#heap.length = 0;
  }

  /** The heads due at `now`, earliest first, at most `limit`; they stay queued until deleted or set again. */
  due(now: number, limit: number): StoredEvent[] {
    const found: HeadEntry[] = [];
    const events: StoredEvent[] = [];
    const lines = new Set<string>();
    while (found.length < limit) {
      const top = this.#validTop();
      if (top === undefined || top.at > now) break;
      this.#pop();
      // A head set again unchanged has two entries: the second is dropped.
      if (lines.has(top.line)) continue;
      lines.add(top.line);
      found.push(top);
      events.push(this.#lines.get(top.line)![0]!);
    }
    for (const entry of found) this.#push(entry);
    return events;
  }

  /** When the earliest head is due, or null with nothing pending. */
  nextDue(): number | null {
    const top = this.#validTop();
    return top === undefined || top.at === Infinity ? null : top.at;
  }

  #pushHead(line: string, stored: StoredEvent): void {
    this.#push({ at: stored.delivery.nextAttemptAt ?? Infinity, id: stored.event.id, line });
    // Stale entries outnumbering the heads: lay the heap out again from the heads alone.
    if (this.#heap.length > 2 * this.#lines.size + 1024) this.#rebuild();
  }

  /** The top entry once stale ones above it are dropped. */
  #validTop(): HeadEntry | undefined {
    while (this.#heap.length > 0) {
      const top = this.#heap[0]!;
      const head = this.#lines.get(top.line)?.[0];
      if (head !== undefined && head.event.id === top.id && (head.delivery.nextAttemptAt ?? Infinity) === top.at) return top;
      this.#pop();
    }
    return undefined;
  }

  #rebuild(): void {
    this.#heap.length = 0;
    for (const [line, events] of this.#lines) this.#push({ at: events[0]!.delivery.nextAttemptAt ?? Infinity, id: events[0]!.event.id, line });
  }

  #push(entry: HeadEntry): void {
    const heap = this.#heap;
    let i = heap.push(entry) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): HeadEntry {
    const heap = this.#heap;
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
}

/** Earlier due first; among equals, the older event. */
function before(a: HeadEntry, b: HeadEntry): boolean {
  return a.at < b.at || (a.at === b.at && a.id < b.id);
}

/** Where `id` is, or would go, in events sorted by id. */
function position(events: readonly StoredEvent[], id: string): number {
  return lowerBound(events.length, (i) => events[i]!.event.id < id);
}
