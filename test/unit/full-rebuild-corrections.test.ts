import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { TEST_SCORED_AT, evidence, ingest, tempDataDir } from '../helpers.js';
import { MemoryCorrections } from '../correction-fixtures.js';

for (const incrementalBuilds of [true, false]) {
  test(`a correction recorded while no server runs is served from the restart (incremental builds ${incrementalBuilds ? 'on' : 'off'})`, async () => {
    const t = await tempDataDir();
    const corrections = new MemoryCorrections();
    const items = [evidence('a@ybl', 'https://x.example', { evidence_id: 'x1' }), evidence('b@ybl', 'https://x.example', { evidence_id: 'x2' })];
    await ingest(t.dir, t.root, items);
    corrections.stored(items);
    const start = () => SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, corrections, incrementalBuilds });
    let s = await start();
    try {
      assert.equal(s.view.verdict('a@ybl').status, 'FLAGGED');
      await s.close();
      // Recorded by `upi-risk retract` while the server is down, or journaled just before a crash cut its rebuild short.
      corrections.retract(new Map([['x1', 'a@ybl']]));
      s = await start();
      assert.equal(s.view.verdict('a@ybl').status, 'CLEARED', 'the retraction is served from the start');
      assert.equal(s.view.verdict('b@ybl').status, 'FLAGGED');
    } finally {
      await s.close();
      await t.cleanup();
    }
  });
}

test('without incremental builds, a correction another process holds the build lock against is refused as not yet served, and served by the next build', async () => {
  const t = await tempDataDir();
  const corrections = new MemoryCorrections();
  const items = [evidence('a@ybl', 'https://x.example', { evidence_id: 'x1' })];
  await ingest(t.dir, t.root, items);
  corrections.stored(items);
  const s = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, corrections, incrementalBuilds: false });
  // A live process named in the lock: another build under way.
  const other = spawn('sleep', ['60']);
  const lock = join(t.dir.state, 'build.lock');
  try {
    await new Promise((resolve) => other.once('spawn', resolve));
    await mkdir(t.dir.state, { recursive: true });
    await writeFile(lock, `${other.pid}\n`);
    const upis = corrections.retract(new Map([['x1', 'a@ybl']]));
    await assert.rejects(s.apply(corrections.state(), upis), /stored; another build holds the lock/);
    assert.equal(s.view.verdict('a@ybl').status, 'FLAGGED', 'not served yet, and not said to be');
    await rm(lock);
    await s.refresh();
    assert.equal(s.view.verdict('a@ybl').status, 'CLEARED', 'the next pass builds it');
  } finally {
    other.kill();
    await rm(lock, { force: true });
    await s.close();
    await t.cleanup();
  }
});
