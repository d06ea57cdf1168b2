import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startBuilder } from '../server-process.js';
import { tempDataDir, until } from '../helpers.js';
import { testClient, withTestSchema } from '../store-fixtures.js';
import { migrate } from '../../src/store/migrations.js';

// A standby `upi-risk builder` has no connection open between its tries for the lease, and the role's timer
// does not hold the process: it once exited, status 0, as its pool's idle connections closed (30 s after its
// start), and no builder was left to take over. The wait below outlasts that idle timeout.
const POOL_IDLE_MS = 30_000;

test('a standby builder stays up past its idle connections and takes the lease once it is free', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const holder = await testClient(location);
    const t = await tempDataDir();
    // The lease held by another session, as an active builder holds it.
    await holder.query('SELECT pg_advisory_lock(hashtext($1))', [`upi-risk builder ${location.schema}`]);
    const standby = startBuilder(['--store', location.url, '--store-schema', location.schema, '--data-dir', t.dir.root, '--poll-ms', '200']);
    try {
      await new Promise((resolve) => setTimeout(resolve, POOL_IDLE_MS + 5_000));
      assert.equal(standby.child.exitCode, null, `the standby exited: ${standby.stderr()}`);
      assert.equal(standby.active(), false, 'it did not take a lease another session holds');
      await holder.end();
      await until('the standby active', 10_000, () => standby.active());
    } finally {
      await holder.end().catch(() => {});
      await standby.stop();
      await t.cleanup();
    }
  });
});
