import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PUBLISH_WHEN_ASKED, appendToLog, published, withTestSchema, testClient } from '../store-fixtures.js';
import { evidence, ndjson, tempDataDir, until } from '../helpers.js';
import { migrate } from '../../src/store/migrations.js';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { KEPT_PUBLICATIONS } from '../../src/store/snapshot-publications.js';

test('one builder is active; when it stops a standby takes over, and cluster ids carry on from the publication', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    // Two gangs: each pair shares a url, so each forms a cluster.
    await appendToLog(location, [
      evidence('a1@ybl', 'https://gang-a.example'),
      evidence('a2@ybl', 'https://gang-a.example'),
      evidence('b1@ybl', 'https://gang-b.example'),
      evidence('b2@ybl', 'https://gang-b.example'),
    ]);
    const dirs = [await tempDataDir(), await tempDataDir()];
    const roles = await Promise.all(dirs.map((t) => BuilderRole.start({ location, dataDir: t.dir, pollMs: 100, policy: PUBLISH_WHEN_ASKED })));
    try {
      await until('a first publication', 30_000, () => roles.some((r) => r.published !== null));
      assert.equal(roles.filter((r) => r.active).length, 1, 'exactly one builder is active');
      const active = roles.find((r) => r.active)!;
      const standby = roles.find((r) => !r.active)!;
      const first = await published(location, active.published!);
      const clusters = new Map(['a1@ybl', 'a2@ybl', 'b1@ybl', 'b2@ybl'].map((upi) => [upi, first.verdict(upi).cluster_id]));
      assert.ok([...clusters.values()].every((id) => id !== null));

      await active.close();
      const tookOver = await until('the standby active', 10_000, () => standby.active);
      assert.ok(tookOver < 10_000);
      // New evidence that changes the clusters' order of creation: ids must not move.
      await appendToLog(location, [evidence('c1@ybl', 'https://gang-c.example'), evidence('c2@ybl', 'https://gang-c.example'), evidence('a3@ybl', 'https://gang-a.example')]);
      standby.requestBuild();
      await until('the standby publishes', 30_000, () => standby.published !== null);
      const second = await published(location, standby.published!);
      assert.equal(standby.published!.position, 7);
      for (const [upi, id] of clusters) assert.equal(second.verdict(upi).cluster_id, id, `${upi} keeps its cluster`);
      assert.equal(second.verdict('a3@ybl').cluster_id, clusters.get('a1@ybl'));
      assert.ok(second.verdict('c1@ybl').cluster_id !== null);
    } finally {
      await Promise.all(roles.map((r) => r.close()));
      await Promise.all(dirs.map((t) => t.cleanup()));
    }
  });
});

test('the store keeps the three newest publications, each whole', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const role = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED });
    const client = await testClient(location);
    try {
      // The first publication, made at start, would otherwise end the first round's wait without its evidence,
      // and every later round would wait for the build of the round before.
      await until('the first publication', 30_000, () => role.published !== null);
      for (let i = 0; i < KEPT_PUBLICATIONS + 2; i++) {
        await appendToLog(location, [evidence(`round${i}@ybl`, `https://round${i}.example`)]);
        const before = role.published?.seq ?? 0;
        role.requestBuild();
        await until(`publication ${i + 1}`, 30_000, () => (role.published?.seq ?? 0) > before);
      }
      const rows = (await client.query<{ seq: string; chunks: number; parts: string }>(
        'SELECT s.seq, s.chunks, (SELECT count(*) FROM snapshot_chunks c WHERE c.seq = s.seq) AS parts FROM snapshots s ORDER BY s.seq',
      )).rows;
      assert.equal(rows.length, KEPT_PUBLICATIONS);
      for (const row of rows) assert.equal(Number(row.parts), row.chunks);
      assert.equal(Number(rows[rows.length - 1]!.seq), role.published!.seq);
      assert.equal((await client.query('SELECT count(*)::int AS n FROM snapshot_chunks WHERE seq NOT IN (SELECT seq FROM snapshots)')).rows[0]!.n, 0);
      const newest = await published(location, role.published!);
      assert.equal(newest.verdict(`round${KEPT_PUBLICATIONS + 1}@ybl`).status, 'FLAGGED');
    } finally {
      await client.end();
      await role.close();
      await t.cleanup();
    }
  });
});

test('a builder whose mirror does not match the store mirrors the log again', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    await appendToLog(location, [evidence('real@ybl', 'https://real.example')]);
    const t = await tempDataDir();
    // Left by a builder of another store: a mirror at a position this log holds with another item.
    await mkdir(t.dir.state, { recursive: true });
    await writeFile(join(t.dir.state, 'log-mirror.json'), JSON.stringify({ schema: location.schema, position: 1, evidenceId: 'not-this-one' }));
    await mkdir(t.dir.evidence, { recursive: true });
    await writeFile(join(t.dir.evidence, '1700000000000-00000000.ndjson'), ndjson([evidence('stale@ybl', 'https://stale.example')]));
    const role = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED });
    try {
      await until('a publication', 30_000, () => role.published !== null);
      const view = await published(location, role.published!);
      assert.equal(view.verdict('real@ybl').status, 'FLAGGED');
      assert.equal(view.verdict('stale@ybl').status, 'CLEARED', 'nothing of the old mirror is built');
    } finally {
      await role.close();
      await t.cleanup();
    }
  });
});
