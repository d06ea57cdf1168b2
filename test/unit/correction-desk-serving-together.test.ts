import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withTestDesk, type FakeItem } from '../fixtures/fake-correction-engine.js';
import { until } from '../helpers.js';

const KEY = 'key_0123456789ab';
const T0 = Date.parse('2026-11-01T00:00:00Z');

const ITEMS: readonly FakeItem[] = Array.from({ length: 20 }, (_, i) => ({
  evidence_id: `ev-${i}`,
  upi: `shop${i}@ybl`,
  url: `https://a.example/shop/${i}`,
  capturedAt: T0 + i,
}));

/** Journal writes are real file I/O, fsynced: on a loaded machine twenty take a while. */
const WAIT_MS = 30_000;

test('changes recorded while a serve is under way are served together by the next one, each answered with a version that serves it', () =>
  withTestDesk(ITEMS, async ({ desk, fake }) => {
    const release = fake.holdApplies();
    const first = desk.clear({ upi: 'shop0@ybl', reason: 'verified', reference: null }, KEY);
    let rest: Promise<unknown>[] = [];
    try {
      await until('the first serve starts', WAIT_MS, () => fake.started.length === 1);
      rest = Array.from({ length: 19 }, (_, i) => desk.clear({ upi: `shop${i + 1}@ybl`, reason: 'verified', reference: null }, KEY));
      // Every one is recorded while the first serve waits; none is served before it ends.
      await until('every clearance is recorded', WAIT_MS, () => desk.state.clearances.size === 20);
      assert.equal(fake.started.length, 1);
    } finally {
      // Never left waiting: the desk's close waits for the serve.
      release();
    }
    const made = (await Promise.all([first, ...rest])) as Awaited<typeof first>[];

    assert.deepEqual(fake.started, [['shop0@ybl'], Array.from({ length: 19 }, (_, i) => `shop${i + 1}@ybl`)], 'two serves for twenty clearances');
    assert.equal(made[0]!.data_version, 'fake+1');
    for (const change of made.slice(1)) assert.equal(change.data_version, 'fake+2');
    for (let i = 0; i < 20; i++) assert.ok(!fake.flagged(`shop${i}@ybl`), `shop${i}@ybl is served CLEARED`);
  }));

test('a clearance waits for the serve of a change to its VPA recorded before it, so its sources are those after that change', () =>
  withTestDesk([...ITEMS, { evidence_id: 'ev-b', upi: 'shop0@ybl', url: 'https://b.example/other', capturedAt: T0 + 100 }], async ({ desk, fake }) => {
    const release = fake.holdApplies();
    const other = desk.clear({ upi: 'shop5@ybl', reason: 'verified', reference: null }, KEY);
    let retraction: ReturnType<typeof desk.retract> | undefined;
    let clearance: ReturnType<typeof desk.clear> | undefined;
    try {
      await until('the first serve starts', WAIT_MS, () => fake.started.length === 1);
      // Recorded while that serve waits, so not yet served when the clearance below is made.
      retraction = desk.retract(['ev-b'], 'wrong page', KEY);
      clearance = desk.clear({ upi: 'shop0@ybl', reason: 'verified', reference: null }, KEY);
      await until('the retraction is recorded', WAIT_MS, () => desk.state.retracted.has('ev-b'));
    } finally {
      release();
    }
    const [, retracted, cleared] = await Promise.all([other, retraction, clearance]);

    assert.equal(retracted.retracted, 1);
    assert.deepEqual(fake.started, [['shop5@ybl'], ['shop0@ybl'], ['shop0@ybl']], 'the retraction served on its own before the clearance was made');
    assert.equal(retracted.data_version, 'fake+2');
    assert.equal(cleared.data_version, 'fake+3');
    assert.deepEqual([...fake.served.clearances.get('shop0@ybl')!.urls], ['https://a.example/shop/0'], "the retracted item's url is not among the sources cleared");
  }));

test('a serve that fails fails the changes it took, and the next serve takes them again', () =>
  withTestDesk(ITEMS, async ({ desk, fake }) => {
    fake.failNextApply = new Error('engine busy');
    await assert.rejects(desk.clear({ upi: 'shop1@ybl', reason: 'verified', reference: null }, KEY), /engine busy/);
    assert.ok(desk.state.clearances.has('shop1@ybl'), 'recorded');
    const next = await desk.clear({ upi: 'shop2@ybl', reason: 'verified', reference: null }, KEY);
    assert.deepEqual([...fake.applied[0]!.upis].sort(), ['shop1@ybl', 'shop2@ybl']);
    assert.equal(next.data_version, 'fake+1');
    assert.ok(!fake.flagged('shop1@ybl'));
  }));
