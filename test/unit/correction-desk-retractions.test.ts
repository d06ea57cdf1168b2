import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { JournalDesk } from '../../src/corrections/desk.js';
import { MemoryAuditLog, withTestDesk, type FakeItem } from '../fixtures/fake-correction-engine.js';

const KEY = 'key_0123456789ab';
const DAY = 86_400_000;
const T0 = Date.parse('2026-11-01T00:00:00Z');
const ITEMS: readonly FakeItem[] = [
  { evidence_id: 'ev-1', upi: 'mule@ybl', url: 'https://a.example/1', capturedAt: T0 },
  { evidence_id: 'ev-2', upi: 'mule@ybl', url: 'https://a.example/2', capturedAt: T0 + DAY },
  { evidence_id: 'ev-3', upi: 'other@ybl', url: 'https://a.example/1', capturedAt: T0 },
];
const nameOf = (id: string) => (id === KEY ? 'fraud ops' : undefined);

test('a retraction stores the known ids, has the engine serve them, and answers with its version', () =>
  withTestDesk(
    ITEMS,
    async ({ desk, fake, audit, path }) => {
      const heard: (readonly string[])[] = [];
      desk.onApplied((upis) => heard.push(upis));

      const outcome = await desk.retract(['ev-1', 'nope', 'ev-1', 'ev-3'], 'reported by mistake', KEY);
      assert.deepEqual(outcome, { retracted: 2, unknown: ['nope'], already_retracted: 0, data_version: 'fake+1' });
      assert.deepEqual(fake.located, [['ev-1', 'nope', 'ev-3']], 'each id asked once');
      assert.deepEqual([...fake.served.retracted].sort(), ['ev-1', 'ev-3']);
      assert.deepEqual([...fake.applied[0]!.upis].sort(), ['mule@ybl', 'other@ybl']);
      assert.deepEqual(heard.map((u) => [...u].sort()), [['mule@ybl', 'other@ybl']]);
      assert.ok(fake.flagged('mule@ybl'), 'its other evidence still counts');
      assert.ok(!fake.flagged('other@ybl'), 'its only evidence is retracted');

      const lines = (await readFile(path, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.equal(lines.length, 1);
      assert.deepEqual(lines[0]!.evidence, [
        { id: 'ev-1', upi: 'mule@ybl' },
        { id: 'ev-3', upi: 'other@ybl' },
      ]);
      assert.equal(lines[0]!.by, KEY);

      assert.equal(audit.records.length, 1);
      const record = audit.records[0]!;
      assert.equal(record.action, 'evidence.retracted');
      assert.deepEqual(record.actor, { key_id: KEY, name: 'fraud ops' });
      assert.equal(record.target, lines[0]!.id);
      assert.equal(record.details.reason, 'reported by mistake');
      assert.deepEqual(record.details.evidence_ids, ['ev-1', 'ev-3']);
    },
    { nameOf },
  ));

test('an id retracted before counts as already retracted; a call that retracts nothing stores nothing', () =>
  withTestDesk(ITEMS, async ({ desk, fake, audit, path }) => {
    await desk.retract(['ev-1'], 'first', KEY);
    const before = await readFile(path, 'utf8');
    // An engine may no longer name retracted evidence: the desk knows it is retracted all the same.
    fake.items.splice(0, 1);
    const again = await desk.retract(['ev-1', 'gone'], 'second', 'cli');
    assert.deepEqual(again, { retracted: 0, unknown: ['gone'], already_retracted: 1, data_version: 'fake+2' });
    assert.equal(await readFile(path, 'utf8'), before, 'no line written');
    assert.deepEqual(fake.applied[1]!.upis, [], 'nothing changed to serve');
    assert.equal(audit.records.length, 1, 'nothing audited: nothing changed');
  }));

test('retractions survive a restart: a desk opened again starts with them in force', () =>
  withTestDesk(ITEMS, async ({ desk, path }) => {
    await desk.retract(['ev-2'], 'duplicate of ev-1', KEY);
    const reopened = await JournalDesk.open({ path, audit: new MemoryAuditLog(), pollMs: 0 });
    assert.deepEqual([...reopened.state.retracted], ['ev-2'], 'in force before any engine is attached');
    await reopened.close();
  }));

test('a retraction the engine fails to serve is stored, refused, and served with the next change', () =>
  withTestDesk(ITEMS, async ({ desk, fake }) => {
    fake.failNextApply = new Error('serving threads busy');
    await assert.rejects(desk.retract(['ev-3'], 'wrong', KEY), /serving threads busy/);
    assert.ok(desk.state.retracted.has('ev-3'), 'stored before the engine was asked');
    const next = await desk.retract(['ev-1'], 'also wrong', KEY);
    assert.equal(next.retracted, 1);
    assert.deepEqual([...fake.applied.at(-1)!.upis].sort(), ['mule@ybl', 'other@ybl'], 'the VPA not served before comes with it');
  }));

test('a desk without an engine refuses changes', () =>
  withTestDesk(ITEMS, async ({ path }) => {
    const desk = await JournalDesk.open({ path, audit: new MemoryAuditLog(), pollMs: 0 });
    await assert.rejects(desk.retract(['ev-1'], 'x', KEY), /no engine/);
    await assert.rejects(desk.clear({ upi: 'a@ybl', reason: 'x', reference: null }, KEY), /no engine/);
    await desk.close();
  }));
