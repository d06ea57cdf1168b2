import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { ClearanceConflictError, ErrorCode } from '../../src/common/errors.js';
import { JournalDesk } from '../../src/corrections/desk.js';
import { MemoryAuditLog, withTestDesk, type FakeItem } from '../fixtures/fake-correction-engine.js';

const KEY = 'key_0123456789ab';
const T0 = Date.parse('2026-11-01T00:00:00Z');
const OLD_URL = 'https://a.example/shop';

const ITEMS: readonly FakeItem[] = [
  { evidence_id: 'ev-1', upi: 'shop@ybl', url: OLD_URL, capturedAt: T0 },
  { evidence_id: 'ev-2', upi: 'shop@ybl', url: 'https://b.example/shop', capturedAt: T0 + 1000 },
];

test("a clearance suppresses the VPA's evidence until now and from its sources' urls; evidence from a new url flags it again", () =>
  withTestDesk(ITEMS, async ({ desk, fake, audit }) => {
    const made = await desk.clear({ upi: 'Shop@YBL', reason: 'merchant verified by phone', reference: 'CASE-12' }, KEY);
    assert.match(made.id, /^clr_[0-9a-f]{16}$/);
    assert.equal(made.upi, 'shop@ybl', 'canonical');
    assert.equal(made.reason, 'merchant verified by phone');
    assert.equal(made.reference, 'CASE-12');
    assert.equal(made.created_by, KEY);
    assert.equal(made.ended_at, null);
    assert.equal(made.ended_by, null);
    assert.equal(made.data_version, 'fake+1');
    assert.deepEqual(fake.askedSources, ['shop@ybl']);
    assert.deepEqual(fake.applied[0]!.upis, ['shop@ybl']);

    const clearance = fake.served.clearances.get('shop@ybl')!;
    assert.equal(clearance.createdAt, Date.parse(made.created_at));
    assert.deepEqual([...clearance.urls].sort(), [OLD_URL, 'https://b.example/shop']);
    assert.ok(!fake.flagged('shop@ybl'), 'CLEARED');

    // Later evidence from a url among its sources then: still suppressed.
    fake.items.push({ evidence_id: 'ev-3', upi: 'shop@ybl', url: OLD_URL, capturedAt: clearance.createdAt + 60_000 });
    assert.ok(!fake.flagged('shop@ybl'));
    // Later evidence from a new url: counts.
    fake.items.push({ evidence_id: 'ev-4', upi: 'shop@ybl', url: 'https://c.example/new', capturedAt: clearance.createdAt + 60_000 });
    assert.ok(fake.flagged('shop@ybl'), 'FLAGGED again');

    // In force, with the version served, which holds it: nothing is served anew for the asking.
    const applies = fake.applied.length;
    assert.deepEqual(await desk.activeClearance('SHOP@ybl'), { ...(await desk.clearance(made.id))!, data_version: fake.applied.at(-1)!.version });
    assert.equal(fake.applied.length, applies);
    assert.equal(audit.records[0]!.action, 'clearance.created');
    assert.equal(audit.records[0]!.target, made.id);
    assert.equal(audit.records[0]!.details.reason, 'merchant verified by phone');
  }));

test('only evidence that counts now gives the clearance its urls', () =>
  withTestDesk(ITEMS, async ({ desk, fake }) => {
    await desk.retract(['ev-2'], 'wrong page', KEY);
    await desk.clear({ upi: 'shop@ybl', reason: 'verified', reference: null }, KEY);
    assert.deepEqual([...fake.served.clearances.get('shop@ybl')!.urls], [OLD_URL], 'the retracted item is not among its sources');
  }));

test('a second clearance of a VPA with one in force is refused with its id, and nothing is stored', () =>
  withTestDesk(ITEMS, async ({ desk, fake, audit, path }) => {
    const first = await desk.clear({ upi: 'shop@ybl', reason: 'verified', reference: null }, KEY);
    const before = await readFile(path, 'utf8');
    await assert.rejects(desk.clear({ upi: 'SHOP@ybl', reason: 'again', reference: null }, 'cli'), (error: ClearanceConflictError) => {
      assert.equal(error.code, ErrorCode.CLEARANCE_CONFLICT);
      assert.equal(error.clearanceId, first.id);
      return true;
    });
    assert.equal(await readFile(path, 'utf8'), before);
    assert.equal(fake.askedSources.length, 1, 'refused before the engine was asked');
    assert.equal(audit.records.length, 1);
  }));

test('a VPA no evidence names yet may be cleared', () =>
  withTestDesk(ITEMS, async ({ desk, fake }) => {
    const made = await desk.clear({ upi: 'new@okaxis', reason: 'pre-cleared payee', reference: null }, KEY);
    assert.deepEqual([...fake.served.clearances.get('new@okaxis')!.urls], []);
    assert.equal(made.upi, 'new@okaxis');
  }));

test('ending a clearance makes its evidence count again; ending it again changes nothing; an unknown id is null', () =>
  withTestDesk(ITEMS, async ({ desk, fake, audit, path }) => {
    const made = await desk.clear({ upi: 'shop@ybl', reason: 'verified', reference: null }, KEY);
    const ended = await desk.endClearance(made.id, 'cli', 'new complaints');
    assert.ok(ended !== null);
    assert.equal(ended.ended_by, 'cli');
    assert.ok(ended.ended_at !== null && Date.parse(ended.ended_at) >= Date.parse(made.created_at));
    assert.equal(ended.data_version, 'fake+2');
    assert.equal(fake.served.clearances.has('shop@ybl'), false);
    assert.deepEqual(fake.applied[1]!.upis, ['shop@ybl']);
    assert.ok(fake.flagged('shop@ybl'), 'FLAGGED again');
    assert.equal(await desk.activeClearance('shop@ybl'), null);
    assert.equal(audit.records[1]!.action, 'clearance.ended');
    assert.deepEqual(audit.records[1]!.actor, { key_id: null, name: 'cli' });
    assert.equal(audit.records[1]!.details.reason, 'new complaints');

    const lines = (await readFile(path, 'utf8')).split('\n').length;
    const again = await desk.endClearance(made.id, KEY);
    assert.equal(again?.ended_at, ended.ended_at, 'unchanged');
    assert.equal(again?.ended_by, 'cli');
    assert.equal((await readFile(path, 'utf8')).split('\n').length, lines, 'nothing stored');
    assert.equal(await desk.endClearance('clr_0000000000000000', KEY), null);

    const next = await desk.clear({ upi: 'shop@ybl', reason: 'verified again', reference: null }, KEY);
    assert.notEqual(next.id, made.id, 'a VPA may be cleared again once its clearance has ended');
  }));

test('clearances and their ends survive a restart', () =>
  withTestDesk(ITEMS, async ({ desk: first, path }) => {
    const ended = await first.clear({ upi: 'shop@ybl', reason: 'verified', reference: 'T-1' }, KEY);
    await first.endClearance(ended.id, KEY);
    const standing = await first.clear({ upi: 'shop@ybl', reason: 'verified again', reference: null }, KEY);

    const desk = await JournalDesk.open({ path, audit: new MemoryAuditLog(), pollMs: 0 });
    assert.deepEqual([...desk.state.clearances.keys()], ['shop@ybl']);
    assert.equal(desk.state.clearances.get('shop@ybl')!.createdAt, Date.parse(standing.created_at));
    assert.equal((await desk.clearance(ended.id))?.ended_by, KEY);
    assert.equal((await desk.clearance(ended.id))?.reference, 'T-1');
    assert.equal((await desk.clearance(standing.id))?.ended_at, null, 'still in force');
    await desk.close();
  }));
