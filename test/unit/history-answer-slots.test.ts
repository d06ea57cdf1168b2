import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AnswerSlots, ROW_WORDS } from '../../src/history/answer-slots.js';

// The rows of the history's index, in memory or in their file: whatever
// is read is what was last written, through spills and holds that move the
// rows a chunk at a time while rows are read, written and added between
// the chunks (as merges go on beside a pass). Checked against plain arrays.

type Step =
  | { readonly op: 'put'; readonly pick: number; readonly value: number }
  | { readonly op: 'add'; readonly value: number }
  | { readonly op: 'confidence'; readonly pick: number; readonly value: number }
  | { readonly op: 'read'; readonly pick: number }
  | { readonly op: 'hold' }
  | { readonly op: 'release' }
  | { readonly op: 'turn' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant('put' as const), pick: fc.nat(), value: fc.nat({ max: 0xffff }) }),
  fc.record({ op: fc.constant('add' as const), value: fc.nat({ max: 0xffff }) }),
  fc.record({ op: fc.constant('confidence' as const), pick: fc.nat(), value: fc.nat({ max: 0xffff }) }),
  fc.record({ op: fc.constant('read' as const), pick: fc.nat() }),
  fc.constant({ op: 'hold' as const }),
  fc.constant({ op: 'release' as const }),
  fc.constant({ op: 'turn' as const }),
  fc.constant({ op: 'turn' as const }),
  fc.constant({ op: 'turn' as const }),
);

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('rows read are the rows written, in memory, on file and while they move between the two', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'upi-risk-slots-'));
  try {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 400 }), fc.array(step, { maxLength: 300 }), async (initial, steps) => {
        const fd = openSync(join(dir, 'rows'), 'w+');
        try {
          let count = initial;
          const model: number[][] = Array.from({ length: count }, (_, n) => [n * 3, n ^ 0x5a5a, n * 7, n % 10_001]);
          const rows = new Uint32Array((count + 16) * ROW_WORDS);
          model.forEach((row, n) => rows.set(row, n * ROW_WORDS));
          const slots = new AnswerSlots(rows, () => count, fd, 16);
          slots.spill();
          // On file from the start, and moved a chunk of 16 rows a turn.
          await slots.settled();
          assert.equal(slots.inMemory, false);
          const holds: Promise<void>[] = [];
          let held = 0;
          const check = (n: number) => {
            for (let w = 0; w < ROW_WORDS; w++) {
              assert.equal(slots.peek(n, w), model[n]![w], `row ${n}, word ${w}, peeked`);
              assert.equal(slots.word(n, w), model[n]![w], `row ${n}, word ${w}`);
            }
          };
          for (const s of steps) {
            if (s.op === 'put') {
              const n = s.pick % count;
              model[n] = [s.value, s.value ^ 1, s.value ^ 2, s.value % 10_001];
              slots.put(n, ...(model[n] as [number, number, number, number]));
            } else if (s.op === 'add') {
              const n = count++;
              model[n] = [s.value, 7, 8, 9];
              slots.grow(count);
              slots.put(n, ...(model[n] as [number, number, number, number]));
            } else if (s.op === 'confidence') {
              const n = s.pick % count;
              model[n]![3] = s.value;
              slots.setConfidence(n, s.value);
            } else if (s.op === 'read') check(s.pick % count);
            else if (s.op === 'hold') {
              held++;
              holds.push(slots.hold());
            } else if (s.op === 'release') {
              if (held === 0) continue;
              await holds.shift();
              held--;
              slots.release();
            } else await turn();
          }
          // Held: every row in memory, as written.
          await Promise.all(holds);
          await slots.hold();
          assert.equal(slots.inMemory, true);
          const all = slots.rows!;
          for (let n = 0; n < count; n++) assert.deepEqual([...all.subarray(n * ROW_WORDS, (n + 1) * ROW_WORDS)], model[n], `row ${n} held`);
          for (let i = 0; i <= held; i++) slots.release();
          await slots.settled();
          // Spilled again: read from the file.
          assert.equal(slots.inMemory, false);
          for (let n = 0; n < count; n++) check(n);
        } finally {
          closeSync(fd);
        }
      }),
      { numRuns: 100 },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('without a file the rows stay in memory; a release without a hold is refused', async () => {
  const slots = new AnswerSlots(new Uint32Array(4 * ROW_WORDS), () => 4);
  slots.spill();
  await slots.hold();
  slots.release();
  await slots.settled();
  assert.equal(slots.inMemory, true);
  slots.put(3, 1, 2, 3, 4);
  assert.deepEqual([0, 1, 2, 3].map((w) => slots.word(3, w)), [1, 2, 3, 4]);
  assert.throws(() => slots.release(), /not held/);
});

test('a row missing from the file is a HistoryError, not a zero', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'upi-risk-slots-'));
  const fd = openSync(join(dir, 'rows'), 'w+');
  try {
    let count = 2;
    const slots = new AnswerSlots(new Uint32Array(2 * ROW_WORDS), () => count, fd);
    slots.spill();
    await slots.settled();
    assert.equal(slots.inMemory, false);
    count = 5;
    assert.throws(() => slots.word(4, 0), (error: Error & { code?: string }) => error.code === 'ERR_HISTORY' && /no row for VPA 4/.test(error.message));
  } finally {
    closeSync(fd);
    await rm(dir, { recursive: true, force: true });
  }
});

test('a hold makes room for as many rows as were room before the spill, not just those written', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'upi-risk-slots-'));
  const fd = openSync(join(dir, 'rows'), 'w+');
  try {
    const slots = new AnswerSlots(new Uint32Array(1000 * ROW_WORDS), () => 10, fd);
    slots.spill();
    await slots.settled();
    assert.equal(slots.bytes, 0);
    slots.grow(1500);
    await slots.hold();
    assert.equal(slots.bytes, 1500 * ROW_WORDS * Uint32Array.BYTES_PER_ELEMENT);
  } finally {
    closeSync(fd);
    await rm(dir, { recursive: true, force: true });
  }
});
