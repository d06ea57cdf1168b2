import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, StoreError } from '../../src/common/errors.js';
import { evidenceOfVpas } from '../../src/store/correction-log.js';
import { copyLog, readLog } from '../../src/store/log-reader.js';
import { migrate } from '../../src/store/migrations.js';
import { storePool } from '../../src/store/postgres.js';
import { appendToLog, testClient, withTestSchema } from '../store-fixtures.js';
import { evidence } from '../helpers.js';

// A row of the evidence log that another writer made huge (a url of 4 MB)
// is refused by every reader of the log as bad data, without being read
// whole: queries read each text column cut one character past its bound,
// the builder's COPY keeps at most 64 KiB of a row.

test('an oversized row of the log is refused by each reader, and the rows before it are read', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    await appendToLog(location, [evidence('first@ybl', 'https://first.example', { evidence_id: 'e-1' }), evidence('huge@ybl', 'https://huge.example', { evidence_id: 'e-2' })]);
    const client = await testClient(location);
    const pool = storePool(location, 2);
    try {
      await client.query(`UPDATE evidence SET url = 'https://huge.example/' || repeat('x', 4 * 1024 * 1024) WHERE evidence_id = 'e-2'`);
      const isOversized = (error: unknown) => error instanceof StoreError && error.code === ErrorCode.STORE_DATA && error.message.length < 1_000;

      await assert.rejects(readLog(pool, location, 0, 10), (error) => isOversized(error) && /position 2 breaks the ingestion contract: url must be 1 to 2048/.test((error as Error).message));
      await assert.rejects(evidenceOfVpas(pool, location, ['huge@ybl'], 2), isOversized);
      assert.equal((await evidenceOfVpas(pool, location, ['first@ybl'], 2)).length, 1, 'rows within the bounds read as before');

      const seen: number[] = [];
      await assert.rejects(
        copyLog(pool, location, 0, 10, (entry) => {
          seen.push(entry.position);
          return undefined;
        }),
        (error) => isOversized(error) && /row after position 1 is longer than 65536 bytes/.test((error as Error).message),
      );
      assert.deepEqual(seen, [1]);
      // The connection the COPY ran on went back to the pool usable.
      assert.equal((await readLog(pool, location, 0, 1)).length, 1);
    } finally {
      await client.end();
      await pool.end();
    }
  });
});
