import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StoreLease } from '../../src/store/store-lease.js';
import { silentLogger } from '../../src/common/logger.js';
import { TEST_STORE_URL, newTestLocation } from '../store-fixtures.js';
import { until } from '../helpers.js';
import pg from 'pg';

test('a lease holder whose connection stops answering gives the lease up, and takes it again once it can', { timeout: 60_000 }, async () => {
  const location = newTestLocation();
  const db = new pg.Client({ connectionString: TEST_STORE_URL });
  await db.connect();
  let running = 0;
  let starts = 0;
  const lease = new StoreLease(
    location,
    { lock: 'test', name: 'test', duty: 'is tested' },
    silentLogger,
    () => {
      running++;
      starts++;
      return Promise.resolve(() => {
        running--;
        return Promise.resolve();
      });
    },
    100,
    500,
  );
  let stopped: number | null = null;
  try {
    lease.start();
    await until('the lease taken', 10_000, () => lease.held && running === 1);
    // The backend of the lease's connection: stopped, it holds the lock but answers nothing (as a half-open socket would).
    const { rows } = await db.query<{ pid: number }>(
      "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND objid::bigint = (hashtext($1)::bigint & 4294967295)",
      [lease.lockName],
    );
    assert.equal(rows.length, 1);
    stopped = rows[0]!.pid;
    process.kill(stopped, 'SIGSTOP');
    await until('the lease given up', 10_000, () => !lease.held && running === 0);
    process.kill(stopped, 'SIGCONT');
    stopped = null;
    await until('the lease taken again', 10_000, () => lease.held && running === 1);
    assert.equal(starts, 2);
  } finally {
    if (stopped !== null) process.kill(stopped, 'SIGCONT');
    await lease.close();
    await db.end();
  }
  assert.equal(running, 0, 'closing stops what the lease started');
});
