import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import type { DataDir } from '../../src/common/data-dir.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT, type EvidenceInput } from '../helpers.js';

// A builder stopped while it reads stored evidence ahead or builds cuts
// that work short (its threads ended) rather than making the stop wait for
// it, and keeps nothing of it; but a build whose snapshot was handed on to
// be served goes on until its file is written.

const VPAS = 4000;

function batch(): EvidenceInput[] {
  return Array.from({ length: VPAS }, (_, i) => evidence(`payee${i}@ybl`, `https://t.me/group${i % 97}`, { evidence_id: `item-${i}` }));
}

/** Small chunks and two threads: many tasks, some still running whenever one reports. */
const builder = (): SnapshotBuilder => new SnapshotBuilder({ threads: 2, chunkBytes: 4096 });

async function snapshotFiles(dir: DataDir): Promise<string[]> {
  return (await readdir(dir.snapshots).catch(() => [] as string[])).filter((name) => name.endsWith('.upisnap'));
}

test('a stop cuts a read-ahead and a build short, and keeps nothing of them', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, batch());
    const reading = builder();
    const priming = reading.prime(t.dir);
    await reading.close();
    await assert.rejects(priming, (error: Error) => error.name === 'AbortError', 'the read-ahead was cut short');

    // Stopped once the first chunk is parsed: the other chunks' tasks are queued or running.
    const building = builder();
    let stopped = false;
    const build = building.build({
      dataDir: t.dir,
      scoredAt: TEST_SCORED_AT,
      onProgress: () => {
        if (stopped) return;
        stopped = true;
        building.stop();
      },
    });
    await assert.rejects(build, (error: Error) => error.name === 'AbortError', 'the build was cut short');
    await building.close();
    assert.deepEqual(await snapshotFiles(t.dir), [], 'no snapshot written');

    const again = builder();
    try {
      assert.equal((await again.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT })).meta.vpaCount, VPAS, 'the next builder builds it whole');
    } finally {
      await again.close();
    }
  } finally {
    await t.cleanup();
  }
});

test('a build stopped once its snapshot was handed on writes that snapshot\'s file', async () => {
  const t = await tempDataDir();
  const building = builder();
  try {
    await ingest(t.dir, t.root, batch());
    let handed: string | null = null;
    const report = await building.build({
      dataDir: t.dir,
      scoredAt: TEST_SCORED_AT,
      onAssembled: (data) => {
        handed = data.meta.id;
        // Served from now: a stop must not lose its file.
        building.stop();
      },
    });
    assert.equal(report.meta.id, handed);
    assert.equal((await readSnapshotFile(report.path)).meta.vpaCount, VPAS);
  } finally {
    await building.close();
    await t.cleanup();
  }
});
