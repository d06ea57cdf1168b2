import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CLI_ACTOR } from '../../src/access/audit-log.js';
import { JournalDesk } from '../../src/corrections/desk.js';
import { CorrectionLedger } from '../../src/corrections/ledger.js';
import { FakeCorrectionEngine, MemoryAuditLog } from '../fixtures/fake-correction-engine.js';
import { tempDataDir, until } from '../helpers.js';

const T0 = Date.parse('2026-11-01T00:00:00Z');

test('what another process appends (upi-risk retract) is read at the next poll, served, and told to listeners', async () => {
  const { root, cleanup } = await tempDataDir();
  const path = join(root, 'corrections.ndjson');
  const desk = await JournalDesk.open({ path, audit: new MemoryAuditLog(), pollMs: 20 });
  try {
    const fake = new FakeCorrectionEngine([{ evidence_id: 'ev-1', upi: 'mule@ybl', url: 'https://a.example', capturedAt: T0 }]);
    const heard: (readonly string[])[] = [];
    desk.onApplied((upis) => heard.push(upis));

    // Appended after the desk read the journal, before it was attached to the engine.
    const cli = await CorrectionLedger.open({ path, audit: new MemoryAuditLog() });
    await cli.retract(['ev-1'], new Map([['ev-1', 'mule@ybl']]), 'reported twice', CLI_ACTOR);
    assert.equal(desk.state.retracted.size, 0, 'not read yet');

    desk.attach(fake);
    await until('the retraction is served', 5_000, () => fake.applied.length === 1);
    assert.deepEqual(fake.applied[0]!.upis, ['mule@ybl']);
    assert.ok(fake.served.retracted.has('ev-1'));
    assert.deepEqual(heard, [['mule@ybl']]);

    // And a later one, while attached.
    await cli.retract(['ev-2'], new Map([['ev-2', 'other@ybl']]), 'wrong VPA', CLI_ACTOR);
    await until('the second is served', 5_000, () => fake.applied.length === 2);
    assert.deepEqual(fake.applied[1]!.upis, ['other@ybl']);

    // The desk's own changes see the other's: ev-2 is already retracted.
    fake.items.push({ evidence_id: 'ev-2', upi: 'other@ybl', url: 'https://b.example', capturedAt: T0 });
    const outcome = await desk.retract(['ev-2'], 'again', 'key_0123456789ab');
    assert.equal(outcome.already_retracted, 1);
  } finally {
    await desk.close();
    await cleanup();
  }
});
