import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT, type EvidenceInput } from '../helpers.js';

// A builder closed while it reads stored evidence ahead or builds cuts that
// work short (its threads ended), rather than making the stop wait for it:
// what it was making is not kept, and the next builder of the directory
// builds as if it had never begun.

function batch(size: number): EvidenceInput[] {
  return Array.from({ length: size }, (_, i) => evidence(`payee${i}@ybl`, `https://t.me/group${i % 97}`, { evidence_id: `item-${i}` }));
}

test('close cuts a read-ahead and a build short, and a later builder builds the directory whole', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, batch(4000));
    // Small chunks: many tasks, so that the work is still under way when close is called.
    const reading = new SnapshotBuilder({ threads: 2, chunkBytes: 4096 });
    const priming = reading.prime(t.dir);
    await reading.close();
    await assert.rejects(priming, (error: Error) => error.name === 'AbortError', 'the read-ahead was cut short');

    const building = new SnapshotBuilder({ threads: 2, chunkBytes: 4096 });
    const build = building.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT });
    await building.close();
    await assert.rejects(build, (error: Error) => error.name === 'AbortError', 'the build was cut short');
    assert.deepEqual((await readdir(t.dir.snapshots).catch(() => [] as string[])).filter((name) => name.endsWith('.upisnap')), [], 'no snapshot written');

    const again = new SnapshotBuilder({ threads: 2, chunkBytes: 4096 });
    try {
      const report = await again.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT });
      assert.equal(report.meta.vpaCount, 4000);
    } finally {
      await again.close();
    }
  } finally {
    await t.cleanup();
  }
});
