import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PUBLISH_WHEN_ASKED, appendToLog, withTestSchema, testClient } from '../store-fixtures.js';
import { buildInProcess, evidence, tempDataDir, until, type EvidenceInput } from '../helpers.js';
import { migrate } from '../../src/store/migrations.js';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { FollowerService } from '../../src/fleet/follower-service.js';
import { logClearance, logClearanceEnd, logRetraction } from '../../src/store/correction-log.js';

test('corrections in the log are served by every follower from the log, in order, and built into the next publication', { timeout: 180_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const items: EvidenceInput[] = [
      evidence('mule@ybl', 'https://bad.example/1', { evidence_id: 'm1', captured_at: '2026-06-01T00:00:00Z' }),
      evidence('mule@ybl', 'https://bad.example/2', { evidence_id: 'm2', captured_at: '2026-06-02T00:00:00Z' }),
      evidence('shop@ybl', 'https://copied.example', { evidence_id: 's1', captured_at: '2026-06-03T00:00:00Z' }),
      evidence('peer@ybl', 'https://copied.example', { evidence_id: 'p1', captured_at: '2026-06-03T00:00:00Z' }),
    ];
    await appendToLog(location, items);
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 100, policy: PUBLISH_WHEN_ASKED });
    const client = await testClient(location);
    const followers: FollowerService[] = [];
    try {
      await until('first publication', 30_000, () => builder.published !== null);
      for (let i = 0; i < 2; i++) followers.push(await FollowerService.start({ location, dataDir: (await tempDataDir()).dir, pollMs: 200 }));
      const servedEverywhere = (what: string, check: (f: FollowerService) => boolean) => until(what, 5_000, () => followers.every(check));

      // A retraction: both followers answer without the item, at the retraction's position.
      const retraction = await logRetraction(client, location, ['m1', 'unknown-id'], 'analyst found the page was not fraud', 'key_analyst');
      assert.deepEqual({ ...retraction, position: null }, { position: null, earlierPosition: null, retracted: 1, unknown: ['unknown-id'], alreadyRetracted: 0, upis: ['mule@ybl'] });
      await servedEverywhere('the retraction served', (f) => f.view.verdict('mule@ybl').evidence_count === 1);
      assert.deepEqual(
        followers.map((f) => f.position),
        [retraction.position, retraction.position],
      );
      assert.equal(followers[0]!.view.version, followers[1]!.view.version);
      const again = await logRetraction(client, location, ['m1'], 'again', 'key_analyst');
      // Named by the earlier retraction's position, which an answer waits to be served.
      assert.deepEqual(
        { retracted: again.retracted, alreadyRetracted: again.alreadyRetracted, position: again.position, earlierPosition: again.earlierPosition },
        { retracted: 0, alreadyRetracted: 1, position: null, earlierPosition: retraction.position },
      );

      // A clearance: CLEARED everywhere; evidence from its url later still does not count, from a new url it does.
      const cleared = await logClearance(client, location, {
        id: 'clr_test1',
        upi: 'shop@ybl',
        reason: 'merchant verified',
        reference: null,
        createdAt: Date.parse('2026-07-01T00:00:00Z'),
        createdBy: 'key_admin',
        countsFrom: 0,
      });
      assert.ok('stored' in cleared);
      assert.deepEqual(cleared.stored.urls, ['https://copied.example']);
      const conflict = await logClearance(client, location, { id: 'clr_test2', upi: 'shop@ybl', reason: 'twice', reference: null, createdAt: Date.now(), createdBy: 'key_admin', countsFrom: 0 });
      assert.ok('conflict' in conflict && conflict.conflict.id === 'clr_test1');
      await servedEverywhere('the clearance served', (f) => f.view.verdict('shop@ybl').status === 'CLEARED');
      const later = [
        evidence('shop@ybl', 'https://copied.example', { evidence_id: 's2', captured_at: '2026-08-01T00:00:00Z' }),
        evidence('shop@ybl', 'https://new-scam.example', { evidence_id: 's3', captured_at: '2026-08-02T00:00:00Z' }),
      ];
      await appendToLog(location, later);
      await servedEverywhere('new evidence from a new url', (f) => f.view.verdict('shop@ybl').status === 'FLAGGED');
      for (const f of followers) assert.deepEqual(f.view.verdict('shop@ybl').sources.map((s) => s.url), ['https://new-scam.example']);

      // Counting now: m1 retracted; shop's evidence before the clearance and from its url suppressed.
      const counting = [...items, ...later].filter((i) => i.evidence_id !== 'm1' && !(i.upi === 'shop@ybl' && i.evidence_id !== 's3'));
      builder.requestBuild();
      await servedEverywhere('a publication built under the corrections', (f) => f.publication.seq > 1 && f.delta.meta.vpaCount === 0);
      const full = buildInProcess(counting, followers[0]!.current.meta.scoredAt);
      const late = await FollowerService.start({ location, dataDir: (await tempDataDir()).dir, pollMs: 200 });
      followers.push(late);
      for (const f of followers) {
        for (const upi of ['mule@ybl', 'shop@ybl', 'peer@ybl']) {
          assert.deepEqual({ ...f.view.verdict(upi), cluster_id: null }, { ...full.verdict(upi), cluster_id: null }, upi);
        }
      }

      // Its end: what it suppressed counts again, everywhere.
      const ended = await logClearanceEnd(client, location, 'clr_test1', 'key_admin', Date.now());
      assert.notEqual(ended?.position ?? null, null);
      assert.equal((await logClearanceEnd(client, location, 'clr_test1', 'key_admin', Date.now()))?.position, null);
      assert.equal(await logClearanceEnd(client, location, 'clr_nope', 'key_admin', Date.now()), null);
      await servedEverywhere('the clearance ended', (f) => f.view.verdict('shop@ybl').evidence_count === 3);
    } finally {
      for (const f of followers) await f.close();
      await client.end();
      await builder.close();
      await t.cleanup();
    }
  });
});
