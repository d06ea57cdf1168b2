import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import type { SnapshotData } from '../../src/engine/snapshot-data.js';
import { sameBuildDifferences } from '../fixtures/fake-snapshot.js';
import { tempDataDir, ingest, evidence, TEST_SCORED_AT } from '../helpers.js';

// The working memory a pool thread keeps for its next task (build-worker.ts)
// is let go as the snapshot is assembled where the builder is told to, and
// kept otherwise; the snapshot is the same either way.

const ITEMS = Array.from({ length: 400 }, (_, i) => evidence(`payee${i}@ybl`, `https://t.me/channel${i % 13}`));

for (const threads of [1, 2]) {
  test(`a build told to release its working memory keeps none, one that is not keeps it (${threads} thread${threads === 1 ? '' : 's'})`, async () => {
    const t = await tempDataDir();
    try {
      await ingest(t.dir, t.root, ITEMS);
      const built: SnapshotData[] = [];
      for (const releaseWorkingMemory of [true, false]) {
        const builder = new SnapshotBuilder({ threads, releaseWorkingMemory });
        try {
          const report = await builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT });
          if (releaseWorkingMemory) assert.equal(report.workingBytesKept, 0);
          else assert.ok(report.workingBytesKept > 0, `kept ${report.workingBytesKept} bytes`);
          built.push(await readSnapshotFile(report.path));
        } finally {
          await builder.close();
        }
      }
      assert.deepEqual(sameBuildDifferences(built[0]!, built[1]!), []);
    } finally {
      await t.cleanup();
    }
  });
}

test("a server's compactions keep no working memory for the next", async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, ITEMS.slice(0, 200));
    const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, scoredAt: () => TEST_SCORED_AT });
    try {
      await ingest(t.dir, t.root, ITEMS.slice(200));
      await service.refresh();
      await service.compact();
      assert.equal(service.current.verdict('payee399@ybl').status, 'FLAGGED');
      assert.equal(service.lastBuild?.workingBytesKept, 0);
    } finally {
      await service.close();
    }
  } finally {
    await t.cleanup();
  }
});
