import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile, mkdir, access } from 'node:fs/promises';
import { join } from 'node:path';
import { SnapshotBuilder, acquireBuildLock } from '../../src/builder/snapshot-builder.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { UpiRiskError } from '../../src/common/errors.js';
import type { Logger } from '../../src/common/logger.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT } from '../helpers.js';

// One build at a time per data folder: a serving process and an operator's
// `upi-risk build` share it through state/build.lock, holding the owner's pid.

/** A live process other than this one, to own the lock. */
function otherProcess() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: child.pid!,
    stop: () => {
      child.kill();
      return exited;
    },
  };
}

const exists = (path: string) => access(path).then(() => true, () => false);

test('a build refuses a lock held by a live process with ERR_BUILD_LOCKED, and takes over one left by a dead process', async () => {
  const t = await tempDataDir();
  const builder = new SnapshotBuilder({ threads: 1 });
  const owner = otherProcess();
  const lock = join(t.dir.state, 'build.lock');
  try {
    await ingest(t.dir, t.root, [evidence('locked.out@ybl', 'https://t.me/lockchannel')]);
    const first = await builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT });
    assert.ok(builder.carriedBytes > 0);
    await ingest(t.dir, t.root, [evidence('locked.out.too@ybl', 'https://t.me/lockchannel')]);
    await writeFile(lock, String(owner.pid));
    await assert.rejects(builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT }), (error: unknown) => {
      assert.ok(error instanceof UpiRiskError);
      assert.equal(error.code, 'ERR_BUILD_LOCKED');
      assert.match(error.message, new RegExp(`pid ${owner.pid}`));
      return true;
    });
    assert.equal(await readFile(lock, 'utf8'), String(owner.pid), 'the live owner keeps its lock');
    assert.equal(builder.carriedBytes, first.carriedBytes, 'a build refused the lock keeps what the last one carried');

    await owner.stop();
    const report = await builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT });
    assert.equal(report.meta.vpaCount, 2);
    assert.equal(report.reusedChunks, first.chunks, 'and the next build reuses it');
    assert.equal(await exists(lock), false, 'the lock is released after the build');
  } finally {
    await owner.stop();
    await builder.close();
    await t.cleanup();
  }
});

test('a lock file that holds no pid (torn by a crash while it was written) is taken over', async () => {
  const t = await tempDataDir();
  try {
    await mkdir(t.dir.state, { recursive: true });
    await writeFile(join(t.dir.state, 'build.lock'), 'not a pid\n');
    const release = await acquireBuildLock(t.dir);
    assert.equal(await readFile(join(t.dir.state, 'build.lock'), 'utf8'), String(process.pid));
    await release();
    assert.equal(await exists(join(t.dir.state, 'build.lock')), false);
  } finally {
    await t.cleanup();
  }
});

test('a service whose rebuild finds the lock taken logs it once, keeps serving, and builds when the lock is free', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('first.seen@ybl', 'https://t.me/lockchannel')]);
  const lines: string[] = [];
  const logger: Logger = { debug: () => {}, info: (_, message) => lines.push(message), warn: (_, message) => lines.push(message), error: (_, message) => lines.push(message) };
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, logger });
  const owner = otherProcess();
  try {
    await ingest(t.dir, t.root, [evidence('second.seen@ybl', 'https://t.me/lockchannel')]);
    await writeFile(join(t.dir.state, 'build.lock'), String(owner.pid));
    const served = service.current.meta.id;
    for (let pass = 0; pass < 3; pass++) await service.refresh();
    assert.equal(service.current.meta.id, served, 'the snapshot in service stays');
    assert.equal(service.current.verdict('second.seen@ybl').status, 'CLEARED');
    assert.equal(lines.filter((line) => line.startsWith('build skipped')).length, 1, lines.join('\n'));
    assert.equal(lines.filter((line) => line.startsWith('new evidence')).length, 1, 'nor is the new evidence announced at every pass');

    await owner.stop();
    await service.refresh();
    assert.equal(service.current.verdict('second.seen@ybl').status, 'FLAGGED');
    assert.equal(lines.filter((line) => line === 'build finished').length, 1, lines.join('\n'));
  } finally {
    await owner.stop();
    await service.close();
    await t.cleanup();
  }
});
