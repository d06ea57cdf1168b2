import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StoreDesk, type FollowedLog } from '../../src/corrections/store-desk.js';
import { migrate } from '../../src/store/migrations.js';
import { storePool } from '../../src/store/postgres.js';
import { evidence } from '../helpers.js';
import { appendToLog, withTestSchema } from '../store-fixtures.js';
import { MemoryAuditLog } from '../fixtures/fake-correction-engine.js';

test('fleet desk: a correction stored but not yet served here is audited all the same, its retry is not audited twice, and answers once it is served', () =>
  withTestSchema(async (location) => {
    await migrate(location);
    await appendToLog(location, [evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'm1' }), evidence('shop@ybl', 'https://s.example', { evidence_id: 's1' })]);
    const pool = storePool(location, 2);
    let serving = false;
    const follower: FollowedLog = {
      served: () => Promise.resolve(serving),
      view: { version: 'v' },
      current: { meta: { scoredAt: Date.now(), evidenceMaxAgeMs: 0 } },
      position: 0,
    };
    const audit = new MemoryAuditLog();
    const desk = new StoreDesk({ pool, location, follower, audit, servedTimeoutMs: 10 });
    const KEY = 'key_0123456789ab';
    try {
      await assert.rejects(desk.retract(['m1'], 'wrong page', KEY), /does not serve it yet/);
      await assert.rejects(desk.clear({ upi: 'shop@ybl', reason: 'verified', reference: null }, KEY), /does not serve it yet/);
      // Asked again here before this follower serves it (as when another follower made it): not answered
      // "already retracted" with a version that still counts the item.
      await assert.rejects(desk.retract(['m1'], 'wrong page', KEY), /does not serve it yet/);
      serving = true; // the follower catches up; the caller retries as the 503 tells it to
      const again = await desk.retract(['m1'], 'wrong page', KEY);
      assert.deepEqual([again.retracted, again.already_retracted], [0, 1]);
      await assert.rejects(desk.clear({ upi: 'shop@ybl', reason: 'verified', reference: null }, KEY), /clearance/i);
      assert.deepEqual(audit.records.map((r) => r.action).sort(), ['clearance.created', 'evidence.retracted'], 'each stored correction audited once');
    } finally {
      await pool.end();
    }
  }));
