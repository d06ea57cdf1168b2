import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { silentLogger, type Logger } from '../../src/common/logger.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { snapshotPath } from '../../src/engine/snapshot-files.js';
import { readLastServed, recordLastServed } from '../../src/service/last-served-snapshot.js';
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

interface Compacted {
  readonly t: Awaited<ReturnType<typeof tempDataDir>>;
  /** The snapshot first served, and the compaction's. */
  readonly first: string;
  readonly compacted: string;
  /** one@ybl's answer after the compaction: in a cluster. */
  readonly clustered: ReturnType<SnapshotService['view']['verdict']>;
}

/** A data directory served from, then compacted: two VPAs sharing a URL, which the delta serves flagged and the compaction puts in a cluster. */
async function compactedDir(): Promise<Compacted> {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('first@ybl', 'https://first.example')]);
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT });
  try {
    const first = service.current.meta.id;
    assert.deepEqual(await readLastServed(t.dir), { kind: 'snapshot', snapshot: first });
    // Recorded before the swap serves it.
    const recordedAtSwap: unknown[] = [];
    service.onSwap((event) => recordedAtSwap.push([JSON.parse(readFileSync(t.dir.servedSnapshot, 'utf8')), event.next.meta.id]));
    await ingest(t.dir, t.root, [evidence('one@ybl', SHARED), evidence('two@ybl', SHARED)]);
    await service.refresh();
    assert.equal(service.view.verdict('one@ybl').cluster_id, null);
    await service.compact();
    const compacted = service.current.meta.id;
    assert.deepEqual(recordedAtSwap, [[{ snapshot: compacted }, compacted]]);
    const clustered = service.view.verdict('one@ybl');
    assert.notEqual(clustered.cluster_id, null);
    return { t, first, compacted, clustered };
  } finally {
    await service.close();
  }
}

/**
 * Compact a data directory (compactedDir), change it as `change` does, start
 * a service on it again and `check` it; warnings logged at that start are
 * in `warned`.
 */
async function startedAgain(change: (c: Compacted) => Promise<void>, check: (c: Compacted, service: SnapshotService, warned: readonly string[]) => Promise<void>): Promise<void> {
  const c = await compactedDir();
  try {
    await change(c);
    const warned: string[] = [];
    const service = await SnapshotService.start({ dataDir: c.t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, logger: warnings(warned) });
    try {
      await check(c, service, warned);
    } finally {
      await service.close();
    }
  } finally {
    await c.t.cleanup();
  }
}

/** Served after a start that built because the snapshot last served was lost: newer than it, the cluster as it was, and recorded. */
async function assertBuiltAgain(c: Compacted, service: SnapshotService, warned: readonly string[]): Promise<void> {
  assert.notEqual(service.lastBuild, null, 'built before serving');
  assert.ok(service.current.meta.id > c.compacted, 'a snapshot newer than the one last served');
  assert.ok(warned.some((m) => m.startsWith('the snapshot last served was not written')), warned.join('; '));
  const answer = service.view.verdict('one@ybl');
  assert.equal(answer.cluster_id, c.clustered.cluster_id);
  assert.equal(answer.cluster_size, c.clustered.cluster_size);
  assert.equal(service.view.verdict('first@ybl').status, 'FLAGGED');
  assert.deepEqual(await readLastServed(c.t.dir), { kind: 'snapshot', snapshot: service.current.meta.id });
}

test('a start that cannot load the snapshot last served builds one before serving, so that clusters do not go back', async () => {
  // Killed after the swap, before the file was written: the data directory holds only the snapshot before it.
  await startedAgain((c) => rm(snapshotPath(c.t.dir, c.compacted)), assertBuiltAgain);
});

test('the snapshot last served refused as damaged: built again, not the older one served', async () => {
  await startedAgain(async (c) => {
    const path = snapshotPath(c.t.dir, c.compacted);
    const bytes = await readFile(path);
    bytes[bytes.length - 10]! ^= 0xff;
    await writeFile(path, bytes);
  }, assertBuiltAgain);
});

test('without the record (a directory from before it), the older snapshot is served, and its cluster has gone back', async () => {
  await startedAgain(
    async (c) => {
      await rm(snapshotPath(c.t.dir, c.compacted));
      await rm(c.t.dir.servedSnapshot);
    },
    async (c, service) => {
      assert.equal(service.lastBuild, null);
      assert.equal(service.current.meta.id, c.first);
      assert.equal(service.view.verdict('one@ybl').status, 'FLAGGED', 'served from the delta');
      assert.equal(service.view.verdict('one@ybl').cluster_id, null, 'what the record prevents');
    },
  );
});

test('a snapshot newer than the one last served (another process built it) is served without building', async () => {
  await startedAgain(
    (c) => recordLastServed(c.t.dir, c.first),
    async (c, service) => {
      assert.equal(service.lastBuild, null);
      assert.equal(service.current.meta.id, c.compacted);
      assert.deepEqual(await readLastServed(c.t.dir), { kind: 'snapshot', snapshot: c.compacted });
    },
  );
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
