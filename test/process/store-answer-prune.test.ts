import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChangeLog } from '../../src/history/change-log.js';
import { migrate } from '../../src/store/migrations.js';
import { connectStore, storePool } from '../../src/store/postgres.js';
import { beginRecording, lastPrunedAt, pruneRecordedHistory, writeRecordedState } from '../../src/store/answer-history-store.js';
import { flaggedFacts, withHistoryLog } from '../helpers.js';
import { withHistoryLease, withTestSchema } from '../store-fixtures.js';

// The store's prune reads only the changes since the last prune's cutoff
// (each VPA has at most one record before it). Pruned a day at a time, as
// the recorder does, it keeps exactly what the whole rule keeps: every
// record from the cutoff on, and each VPA's newest before it.

const T0 = Date.parse('2026-11-01T00:00:00Z');
const DAY = 86_400_000;
const LOCK = 'upi-risk answer prune test';
const KEYS = Array.from({ length: 12 }, (_, i) => `payee${i}@ybl`);

/** What the whole rule keeps of `rows` at `cutoff`. */
function kept(rows: readonly string[], cutoff: number): string[] {
  const newestBefore = new Map<string, number>();
  for (const row of rows) {
    const [vpa, at] = [row.split(' ')[0]!, Number(row.split(' ')[1])];
    if (at < cutoff) newestBefore.set(vpa, Math.max(newestBefore.get(vpa) ?? 0, at));
  }
  return rows.filter((row) => {
    const [vpa, at] = [row.split(' ')[0]!, Number(row.split(' ')[1])];
    return at >= cutoff || newestBefore.get(vpa) === at;
  });
}

test('pruned a day at a time, the store keeps what the whole rule keeps', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const pool = storePool(location, 2);
    const rows = async (): Promise<string[]> =>
      (await pool.query<{ row: string }>("SELECT vpa || ' ' || at_ms AS row FROM answer_changes ORDER BY vpa, at_ms")).rows.map((r) => r.row);
    try {
      await withHistoryLease(location, LOCK, async (lease) => withHistoryLog(async (path) => {
        const log = await ChangeLog.open(path, 0);
        const term = await beginRecording(pool, location, lease, T0);
        let seed = 7;
        const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
        let prunes = 0;
        for (let state = 0; state < 60; state++) {
          const at = T0 + state * (DAY / 4);
          log.begin(at, `s1+${state}`);
          for (const key of KEYS) if (next() < 0.3) log.add(key, flaggedFacts(1000 + Math.floor(next() * 8000)), 'evidence');
          const committed = await log.commit();
          await writeRecordedState(pool, location, lease, { term, snapshot: 's1', position: state, dataAsOf: at - 5 }, committed, log);
          // Daily from the fourth day, keeping two days; once half a day (a shorter retention), then three (a cutoff before the last).
          if (state >= 12 && state % 4 === 0) {
            const cutoff = at - (prunes === 5 ? DAY / 2 : 2 * DAY) + (prunes === 6 ? -DAY : 0);
            const before = await rows();
            const now = at + prunes;
            const dropped = await pruneRecordedHistory(pool, location, cutoff, undefined, now);
            const after = await rows();
            assert.deepEqual(after, kept(before, cutoff), `the prune at ${cutoff}`);
            assert.equal(dropped, before.length - after.length);
            assert.equal(await lastPrunedAt(pool, location), now);
            assert.deepEqual((await pool.query('SELECT cutoff_ms::float8 AS cutoff FROM answer_prunes WHERE at_ms = $1', [now])).rows, [{ cutoff }]);
            prunes++;
          }
        }
        assert.ok(prunes >= 10);

        // The prune reads only what came since the last cutoff: two records of a VPA from before it (which no
        // recorder writes) are not looked at.
        const last = Number((await pool.query<{ cutoff: string }>('SELECT cutoff_ms AS cutoff FROM answer_prunes ORDER BY at_ms DESC LIMIT 1')).rows[0]!.cutoff);
        await pool.query("INSERT INTO answer_changes (vpa, at_ms, number, record) VALUES ('planted@ybl', $1, 99, '\\x00'), ('planted@ybl', $2, 99, '\\x00')", [last - 2, last - 1]);
        const end = T0 + 60 * (DAY / 4);
        await pruneRecordedHistory(pool, location, end, undefined, end + 1);
        assert.equal((await pool.query("SELECT 1 FROM answer_changes WHERE vpa = 'planted@ybl'")).rowCount, 2);

        // One prune at a time: while another holds the prune's lock, a prune does nothing and is not recorded.
        const other = await connectStore(location);
        try {
          await other.query('SELECT pg_advisory_lock(hashtext($1))', [`upi-risk answer prune ${location.schema}`]);
          assert.equal(await pruneRecordedHistory(pool, location, end + DAY, undefined, end + 2), null);
          assert.equal(await lastPrunedAt(pool, location), end + 1);
        } finally {
          await other.end();
        }
        assert.equal(await pruneRecordedHistory(pool, location, end + DAY, undefined, end + 3), 0, 'the lock let go with its connection');
        assert.equal(await lastPrunedAt(pool, location), end + 3);
        await log.close();
      }));
    } finally {
      await pool.end();
    }
  });
});
