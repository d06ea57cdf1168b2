import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../server-process.js';
import { withTestSchema } from '../store-fixtures.js';
import { storePool } from '../../src/store/postgres.js';
import { PostgresAuditLog } from '../../src/store/postgres-audit-log.js';
import { CLI_ACTOR } from '../../src/access/audit-log.js';

// A key revoked while the audit log refused its entry is audited when it is
// revoked again: the fleet's log must say whether it holds an entry.

test("the fleet's audit log says whether it holds an action on a target", { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    assert.equal((await runCli(['migrate', '--store', location.url, '--store-schema', location.schema])).code, 0);
    const pool = storePool(location, 1);
    try {
      const audit = new PostgresAuditLog(pool, location);
      assert.equal(await audit.holds('key.revoked', 'key_000000000001'), false, 'an empty log');
      await audit.append({ actor: CLI_ACTOR, action: 'key.created', target: 'key_000000000001', details: {} });
      await audit.append({ actor: CLI_ACTOR, action: 'key.revoked', target: 'key_000000000002', details: {} });
      assert.equal(await audit.holds('key.revoked', 'key_000000000001'), false, 'another action on the target');
      assert.equal(await audit.holds('key.revoked', 'key_000000000002'), true);
      assert.equal(await audit.holds('key.revoked', "key_0000000000' OR '1'='1"), false, 'a target is a value, not SQL');
    } finally {
      await pool.end();
    }
  });
});
