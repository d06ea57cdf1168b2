import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli, startBuilder, type BuilderProcess } from '../server-process.js';
import { evidence, ndjson, tempDataDir, until } from '../helpers.js';
import { testClient, withTestSchema } from '../store-fixtures.js';
import { downloadSnapshot, listPublications, newestPublication } from '../../src/store/snapshot-publications.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';

/**
 * The active builder killed with SIGKILL at random moments (building,
 * publishing, mirroring, idle), again and again, a standby taking over each
 * time and the killed one started again on its own directory: no
 * publication is ever partial, no acknowledged evidence is lost, and the
 * builders go on publishing.
 */
test('builders killed at any moment publish nothing partial and lose no evidence', { timeout: 300_000 }, async () => {
  await withTestSchema(async (location) => {
    const t = await tempDataDir();
    const store = ['--store', location.url, '--store-schema', location.schema];
    assert.equal((await runCli(['migrate', ...store])).code, 0);
    const demo = join(t.root, 'demo.ndjson');
    assert.equal((await runCli(['demo-data', '--vpas', '20000', '--out', demo])).code, 0);
    assert.equal((await runCli(['ingest', ...store, demo])).code, 0);
    // Every item published at once: builds and publications one after another, so kills land in all of them.
    const args = (n: number) => [...store, '--data-dir', join(t.root, `builder-${n}`), '--poll-ms', '100', '--threads', '1', '--publish-items', '1'];
    const builders: BuilderProcess[] = [startBuilder(args(0)), startBuilder(args(1))];
    const client = await testClient(location);
    const ingested: string[] = [];
    try {
      await until('a first publication', 60_000, async () => (await newestPublication(client, location)) !== null);
      for (let round = 0; round < 5; round++) {
        const upi = `killed.round${round}@ybl`;
        const file = join(t.root, `round-${round}.ndjson`);
        await writeFile(file, ndjson([evidence(upi, `https://round${round}.example`)]));
        assert.equal((await runCli(['ingest', ...store, file])).code, 0);
        ingested.push(upi);
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.floor(Math.random() * 1200)));
        const index = builders.findIndex((b) => b.active() && b.child.exitCode === null && b.child.signalCode === null);
        if (index < 0) continue;
        const active = builders[index]!;
        active.child.kill('SIGKILL');
        await once(active.child, 'exit');
        // Started again on the directory the killed one left, whatever state it is in.
        builders[index] = startBuilder(args(index));
        await until('a builder active again', 10_000, () => builders.some((b) => b.active() && b.child.exitCode === null));
      }
      const head = Number((await client.query<{ position: string }>('SELECT position FROM log_head')).rows[0]!.position);
      await until('a publication of the whole log', 60_000, async () => ((await newestPublication(client, location))?.position ?? 0) >= head);

      // Every publication kept is whole: all its chunks, and bytes that match its checksum.
      const kept = await listPublications(client, location);
      assert.ok(kept.length > 0);
      const views: SnapshotView[] = [];
      for (const publication of kept) {
        const download = await tempDataDir();
        views.push(new SnapshotView(await readSnapshotFile(await downloadSnapshot(client, location, publication, download.dir))));
        await download.cleanup();
      }
      for (const upi of ingested) assert.equal(views[0]!.verdict(upi).status, 'FLAGGED', `${upi} is in the newest publication`);
    } finally {
      await client.end();
      await Promise.all(builders.map((b) => b.stop()));
      await t.cleanup();
    }
  });
});
