import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { RANGES, RANGE_RECORD_WORDS, RECORD_CLUSTER, RECORD_FIELDS, hashRangesHere, hashRangesOffThread, orderRecords, rangeOf, recordConfidence } from '../../src/engine/hash-ranges.js';
import { NO_CLUSTER } from '../../src/engine/snapshot-data.js';
import { VpaIndex } from '../../src/engine/vpa-index.js';
import { batchesArb, snapshotAndDelta } from '../delta-fixtures.js';

/** Random records by id: heads drawn from few values, so that ranges hold several ids and heads tie on their first word. */
const recordsArb = fc
  .array(fc.tuple(fc.constantFrom(0, 1, 0x7fffffff, 0xfffff000, 0xffffffff), fc.integer({ min: 0, max: 3 })), { maxLength: 300 })
  .map((rows) => {
    const records = new Uint32Array(RANGE_RECORD_WORDS * rows.length);
    rows.forEach(([hi, lo], id) => {
      records[RANGE_RECORD_WORDS * id] = hi;
      records[RANGE_RECORD_WORDS * id + 1] = lo;
      // The rest of the record names its id, to follow it through the move.
      for (let w = 2; w < RANGE_RECORD_WORDS; w++) records[RANGE_RECORD_WORDS * id + w] = id * 16 + w;
    });
    return records;
  });

test('orderRecords orders ids by head within their ranges and moves each record to its position', () => {
  fc.assert(
    fc.property(recordsArb, (byId) => {
      const count = byId.length / RANGE_RECORD_WORDS;
      const records = byId.slice();
      const { starts, order, largest } = orderRecords('s', count, records);
      const head = (id: number) => [byId[RANGE_RECORD_WORDS * id]!, byId[RANGE_RECORD_WORDS * id + 1]!] as const;
      // Every id once, in order of its head (ties in any order).
      assert.deepEqual([...order].sort((a, b) => a - b), Array.from({ length: count }, (_, i) => i));
      for (let p = 1; p < count; p++) {
        const [ha, la] = head(order[p - 1]!);
        const [hb, lb] = head(order[p]!);
        assert.ok(ha < hb || (ha === hb && la <= lb), `position ${p}`);
      }
      // Range r's ids sit between its starts.
      assert.equal(starts.length, RANGES + 1);
      assert.equal(starts[RANGES], count);
      let most = 0;
      for (let p = 0; p < count; p++) {
        const r = rangeOf(head(order[p]!)[0]);
        assert.ok(starts[r]! <= p && p < starts[r + 1]!);
        most = Math.max(most, starts[r + 1]! - starts[r]!);
      }
      assert.equal(largest, most);
      // Position p holds the record id order[p] had, every word of it.
      for (let p = 0; p < count; p++) {
        const id = order[p]!;
        assert.deepEqual(records.subarray(RANGE_RECORD_WORDS * p, RANGE_RECORD_WORDS * (p + 1)), byId.subarray(RANGE_RECORD_WORDS * id, RANGE_RECORD_WORDS * (id + 1)));
      }
    }),
    { numRuns: 300 },
  );
});

test("a snapshot's range records hold each VPA's whole hash and verdict, the same made here and on worker threads", async () => {
  const batches = fc.sample(batchesArb, { numRuns: 8, seed: 41 });
  for (const batch of batches) {
    const { base } = snapshotAndDelta(batch);
    const data = base.data;
    const here = hashRangesHere(data);
    const index = new VpaIndex(data, data.maxKeyLength);
    for (let p = 0; p < data.meta.vpaCount; p++) {
      const id = here.order[p]!;
      const words = here.records.subarray(RANGE_RECORD_WORDS * p, RANGE_RECORD_WORDS * p + 8);
      const hex = [...words].map((w) => w.toString(16).padStart(8, '0')).join('');
      assert.equal(hex, createHash('sha256').update(index.keyOf(id).toLowerCase()).digest('hex'));
      assert.equal(recordConfidence(here.records[RANGE_RECORD_WORDS * p + RECORD_FIELDS]!), data.confidence[id]);
      const cluster = data.vpaCluster[id]!;
      assert.equal(here.records[RANGE_RECORD_WORDS * p + RECORD_CLUSTER], cluster === NO_CLUSTER ? 0 : data.clusterNumber[cluster]);
    }
    const off = await hashRangesOffThread(data, 2);
    assert.deepEqual([off.order, off.starts, off.records, off.largest], [here.order, here.starts, here.records, here.largest]);
  }
});
