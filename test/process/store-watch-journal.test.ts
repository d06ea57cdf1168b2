import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migrate } from '../../src/store/migrations.js';
import { storePool } from '../../src/store/postgres.js';
import { PostgresWatchStore } from '../../src/watch/postgres-watch-store.js';
import { clearedBatchItem } from '../../src/engine/verdict.js';
import { stateOf, type Watchlist } from '../../src/watch/watchlist.js';
import { silentLogger } from '../../src/common/logger.js';
import { testClient, withTestSchema } from '../store-fixtures.js';
import { until } from '../helpers.js';

const CLEARED = stateOf(clearedBatchItem('x@ybl'));
const list = (id: string): Watchlist => ({ id, owner: 'key_aaaaaaaaaaaa', name: id, webhook_url: 'https://hooks.example.com/x', filters: {}, secret: 'whsec_x', created_at: '2026-11-26T00:00:00.000Z' });

test('stores on one journal converge; a rewritten journal gives the same state to a store reading on and to a new one', async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const pool = storePool(location, 4);
    const client = await testClient(location);
    const one = await PostgresWatchStore.open(pool, location, silentLogger);
    const two = await PostgresWatchStore.open(pool, location, silentLogger);
    try {
      await one.create(list('wl_1'));
      await two.create(list('wl_2'));
      for (let i = 0; i < 30; i++) {
        await (i % 2 === 0 ? one : two).addVpas('wl_1', [[`v${i}@ybl`, CLEARED]]);
        if (i % 3 === 0) await one.removeVpas('wl_1', [`v${i}@ybl`]);
      }
      await until('both stores agree', 5_000, () => one.vpaCount('wl_1') === two.vpaCount('wl_1') && two.get('wl_2') !== null && one.get('wl_2') !== null);
      assert.equal(one.vpaCount('wl_1'), 20);
      const before = Number((await client.query('SELECT count(*) AS n FROM watch_journal')).rows[0].n);

      assert.equal(await one.compactIfGrown(10), true);
      const after = Number((await client.query('SELECT count(*) AS n FROM watch_journal')).rows[0].n);
      assert.ok(after < before / 4, `${after} rows after, ${before} before`);
      await two.addVpas('wl_2', [['late@ybl', CLEARED]]);
      await until('the other store read on through the rewrite', 5_000, () => one.vpaCount('wl_2') === 1);
      assert.equal(two.vpaCount('wl_1'), 20);
      const fresh = await PostgresWatchStore.open(pool, location, silentLogger);
      assert.deepEqual(fresh.pageVpas('wl_1', null, 100), one.pageVpas('wl_1', null, 100));
      assert.equal(fresh.vpaCount('wl_2'), 1);
      assert.equal(await fresh.compactIfGrown(10), false, 'nothing grown since');
      await fresh.close();

      // A row this service did not write is reported and passed over; the rest apply.
      await client.query(`INSERT INTO watch_journal (line) VALUES ('{"op":"explode"}'), ($1)`, [JSON.stringify({ op: 'drop', id: 'wl_2', upis: ['late@ybl'] })]);
      await until('the good row after the bad one applies', 5_000, () => one.vpaCount('wl_2') === 0);
    } finally {
      await one.close();
      await two.close();
      await client.end();
      await pool.end();
    }
  });
});
