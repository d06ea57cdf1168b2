import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EventOrder } from '../../src/watch/event-order.js';

const operation = fc.oneof(
  fc.record({ op: fc.constant('add' as const), id: fc.integer({ min: 0, max: 500 }) }),
  fc.record({ op: fc.constant('drop' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('page' as const), cursor: fc.option(fc.integer({ min: 0, max: 510 })), limit: fc.integer({ min: 1, max: 8 }) }),
);

const idOf = (n: number) => `evt_${String(n).padStart(4, '0')}`;

test('pages of ids, newest first, as sorting the kept ones finds them', () => {
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 200 }), (operations) => {
      const order = new EventOrder();
      const kept = new Set<string>();
      const seen = new Set<string>();
      for (const o of operations) {
        if (o.op === 'add') {
          // An id is added once, when its event is first stored.
          const id = idOf(o.id);
          if (seen.has(id)) continue;
          seen.add(id);
          kept.add(id);
          order.add(id);
        } else if (o.op === 'drop') {
          const ids = [...kept];
          if (ids.length === 0) continue;
          kept.delete(ids[o.pick % ids.length]!);
          order.drop();
        } else {
          const cursor = o.cursor === null ? null : idOf(o.cursor);
          const before = [...kept].filter((id) => cursor === null || id < cursor).sort().reverse();
          assert.deepEqual(order.page(cursor, o.limit, (id) => kept.has(id)), { ids: before.slice(0, o.limit), more: before.length > o.limit });
        }
      }
    }),
    { numRuns: 300 },
  );
});
