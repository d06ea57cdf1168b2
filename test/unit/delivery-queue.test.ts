import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DeliveryQueue } from '../../src/watch/delivery-queue.js';
import type { Delivery, StoredEvent } from '../../src/watch/watchlist.js';
import { clearedBatchItem } from '../../src/engine/verdict.js';

/** The lines of the property test belong to two watchlists. */
const WATCHLIST_OF: Readonly<Record<string, string>> = { 'a@ybl': 'wl_1', 'b@ybl': 'wl_1', 'c@ybl': 'wl_2', 'd@ybl': 'wl_2' };

function stored(id: string, line: string, nextAttemptAt: number | null): StoredEvent {
  const upi = line;
  const delivery: Delivery = { state: 'pending', attempts: [], nextAttemptAt };
  return {
    event: { id, type: 'vpa.changed', watchlist_id: WATCHLIST_OF[line] ?? 'wl_1', upi, before: clearedBatchItem(upi), after: clearedBatchItem(upi), data_version: 'v', occurred_at: '2026-11-26T00:00:00.000Z' },
    delivery,
  };
}

/** What the queue must answer, the slow way: every line's oldest pending event, if due, earliest due first, at most `perWatchlist` of a watchlist. */
function modelDue(pending: ReadonlyMap<string, StoredEvent>, now: number, limit: number, perWatchlist = Infinity): string[] {
  const heads = new Map<string, StoredEvent>();
  for (const s of pending.values()) {
    const head = heads.get(s.event.upi);
    if (head === undefined || s.event.id < head.event.id) heads.set(s.event.upi, s);
  }
  const at = (s: StoredEvent) => s.delivery.nextAttemptAt ?? Infinity;
  const taken = new Map<string, number>();
  return [...heads.values()]
    .filter((s) => at(s) <= now)
    .sort((a, b) => at(a) - at(b) || (a.event.id < b.event.id ? -1 : 1))
    .filter((s) => {
      const count = taken.get(s.event.watchlist_id) ?? 0;
      taken.set(s.event.watchlist_id, count + 1);
      return count < perWatchlist;
    })
    .slice(0, limit)
    .map((s) => s.event.id);
}

function modelNextDue(pending: ReadonlyMap<string, StoredEvent>): number | null {
  const due = modelDue(pending, Infinity, Infinity);
  const heads = [...pending.values()].filter((s) => due.includes(s.event.id));
  let next: number | null = null;
  for (const s of heads) if (s.delivery.nextAttemptAt !== null && (next === null || s.delivery.nextAttemptAt < next)) next = s.delivery.nextAttemptAt;
  return next;
}

const operation = fc.oneof(
  // A new event (or one sent again) on one of a few lines, due at some time or never.
  fc.record({ op: fc.constant('set' as const), id: fc.integer({ min: 0, max: 40 }), line: fc.constantFrom('a@ybl', 'b@ybl', 'c@ybl', 'd@ybl'), at: fc.option(fc.integer({ min: 0, max: 100 })) }),
  // An attempt that failed: the event stays, due later.
  fc.record({ op: fc.constant('retry' as const), pick: fc.nat(), at: fc.integer({ min: 0, max: 100 }) }),
  // Delivered or given up on.
  fc.record({ op: fc.constant('finish' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('due' as const), now: fc.integer({ min: 0, max: 110 }), limit: fc.integer({ min: 1, max: 5 }), perWatchlist: fc.option(fc.integer({ min: 1, max: 3 })) }),
);

test('due events are the heads of their lines, earliest due first, a few of a watchlist at most, as a pass over every pending event finds them', () => {
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 120 }), (operations) => {
      const queue = new DeliveryQueue();
      const pending = new Map<string, StoredEvent>();
      for (const o of operations) {
        if (o.op === 'set') {
          const id = `ev_${String(o.id).padStart(3, '0')}`;
          // An id belongs to one line, as an event belongs to one VPA.
          const line = pending.get(id)?.event.upi ?? o.line;
          const s = stored(id, line, o.at);
          pending.set(id, s);
          queue.set(line, s);
        } else if (o.op === 'retry' || o.op === 'finish') {
          const ids = [...pending.keys()];
          if (ids.length === 0) continue;
          const s = pending.get(ids[o.pick % ids.length]!)!;
          if (o.op === 'retry') {
            const next = stored(s.event.id, s.event.upi, o.at);
            pending.set(s.event.id, next);
            queue.set(s.event.upi, next);
          } else {
            pending.delete(s.event.id);
            queue.delete(s.event.upi, s.event.id);
          }
        } else {
          const perWatchlist = o.perWatchlist ?? Infinity;
          assert.deepEqual(
            queue.due(o.now, o.limit, perWatchlist).map((s) => s.event.id),
            modelDue(pending, o.now, o.limit, perWatchlist),
          );
        }
        assert.equal(queue.nextDue(), modelNextDue(pending));
      }
    }),
    { numRuns: 300 },
  );
});

test('a backlog is worked through without a pass over every pending event per attempt', () => {
  const queue = new DeliveryQueue();
  const count = 200_000;
  for (let i = 0; i < count; i++) queue.set(`vpa${i % 50_000}@ybl`, stored(`ev_${String(i).padStart(7, '0')}`, `vpa${i % 50_000}@ybl`, i));
  // Every attempt asks for what is due and takes one event out, as delivery does.
  let delivered = 0;
  const lastOf = new Map<string, string>();
  for (;;) {
    const due = queue.due(Infinity, 32);
    if (due.length === 0) break;
    const first = due[0]!;
    // In order on each line.
    assert.ok((lastOf.get(first.event.upi) ?? '') < first.event.id);
    lastOf.set(first.event.upi, first.event.id);
    queue.delete(first.event.upi, first.event.id);
    delivered++;
  }
  assert.equal(delivered, count);
  assert.equal(queue.nextDue(), null);
});

test("one watchlist's backlog takes no more than its share: another's event due later is found first", () => {
  const queue = new DeliveryQueue();
  // 10,000 events of wl_1 due now, on 10,000 VPAs; one of wl_2, due a second later.
  for (let i = 0; i < 10_000; i++) {
    const backlog = stored(`ev_${String(i).padStart(6, '0')}`, 'a@ybl', 1_000);
    queue.set(`wl_1 v${i}`, { ...backlog, event: { ...backlog.event, upi: `v${i}@ybl` } });
  }
  queue.set('wl_2 c@ybl', stored('ev_999999', 'c@ybl', 2_000));
  assert.deepEqual(
    queue.due(2_000, 32, 2).map((s) => s.event.watchlist_id),
    ['wl_1', 'wl_1', 'wl_2'],
  );
  // Without a share, the backlog fills the answer.
  assert.ok(queue.due(2_000, 32).every((s) => s.event.watchlist_id === 'wl_1'));
});
