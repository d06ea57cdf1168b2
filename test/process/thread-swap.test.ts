import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDataDir, ingest, evidence, snapshotsByThread } from '../helpers.js';
import { startServer } from '../server-process.js';

test('a snapshot swap reaches every serving thread', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('first@ybl', 'https://u.example')]);
  const server = await startServer(t.dir.root, { args: ['--threads', '2'] });
  try {
    const before = await snapshotsByThread(server.base, 2);
    const initial = new Set(before.values());
    assert.equal(initial.size, 1, 'both threads start on the same snapshot');

    await ingest(t.dir, t.root, [evidence('second@ybl', 'https://v.example')]);
    // Served from the delta at once; the snapshot swap is the compaction's.
    server.child.kill('SIGUSR2');
    let after = new Map<number, string>();
    const deadline = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 200));
      after = await snapshotsByThread(server.base, 2);
    } while ([...after.values()].some((id) => initial.has(id)) && Date.now() < deadline);
    const ids = new Set(after.values());
    assert.equal(ids.size, 1, 'both threads serve the same new snapshot');
    assert.equal(initial.has([...ids][0]!), false, 'and it is the new one');
  } finally {
    assert.equal(await server.stop(), 0);
    await t.cleanup();
  }
});
