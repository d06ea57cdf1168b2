import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode } from '../../src/common/errors.js';
import { migrate } from '../../src/store/migrations.js';
import type pg from 'pg';
import { storePool, type StoreLocation } from '../../src/store/postgres.js';
import { StoreServedVersions } from '../../src/store/served-versions.js';
import { formatIso } from '../../src/common/time.js';
import { servedVersionsCases } from '../served-versions-cases.js';
import { until } from '../helpers.js';
import { dropTestSchema, newTestLocation } from '../store-fixtures.js';

servedVersionsCases('store table', async () => {
  const location = newTestLocation();
  await migrate(location);
  const pools = [storePool(location, 2)];
  return {
    versions: new StoreServedVersions(pools[0]!, location),
    reopen: () => {
      const pool = storePool(location, 2);
      pools.push(pool);
      return Promise.resolve(new StoreServedVersions(pool, location));
    },
    close: async () => {
      for (const pool of pools) await pool.end();
      await dropTestSchema(location);
    },
  };
});

const S = '20261128T090000000Z-0000aa';

/** Run `work` with a pool on a migrated schema of its own, dropped afterwards. */
async function withMigratedPool(work: (pool: pg.Pool, location: StoreLocation) => Promise<void>): Promise<void> {
  const location = newTestLocation();
  await migrate(location);
  const pool = storePool(location, 2);
  try {
    await work(pool, location);
  } finally {
    await pool.end();
    await dropTestSchema(location);
  }
}

const T = Date.parse('2026-11-28T09:00:00Z');

test('store table: a state two followers served keeps the earliest time; a row another writer broke is refused', () =>
  withMigratedPool(async (pool, location) => {
    const late = new StoreServedVersions(pool, location);
    const early = new StoreServedVersions(pool, location);
    await late.record({ snapshot: S, position: 7 }, T + 800);
    await early.record({ snapshot: S, position: 7 }, T + 300);
    await late.record({ snapshot: S, position: 9 }, T + 2_000);
    assert.deepEqual(await late.find({ snapshot: S, position: 7 }), { version: `${S}+7`, from: formatIso(T + 300), until: formatIso(T + 2_000), snapshot: S, position: 7 });
    await pool.query("UPDATE served_versions SET served_at_ms = 99999999999999999 WHERE position = 9");
    await assert.rejects(late.find({ snapshot: S, position: 9 }), { code: ErrorCode.STORE_DATA });
  }));

test('store table: states served while the store cannot be written are recorded once it can', () =>
  withMigratedPool(async (pool, location) => {
    const versions = new StoreServedVersions(pool, location);
    await pool.query('ALTER TABLE served_versions RENAME TO served_versions_away');
    await versions.record({ snapshot: S, position: 3 }, T);
    await versions.record({ snapshot: S, position: 4 }, T + 1_000);
    // Meanwhile no version is resolved: an answer could deny a version served, or leave the one before it open.
    assert.match(versions.unavailable ?? '', /2 wait to be recorded/);
    await assert.rejects(versions.find({ snapshot: S, position: 4 }), { code: ErrorCode.HISTORY });
    await pool.query('ALTER TABLE served_versions_away RENAME TO served_versions');
    await versions.record({ snapshot: S, position: 5 }, T + 2_000);
    const { rows } = await pool.query<{ position: string }>('SELECT position FROM served_versions ORDER BY position');
    assert.deepEqual(rows.map((r) => Number(r.position)), [3, 4, 5]);
    assert.equal((await versions.find({ snapshot: S, position: 4 }))?.until, formatIso(T + 2_000));
    assert.equal(versions.unavailable, null);
  }));

test('store table: a retention drops the rows of states that ended before it, and keeps the one served then', () =>
  withMigratedPool(async (pool, location) => {
    const versions = new StoreServedVersions(pool, location);
    const states = [
      { snapshot: 'S1', position: 0, at: T },
      { snapshot: 'S1', position: 4, at: T + 1_000 },
      { snapshot: 'S2', position: 0, at: T + 2_000 },
      { snapshot: 'S2', position: 9, at: T + 3_000 },
    ];
    for (const s of states) await versions.record(s, s.at);
    assert.equal(await versions.prune(T + 2_500), 2);
    assert.equal(await versions.find(states[1]!), null);
    assert.equal((await versions.find(states[2]!))?.until, formatIso(T + 3_000));
    assert.equal(await versions.prune(T + 2_500), 0);
    // A follower's own retention prunes when it starts.
    const kept = new StoreServedVersions(pool, location, undefined, Date.now() - (T + 5_000));
    await until('the old rows dropped', 5_000, async () => (await kept.find(states[2]!)) === null);
    assert.equal((await kept.find(states[3]!))?.until, null);
    await kept.close();
  }));
