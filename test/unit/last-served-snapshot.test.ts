import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { silentLogger, type Logger } from '../../src/common/logger.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { snapshotPath } from '../../src/engine/snapshot-files.js';
import { readLastServed } from '../../src/service/last-served-snapshot.js';
import { tempDataDir, ingest, evidence, TEST_SCORED_AT } from '../helpers.js';

const SHARED = 'https://shared.example/pay';

function warnings(into: string[]): Logger {
  return { ...silentLogger, warn: (_fields, message) => into.push(String(message)) };
}

/** A data directory served from once, with kept@ybl flagged: the id of the snapshot served. */
async function servedOnce(t: Awaited<ReturnType<typeof tempDataDir>>): Promise<string> {
  await ingest(t.dir, t.root, [evidence('kept@ybl', 'https://u.example')]);
  const first = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1 });
  const id = first.current.meta.id;
  await first.close();
  return id;
}

test('a start that cannot load the snapshot last served builds one before serving, so that clusters do not go back', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [evidence('first@ybl', 'https://first.example')]);
    const before = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT });
    let compacted: string;
    let clustered: ReturnType<SnapshotService['view']['verdict']>;
    try {
      assert.deepEqual(await readLastServed(t.dir), { kind: 'snapshot', snapshot: before.current.meta.id });
      // Two VPAs sharing a URL: the delta serves them flagged, a compaction puts them in a cluster.
      await ingest(t.dir, t.root, [evidence('one@ybl', SHARED), evidence('two@ybl', SHARED)]);
      await before.refresh();
      assert.equal(before.view.verdict('one@ybl').cluster_id, null);
      await before.compact();
      compacted = before.current.meta.id;
      clustered = before.view.verdict('one@ybl');
      assert.notEqual(clustered.cluster_id, null);
      assert.deepEqual(await readLastServed(t.dir), { kind: 'snapshot', snapshot: compacted });
    } finally {
      await before.close();
    }

    // Killed after the swap, before the file was written: the data directory holds only the snapshot before it.
    await rm(snapshotPath(t.dir, compacted));
    const warned: string[] = [];
    const after = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, logger: warnings(warned) });
    try {
      assert.notEqual(after.lastBuild, null, 'built before serving');
      assert.ok(after.current.meta.id > compacted, 'a snapshot newer than the one last served');
      assert.ok(warned.some((m) => m.startsWith('the snapshot last served was not written')), warned.join('; '));
      const answer = after.view.verdict('one@ybl');
      assert.equal(answer.cluster_id, clustered.cluster_id);
      assert.equal(answer.cluster_size, clustered.cluster_size);
      assert.equal(after.view.verdict('first@ybl').status, 'FLAGGED');
      assert.deepEqual(await readLastServed(t.dir), { kind: 'snapshot', snapshot: after.current.meta.id });
    } finally {
      await after.close();
    }
  } finally {
    await t.cleanup();
  }
});

test('a start whose snapshot last served loads serves it without building', async () => {
  const t = await tempDataDir();
  try {
    const id = await servedOnce(t);
    const warned: string[] = [];
    const again = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, logger: warnings(warned) });
    try {
      assert.equal(again.current.meta.id, id);
      assert.equal(again.lastBuild, null);
      assert.deepEqual(warned, []);
    } finally {
      await again.close();
    }
  } finally {
    await t.cleanup();
  }
});

test('a record of the snapshot last served that is not what the service writes is refused, and a snapshot built before serving', async () => {
  for (const text of ['not json', '{"snapshot": "latest"}', '{"snapshot": "20261122T051700123Z-3fa9c1", "more": 1}', '[]', 'null']) {
    const t = await tempDataDir();
    try {
      const id = await servedOnce(t);
      await writeFile(t.dir.servedSnapshot, text);
      assert.equal((await readLastServed(t.dir)).kind, 'unreadable', text);
      const warned: string[] = [];
      const again = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, logger: warnings(warned) });
      try {
        assert.notEqual(again.lastBuild, null, text);
        assert.ok(again.current.meta.id > id, text);
        assert.ok(warned.some((m) => m.startsWith('the record of the snapshot last served cannot be read')), text);
        assert.equal(again.view.verdict('kept@ybl').status, 'FLAGGED');
        // Written again for the snapshot now served.
        assert.deepEqual(await readLastServed(t.dir), { kind: 'snapshot', snapshot: again.current.meta.id });
      } finally {
        await again.close();
      }
    } finally {
      await t.cleanup();
    }
  }
});
