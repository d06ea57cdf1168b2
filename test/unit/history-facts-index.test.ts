import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mkdir, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { FactsIndex, RECORD_ALIGN, SLOT_BYTES, VPA_BYTES, hashA, hashB, type IndexedAnswer } from '../../src/history/facts-index.js';
import { keepFactsIndex, readFactsIndex } from '../../src/history/facts-index-file.js';
import { withHistoryLog } from '../helpers.js';

// The history's index: numbers by hash in a table, what it holds of each
// VPA in arrays by number. Checked against a plain Map through growth of
// both, records read in any order of numbers (a log scanned after a
// prune), passes, and the confidences taken from a column.

const answerOf = (n: number): IndexedAnswer => ({ told: n % 64, printA: (n * 2654435761) >>> 0, printB: (n * 40503) >>> 0, confidence: n % 10_001 });

interface Held {
  readonly number: number;
  readonly offset: number;
  readonly answer: IndexedAnswer;
}

function check(index: FactsIndex, model: ReadonlyMap<string, Held>, keys: readonly string[]): void {
  assert.equal(index.count, model.size);
  for (const key of keys) {
    const held = model.get(key);
    const number = index.find(key);
    if (held === undefined) {
      assert.equal(number, -1, key);
      assert.equal(index.told(number), null);
      continue;
    }
    assert.equal(number, held.number, key);
    assert.equal(index.told(number), held.answer.told);
    assert.equal(index.offsetAt(number), held.offset);
    assert.equal(index.confidenceAt(number), held.answer.confidence);
    assert.equal(index.differs(number, held.answer, true), false);
    assert.equal(index.differs(number, { ...held.answer, printB: held.answer.printB ^ 1 }, false), true);
    assert.equal(index.differs(number, { ...held.answer, confidence: held.answer.confidence + 1 }, false), false);
    assert.equal(index.differs(number, { ...held.answer, confidence: held.answer.confidence + 1 }, true), true);
  }
  const byNumber = index.confidenceByNumber();
  assert.equal(byNumber.length, model.size);
  for (const held of model.values()) assert.equal(byNumber[held.number], held.answer.confidence);
}

/** The index's bytes: every VPA's and at least 5 slots to 4 VPAs; at most a sixteenth of the arrays (or 1,024) spare, and a table grown by quarters from the least it may be. */
function assertSpare(index: FactsIndex): void {
  const count = index.count;
  assert.ok(index.bytes >= count * VPA_BYTES + (count * 5 * SLOT_BYTES) / 4, `${index.bytes} bytes for ${count} VPAs`);
  const room = count + Math.max(1024, Math.ceil(count / 16));
  const slots = Math.max(1024, Math.ceil((count + 1) * 1.25 * 1.25) + 1);
  assert.ok(index.bytes <= room * VPA_BYTES + slots * SLOT_BYTES, `${index.bytes} bytes for ${count} VPAs`);
}

test('keys put one by one take the next numbers, and are found with what they hold, across growths', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2999 }), fc.integer({ min: 0, max: 1_000_000 })), { minLength: 1, maxLength: 4000 }), (puts) => {
      const keys = Array.from({ length: 3000 }, (_, i) => `payee${i}@ybl`);
      const index = new FactsIndex();
      const model = new Map<string, Held>();
      let offset = 64;
      for (const [k, n] of puts) {
        const key = keys[k]!;
        const number = index.put(key, offset, answerOf(n));
        const before = model.get(key);
        assert.equal(number, before?.number ?? model.size, key);
        model.set(key, { number, offset, answer: answerOf(n) });
        offset += RECORD_ALIGN * (1 + (n % 5));
      }
      check(index, model, keys);
      assertSpare(index);
    }),
    { numRuns: 30 },
  );
});

test('records read in any order of their numbers make the same index', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3000 }), fc.integer(), (count, seed) => {
      const keys = Array.from({ length: count }, (_, i) => `vpa${i}@okaxis`);
      // A permutation of the numbers: the order a pruned log holds its newest records in.
      const order = keys.map((_, i) => i);
      let s = seed >>> 0;
      for (let i = order.length - 1; i > 0; i--) {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        const j = s % (i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      const index = new FactsIndex();
      const model = new Map<string, Held>();
      order.forEach((number, i) => {
        const key = keys[number]!;
        const offset = 64 + i * RECORD_ALIGN;
        assert.equal(index.putHashed(hashA(key), hashB(key), offset, answerOf(number), number), number);
        model.set(key, { number, offset, answer: answerOf(number) });
      });
      check(index, model, [...keys, 'absent@ybl']);
      // The next new VPA takes the number after them all.
      assert.equal(index.put('new@ybl', 8, answerOf(1)), count);
    }),
    { numRuns: 30 },
  );
});

test('room reserved for the VPAs a pass will record is taken once: they go in without growing it', () => {
  const index = new FactsIndex();
  index.put('before@ybl', 64, answerOf(1));
  index.reserve(20_000);
  const bytes = index.bytes;
  index.reserve(10);
  assert.equal(index.bytes, bytes, 'less than it has: nothing');
  const model = new Map<string, Held>([['before@ybl', { number: 0, offset: 64, answer: answerOf(1) }]]);
  for (let i = 1; i < 20_000; i++) {
    const key = `pass${i}@ybl`;
    model.set(key, { number: index.put(key, 64 + i * RECORD_ALIGN, answerOf(i)), offset: 64 + i * RECORD_ALIGN, answer: answerOf(i) });
  }
  assert.equal(index.bytes, bytes, 'not grown');
  check(index, model, [...model.keys(), 'absent@ybl']);
  assertSpare(index);
});

test('a pass lists the FLAGGED VPAs it did not see; a column sets the confidences it holds', () => {
  const index = new FactsIndex(null, 5);
  const keys = ['a@ybl', 'b@ybl', 'c@ybl', 'd@ybl'];
  // told bit 0: FLAGGED.
  keys.forEach((key, i) => index.put(key, 64 + i * 8, { told: i === 3 ? 0 : 1, printA: i, printB: i, confidence: 1000 + i }));
  index.startPass();
  index.mark(index.find('b@ybl'));
  assert.deepEqual(index.unseenFlaggedOffsets(), [64, 80]);
  index.takeConfidences(Uint16Array.from([0xffff, 7, 8]), 0xffff);
  assert.deepEqual([...index.confidenceByNumber()], [1000, 7, 8, 1003]);
  index.setConfidence(3, 9);
  assert.equal(index.confidenceAt(3), 9);
});

test('a VPA named with another number than its own, or two VPAs with one number, is refused', () => {
  const index = new FactsIndex();
  const [a, b] = ['one@ybl', 'two@ybl'];
  index.putHashed(hashA(a), hashB(a), 64, answerOf(1), 0);
  assert.throws(() => index.putHashed(hashA(a), hashB(a), 72, answerOf(2), 1), RangeError);
  assert.throws(() => index.putHashed(hashA(b), hashB(b), 80, answerOf(3), 0), RangeError);
  assert.equal(index.count, 1);
  assert.equal(index.offsetAt(index.find(a)), 64);
});

test('kept in a file and read again, a grown index finds each VPA with what it holds, and has room to grow', async () => {
  await withHistoryLog(async (path) => {
    const index = new FactsIndex();
    const keys = Array.from({ length: 5000 }, (_, i) => `kept${i}@paytm`);
    const model = new Map<string, Held>();
    keys.forEach((key, i) => {
      const offset = 64 + i * RECORD_ALIGN;
      model.set(key, { number: index.put(key, offset, answerOf(i)), offset, answer: answerOf(i) });
    });
    await mkdir(dirname(path), { recursive: true });
    await keepFactsIndex(path, index, { covered: 64 + keys.length * RECORD_ALIGN, logCrc: 0, lastAt: 1, replacedAt: Number.POSITIVE_INFINITY, columnAt: 0 }, null);
    const kept = await readFactsIndex(path, 64);
    assert.ok(kept !== null && !('refused' in kept), JSON.stringify(kept));
    check(kept.index, model, [...keys, 'absent@ybl']);
    // Grown past its room and its table's 4 VPAs to 5 slots, it finds every VPA still.
    const more = Array.from({ length: 3000 }, (_, i) => `more${i}@paytm`);
    more.forEach((key, i) => {
      const offset = 64 + (keys.length + i) * RECORD_ALIGN;
      model.set(key, { number: kept.index.put(key, offset, answerOf(i)), offset, answer: answerOf(i) });
    });
    check(kept.index, model, [...keys, ...more, 'absent@ybl']);
    assertSpare(kept.index);
    // Cut short, it is refused.
    await truncate(`${path}.index`, (await stat(`${path}.index`)).size - 1);
    const cut = await readFactsIndex(path, 64);
    assert.ok(cut !== null && 'refused' in cut);
  });
});
