import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendToLog, published, withTestSchema, testClient } from '../store-fixtures.js';
import { evidence, tempDataDir, until } from '../helpers.js';
import { migrate } from '../../src/store/migrations.js';
import { BuilderRole } from '../../src/roles/builder-role.js';

const DAY = 86_400_000;

test('a builder with an age limit publishes again once evidence it published has expired, and not before', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const expiresInMs = 4000;
    await appendToLog(location, [
      evidence('soon@ybl', 'https://soon.example', { evidence_id: 's1', captured_at: new Date(Date.now() - DAY + expiresInMs).toISOString() }),
      evidence('fresh@ybl', 'https://fresh.example', { evidence_id: 'f1', captured_at: new Date(Date.now() - 3600_000).toISOString() }),
      evidence('gone@ybl', 'https://gone.example', { evidence_id: 'g1', captured_at: new Date(Date.now() - 2 * DAY).toISOString() }),
    ]);
    const t = await tempDataDir();
    // The log does not move after the first publication: only expiry can make another due.
    const role = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 100, policy: { items: 1_000_000, afterMs: 500 }, evidenceMaxAgeMs: DAY });
    const client = await testClient(location);
    try {
      await until('a first publication', 30_000, () => role.published !== null);
      const first = await published(location, role.published!);
      assert.equal(first.meta.evidenceMaxAgeMs, DAY);
      assert.deepEqual(['soon@ybl', 'fresh@ybl', 'gone@ybl'].map((upi) => first.verdict(upi).status), ['FLAGGED', 'FLAGGED', 'CLEARED']);

      await until('a publication without the expired evidence', 60_000, () => role.published !== null && role.published.id !== first.meta.id);
      const second = await published(location, role.published!);
      assert.equal(second.verdict('soon@ybl').status, 'CLEARED');
      assert.equal(second.verdict('fresh@ybl').status, 'FLAGGED');

      // Nothing it holds expires for most of an hour: no further publication, however old this one gets.
      const seq = role.published!.seq;
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const rows = await client.query<{ seq: string }>('SELECT max(seq) AS seq FROM snapshots');
      assert.equal(Number(rows.rows[0]!.seq), seq);
    } finally {
      await client.end();
      await role.close();
      await t.cleanup();
    }
  });
});
