import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PUBLISH_WHEN_ASKED, appendToLog, withTestSchema, testClient } from '../store-fixtures.js';
import { buildInProcess, evidence, tempDataDir, until } from '../helpers.js';
import { migrate } from '../../src/store/migrations.js';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { FollowerService } from '../../src/fleet/follower-service.js';
import type { Logger } from '../../src/common/logger.js';
import { newestPublication } from '../../src/store/snapshot-publications.js';

/** A logger that keeps what it is told, for asserting on it. */
function recordingLogger(): Logger & { readonly lines: { level: string; fields: Record<string, unknown>; msg: string }[] } {
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => void lines.push({ level, fields, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger & { lines: typeof lines };
}

test('a follower serves the newest publication with the log after it as its delta, and follows both', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const first = [evidence('gang.one@ybl', 'https://shared.example/1'), evidence('gang.two@ybl', 'https://shared.example/1'), evidence('solo@okaxis', 'https://solo.example')];
    await appendToLog(location, first);
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 100, policy: PUBLISH_WHEN_ASKED });
    const follower: { service?: FollowerService } = {};
    try {
      await until('first publication', 30_000, () => builder.published !== null);
      const published = builder.published!;
      assert.equal(published.position, 3);

      const later = [evidence('late.mule@ybl', 'https://late.example', { source_category: 'scam' }), evidence('solo@okaxis', 'https://more.example', { source_category: 'phishing' })];
      const head = await appendToLog(location, later);
      const service = await FollowerService.start({ location, dataDir: (await tempDataDir()).dir, pollMs: 200 });
      follower.service = service;
      // Ready means: the newest snapshot, and the log after it.
      assert.equal(service.current.meta.id, published.id);
      assert.equal(service.position, head);
      assert.equal(service.view.version, `${published.id}+${head}`);
      assert.equal(service.view.verdict('late.mule@ybl').status, 'FLAGGED');

      // The fields the delta settles are those of a full build of all the evidence, at the snapshot's scoring time.
      const full = buildInProcess([...first, ...later], service.current.meta.scoredAt);
      for (const upi of ['late.mule@ybl', 'solo@okaxis']) {
        const { cluster_id: _a, cluster_size: _b, ...served } = service.view.verdict(upi);
        const { cluster_id: _c, cluster_size: _d, ...built } = full.verdict(upi);
        assert.deepEqual(served, built, upi);
      }

      // New evidence: served from the log, before any publication (how soon: the bench's fleet section).
      const fresh = evidence('fresher@paytm', 'https://fresh.example');
      await appendToLog(location, [fresh]);
      await until('new evidence served', 5_000, () => service.view.verdict('fresher@paytm').status === 'FLAGGED');

      // A new publication: swapped in, with nothing lost and the delta emptied.
      builder.requestBuild();
      await until('second publication served', 30_000, () => service.publication.seq > published.seq);
      assert.equal(service.delta.meta.vpaCount, 0);
      assert.equal(service.view.version, service.publication.id);
      for (const upi of ['gang.one@ybl', 'late.mule@ybl', 'fresher@paytm', 'solo@okaxis']) assert.equal(service.view.verdict(upi).status, 'FLAGGED', upi);
      assert.equal(service.view.verdict('solo@okaxis').evidence_count, 2);
      assert.ok(service.storeConnected);
    } finally {
      await follower.service?.close();
      await builder.close();
      await t.cleanup();
    }
  });
});

test('a follower refuses a publication that fails its checksum and a log row that breaks the contract, and keeps serving', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    await appendToLog(location, [evidence('kept@ybl', 'https://kept.example')]);
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 100, policy: PUBLISH_WHEN_ASKED });
    await until('first publication', 30_000, () => builder.published !== null);
    await builder.close();
    const logger = recordingLogger();
    const service = await FollowerService.start({ location, dataDir: (await tempDataDir()).dir, pollMs: 100, logger });
    const client = await testClient(location);
    try {
      const served = service.current.meta.id;
      // A forged publication: the newest one's row again, its bytes changed by one bit.
      await client.query(
        `INSERT INTO snapshots (id, position, size, chunks, sha256, vpas, cluster_ids)
         SELECT '20991231T000000000Z-000001', position, size, chunks, sha256, vpas, cluster_ids FROM snapshots ORDER BY seq DESC LIMIT 1`,
      );
      await client.query(
        `INSERT INTO snapshot_chunks (seq, part, bytes)
         SELECT (SELECT max(seq) FROM snapshots), part, set_byte(bytes, 100, get_byte(bytes, 100) # 1) FROM snapshot_chunks WHERE seq = (SELECT min(seq) FROM snapshots)`,
      );
      await client.query(`SELECT pg_notify($1, 'forged')`, [`${location.schema}_snapshots`]);
      await until('the forged publication refused', 10_000, () => logger.lines.some((l) => l.msg.includes('published snapshot refused')));
      assert.equal(service.current.meta.id, served);
      assert.equal((logger.lines.find((l) => l.msg.includes('published snapshot refused'))!.fields as { code: string }).code, 'ERR_SNAPSHOT_CHECKSUM');

      // A row written behind the service's back, breaking the contract: not served, reported, and the rest goes on.
      await client.query(
        `INSERT INTO evidence (position, evidence_id, upi, url, source_category, risk_category, captured_at_ms, screenshot)
         VALUES ((SELECT position + 1 FROM log_head), 'forged', 'NOT A VPA', 'https://x.example', 0, 0, 0, false)`,
      );
      await client.query('UPDATE log_head SET position = position + 1');
      await until('the bad row reported', 10_000, () => logger.lines.some((l) => l.fields.code === 'ERR_STORE_DATA'));
      assert.equal(service.view.verdict('kept@ybl').status, 'FLAGGED');
      assert.ok((await newestPublication(client, location))!.id.startsWith('2099'));
    } finally {
      await client.end();
      await service.close();
      await t.cleanup();
    }
  });
});
