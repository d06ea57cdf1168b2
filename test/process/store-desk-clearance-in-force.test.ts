import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StoreDesk, type FollowedLog } from '../../src/corrections/store-desk.js';
import { migrate } from '../../src/store/migrations.js';
import { storePool } from '../../src/store/postgres.js';
import { evidence } from '../helpers.js';
import { appendToLog, withTestSchema } from '../store-fixtures.js';
import { MemoryAuditLog } from '../fixtures/fake-correction-engine.js';

/** A follower that serves the log when `serving` says so, under `version`. */
function follower(state: { serving: boolean; version: string }): FollowedLog {
  return {
    served: () => Promise.resolve(state.serving),
    get view() {
      return { version: state.version };
    },
    current: { meta: { scoredAt: Date.now(), evidenceMaxAgeMs: 0 } },
    position: 0,
  };
}

test('fleet desk: a clearance in force made on another follower is answered once this one serves it, with the version then served', () =>
  withTestSchema(async (location) => {
    await migrate(location);
    await appendToLog(location, [evidence('shop@ybl', 'https://s.example', { evidence_id: 's1' })]);
    const pool = storePool(location, 2);
    const audit = new MemoryAuditLog();
    const here = { serving: false, version: 'snap+1' };
    const desk = new StoreDesk({ pool, location, follower: follower(here), audit, servedTimeoutMs: 10 });
    const elsewhere = new StoreDesk({ pool, location, follower: follower({ serving: true, version: 'snap+2' }), audit, servedTimeoutMs: 10 });
    try {
      const made = await elsewhere.clear({ upi: 'shop@ybl', reason: 'verified merchant', reference: null }, 'key_0123456789ab');
      await assert.rejects(desk.activeClearance('SHOP@ybl'), /does not serve it yet/);
      Object.assign(here, { serving: true, version: 'snap+2' });
      const found = await desk.activeClearance('SHOP@ybl');
      assert.deepEqual([found?.id, found?.upi, found?.data_version], [made.id, 'shop@ybl', 'snap+2']);
      assert.equal(await desk.activeClearance('nobody@ybl'), null);
    } finally {
      await pool.end();
    }
  }));
