import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StoreDesk, type FollowedLog } from '../../src/corrections/store-desk.js';
import { migrate } from '../../src/store/migrations.js';
import { storePool } from '../../src/store/postgres.js';
import { evidence } from '../helpers.js';
import { appendToLog, withTestSchema } from '../store-fixtures.js';
import { MemoryAuditLog } from '../fixtures/fake-correction-engine.js';

test("fleet desk: the items named that are a VPA's evidence, retracted ones included, in any letter case of the VPA", () =>
  withTestSchema(async (location) => {
    await migrate(location);
    await appendToLog(location, [evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'm1' }), evidence('mule@ybl', 'https://t.me/b', { evidence_id: 'm2' }), evidence('shop@ybl', 'https://s.example', { evidence_id: 's1' })]);
    const pool = storePool(location, 2);
    const follower: FollowedLog = {
      served: () => Promise.resolve(true),
      view: { version: 'v' },
      current: { meta: { scoredAt: Date.now(), evidenceMaxAgeMs: 0 } },
      position: 0,
    };
    const desk = new StoreDesk({ pool, location, follower, audit: new MemoryAuditLog(), servedTimeoutMs: 1000 });
    try {
      await desk.retract(['m1'], 'wrong page', 'key_0123456789ab');
      assert.deepEqual([...(await desk.evidenceIdsOf('Mule@YBL', ['m1', 'm2', 's1', 'never', 'm1']))].sort(), ['m1', 'm2']);
      assert.deepEqual([...(await desk.evidenceIdsOf('shop@ybl', ['m1', 's1']))], ['s1']);
      assert.deepEqual([...(await desk.evidenceIdsOf('nobody@ybl', ['m1']))], []);
    } finally {
      await pool.end();
    }
  }));
