import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cp, readFile, readdir, writeFile, mkdir, access, utimes } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import { acquireBuildLock, parseBuildLock } from '../../src/builder/build-lock.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { recordLastServed } from '../../src/service/last-served-snapshot.js';
import { newSnapshotId } from '../../src/engine/snapshot-files.js';
import { BuildLockedError, UpiRiskError } from '../../src/common/errors.js';
import type { Logger } from '../../src/common/logger.js';
import { dataDir, type DataDir } from '../../src/common/data-dir.js';
import { currentBootId, processStartTicks } from '../../src/common/process-identity.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT } from '../helpers.js';

// One build at a time per data folder: a serving process and an operator's
// `upi-risk build` share it through state/build.lock, naming the owner by pid,
// start time and boot id (a lock naming a pid alone, as older versions wrote, is still honoured).

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
    assert.equal(parseBuildLock(await readFile(join(t.dir.state, 'build.lock'), 'utf8'))?.pid, process.pid);
    await release();
    assert.equal(await exists(join(t.dir.state, 'build.lock')), false);
  } finally {
    await t.cleanup();
  }
});

/**
 * A data directory served from once (its snapshot, older, stays), whose
 * record of the snapshot last served then says what `record` writes, and
 * whose build lock another live process holds: a start on it waits. Then
 * `meanwhile` (the other build's end), and `check` of the service started.
 */
async function startWhileLocked(
  record: (dir: DataDir) => Promise<void>,
  meanwhile: (t: Awaited<ReturnType<typeof tempDataDir>>, owner: ReturnType<typeof otherProcess>) => Promise<void>,
  check: (service: SnapshotService, older: string) => void,
): Promise<void> {
  const t = await tempDataDir();
  const owner = otherProcess();
  try {
    await ingest(t.dir, t.root, [evidence('waits@ybl', 'https://t.me/lockchannel')]);
    const once = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT });
    const older = once.current.meta.id;
    await once.close();
    await record(t.dir);
    await writeFile(join(t.dir.state, 'build.lock'), String(owner.pid));
    const lines: string[] = [];
    const logger: Logger = { debug: () => {}, info: (_, message) => lines.push(message), warn: (_, message) => lines.push(message), error: (_, message) => lines.push(message) };
    let started = false;
    const starting = SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, logger }).then((service) => {
      started = true;
      return service;
    });
    // Not started: neither the older snapshot served, nor a failure.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(started, false, 'waiting');
    assert.equal(lines.filter((line) => line.startsWith('another process is building')).length, 1, lines.join('\n'));
    await meanwhile(t, owner);
    const service = await starting;
    try {
      check(service, older);
      assert.equal(service.view.verdict('waits@ybl').status, 'FLAGGED');
    } finally {
      await service.close();
    }
  } finally {
    await owner.stop();
    await t.cleanup();
  }
}

test('a start that must build while another process holds the lock serves the snapshot that build writes, not an older one meanwhile', async () => {
  let written = '';
  await startWhileLocked(
    // The snapshot last served is not in the directory: a start builds before it serves.
    (dir) => recordLastServed(dir, newSnapshotId(Date.now())),
    async (t) => {
      // The other build's snapshot, made from the same evidence in a directory of its own, is written.
      const other = dataDir(join(t.root, 'other'));
      await cp(t.dir.evidence, other.evidence, { recursive: true });
      const builder = new SnapshotBuilder({ threads: 1 });
      const built = await builder.build({ dataDir: other, scoredAt: TEST_SCORED_AT }).finally(() => builder.close());
      await cp(built.path, join(t.dir.snapshots, basename(built.path)));
      written = built.meta.id;
    },
    (service, older) => {
      assert.equal(service.lastBuild, null, 'not built here');
      assert.equal(service.current.meta.id, written);
      assert.ok(written > older);
    },
  );
});

test('a start whose record of the snapshot last served cannot be read waits for the lock, then builds rather than serve an older snapshot', async () => {
  await startWhileLocked(
    (dir) => writeFile(dir.servedSnapshot, 'torn'),
    // The other build ends without a snapshot: its lock is taken over, and this start builds.
    (_t, owner) => owner.stop(),
    (service, older) => {
      assert.notEqual(service.lastBuild, null);
      assert.ok(service.current.meta.id > older);
    },
  );
});

test('a start that must build and finds a build lock it cannot read fails, rather than wait for no one', async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [evidence('waits@ybl', 'https://t.me/lockchannel')]);
    // A folder where the lock file goes: unreadable as a lock.
    await mkdir(join(t.dir.state, 'build.lock'), { recursive: true });
    await assert.rejects(SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1 }), (error: unknown) => error instanceof BuildLockedError && error.holder === undefined);
  } finally {
    await t.cleanup();
  }
});

test('a service whose compaction finds the lock taken logs it once, keeps serving, and builds when the lock is free', async () => {
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
    await service.refresh();
    // The delta serves the new evidence whoever holds the lock: only compaction needs it.
    assert.equal(service.view.verdict('second.seen@ybl').status, 'FLAGGED');
    for (let pass = 0; pass < 3; pass++) await service.compact();
    assert.equal(service.current.meta.id, served, 'the snapshot in service stays');
    assert.equal(service.current.verdict('second.seen@ybl').status, 'CLEARED');
    assert.equal(service.view.verdict('second.seen@ybl').status, 'FLAGGED');
    assert.equal(lines.filter((line) => line.startsWith('build skipped')).length, 1, lines.join('\n'));
    assert.equal(lines.filter((line) => line.startsWith('building a snapshot')).length, 1, 'nor is the build announced at every pass');

    await owner.stop();
    await service.compact();
    assert.notEqual(service.current.meta.id, served);
    assert.equal(service.current.verdict('second.seen@ybl').status, 'FLAGGED');
    assert.equal(lines.filter((line) => line === 'build finished').length, 1, lines.join('\n'));
  } finally {
    await owner.stop();
    await service.close();
    await t.cleanup();
  }
});

/** A live process other than this one with its start time, as its lock would name it. */
function otherIdentity(owner: { pid: number }) {
  const startTicks = processStartTicks(owner.pid);
  const bootId = currentBootId();
  assert.ok(startTicks !== null && bootId !== null, 'these cases need /proc');
  return { pid: owner.pid, startTicks, bootId };
}

const lockLine = (id: { pid: number; startTicks: number; bootId: string }) => `pid=${id.pid} start=${id.startTicks} boot=${id.bootId}\n`;

async function assertLocked(dir: DataDir, pid: number) {
  await assert.rejects(acquireBuildLock(dir), (error: unknown) => {
    assert.ok(error instanceof UpiRiskError);
    assert.equal(error.code, 'ERR_BUILD_LOCKED');
    assert.match(error.message, new RegExp(`pid ${pid}\\b`));
    return true;
  });
}

async function assertTakenOver(dir: DataDir) {
  const release = await acquireBuildLock(dir);
  const lock = join(dir.state, 'build.lock');
  assert.deepEqual(parseBuildLock(await readFile(lock, 'utf8')), {
    pid: process.pid,
    identity: { pid: process.pid, startTicks: processStartTicks(process.pid), bootId: currentBootId() },
  });
  await release();
  assert.equal(await exists(lock), false);
  assert.deepEqual(await readdir(dir.state), [], 'no temporary file is left beside the lock');
}

test('a lock naming a live process by its pid and start time is respected; its pid with another start time (reused) is taken over', async () => {
  const t = await tempDataDir();
  const owner = otherProcess();
  try {
    await mkdir(t.dir.state, { recursive: true });
    const lock = join(t.dir.state, 'build.lock');
    const id = otherIdentity(owner);
    await writeFile(lock, lockLine(id));
    // Old as it is, the lock names a process that runs: its age does not matter.
    await utimes(lock, new Date(Date.now() - 86_400_000), new Date(Date.now() - 86_400_000));
    await assertLocked(t.dir, owner.pid);
    assert.equal(await readFile(lock, 'utf8'), lockLine(id), 'the live owner keeps its lock');

    await writeFile(lock, lockLine({ ...id, startTicks: id.startTicks + 1 }));
    await assertTakenOver(t.dir);
    await writeFile(lock, lockLine({ ...id, startTicks: Math.max(0, id.startTicks - 100) }));
    await assertTakenOver(t.dir);
  } finally {
    await owner.stop();
    await t.cleanup();
  }
});

test('a lock from another boot is taken over, even when its pid and start time match a live process', async () => {
  const t = await tempDataDir();
  const owner = otherProcess();
  try {
    await mkdir(t.dir.state, { recursive: true });
    const id = otherIdentity(owner);
    const otherBoot = id.bootId.startsWith('0') ? `1${id.bootId.slice(1)}` : `0${id.bootId.slice(1)}`;
    await writeFile(join(t.dir.state, 'build.lock'), lockLine({ ...id, bootId: otherBoot }));
    await assertTakenOver(t.dir);
  } finally {
    await owner.stop();
    await t.cleanup();
  }
});

test('a lock holding a pid alone (older versions) is taken over when its live pid started after the lock was written', async () => {
  const t = await tempDataDir();
  const owner = otherProcess();
  try {
    await mkdir(t.dir.state, { recursive: true });
    const lock = join(t.dir.state, 'build.lock');
    await writeFile(lock, String(owner.pid));
    await assertLocked(t.dir, owner.pid);
    // Written an hour before that process started: it cannot be the owner, whose pid it reused.
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(lock, hourAgo, hourAgo);
    await assertTakenOver(t.dir);
  } finally {
    await owner.stop();
    await t.cleanup();
  }
});

test('a lock with garbage, empty, torn or oversized content is taken over, never a crash', async () => {
  const t = await tempDataDir();
  const owner = otherProcess();
  try {
    await mkdir(t.dir.state, { recursive: true });
    const id = otherIdentity(owner);
    const whole = lockLine(id);
    const contents: (string | Buffer)[] = [
      '',
      '\n',
      whole.slice(0, whole.indexOf(' boot=') + 10), // torn mid-write (older writers wrote in place)
      whole.slice(0, whole.indexOf(' start=')),
      `pid=${id.pid} start=${id.startTicks} boot=not-a-boot-id-but-36-characters-long\n`,
      `pid=0 start=${id.startTicks} boot=${id.bootId}\n`,
      `pid=99999999999 start=1 boot=${id.bootId}\n`,
      '-1',
      `${id.pid}abc`,
      whole + whole,
      whole.padEnd(4096, 'x'),
      Buffer.from([0xff, 0xfe, 0x00, 0x31, 0x32]),
      '{"pid": 1}',
    ];
    for (const content of contents) {
      await writeFile(join(t.dir.state, 'build.lock'), content);
      await assertTakenOver(t.dir);
    }
  } finally {
    await owner.stop();
    await t.cleanup();
  }
});

test('a lock taken by another process with acquireBuildLock holds until that process is killed, then is taken over', async () => {
  const t = await tempDataDir();
  const lockModule = new URL('../../src/builder/build-lock.js', import.meta.url).href;
  const dataDirModule = new URL('../../src/common/data-dir.js', import.meta.url).href;
  const script = `
    const { acquireBuildLock } = await import(${JSON.stringify(lockModule)});
    const { dataDir } = await import(${JSON.stringify(dataDirModule)});
    await acquireBuildLock(dataDir(${JSON.stringify(t.dir.root)}));
    process.stdout.write('locked\\n');
    setInterval(() => {}, 1000);`;
  const holder = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(holder, 'exit');
  try {
    const [first] = (await once(holder.stdout!, 'data')) as [Buffer];
    assert.equal(first.toString(), 'locked\n');
    const content = await readFile(join(t.dir.state, 'build.lock'), 'utf8');
    assert.deepEqual(parseBuildLock(content), { pid: holder.pid, identity: otherIdentity({ pid: holder.pid! }) });
    await assertLocked(t.dir, holder.pid!);

    holder.kill('SIGKILL');
    await exited;
    await assertTakenOver(t.dir);
  } finally {
    holder.kill('SIGKILL');
    await t.cleanup();
  }
});

test('a service keeps building when the lock it finds names a live pid with another start time', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('stale.lock.first@ybl', 'https://t.me/stalelock')]);
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT });
  const owner = otherProcess();
  try {
    await ingest(t.dir, t.root, [evidence('stale.lock.second@ybl', 'https://t.me/stalelock')]);
    const id = otherIdentity(owner);
    await writeFile(join(t.dir.state, 'build.lock'), lockLine({ ...id, startTicks: id.startTicks + 7 }));
    await service.refresh();
    await service.compact();
    assert.equal(service.current.verdict('stale.lock.second@ybl').status, 'FLAGGED');
    assert.equal(await exists(join(t.dir.state, 'build.lock')), false, 'the stale lock was taken over and released');
  } finally {
    await owner.stop();
    await service.close();
    await t.cleanup();
  }
});

test('of two processes that find the same stale lock at once, exactly one takes it', async () => {
  const t = await tempDataDir();
  const lockModule = new URL('../../src/builder/build-lock.js', import.meta.url).href;
  const dataDirModule = new URL('../../src/common/data-dir.js', import.meta.url).href;
  // Each waits for "go" on stdin, tries once, says how it went, and holds what it took until stdin ends.
  const script = `
    const { acquireBuildLock } = await import(${JSON.stringify(lockModule)});
    const { dataDir } = await import(${JSON.stringify(dataDirModule)});
    process.stdin.once('data', async () => {
      const said = await acquireBuildLock(dataDir(${JSON.stringify(t.dir.root)})).then(() => 'took', (error) => error.code);
      process.stdout.write(said + '\\n');
    });
    process.stdin.on('end', () => process.exit(0));
    process.stdout.write('ready\\n');`;
  try {
    await mkdir(t.dir.state, { recursive: true });
    for (let round = 0; round < 3; round++) {
      await writeFile(join(t.dir.state, 'build.lock'), 'pid=1 start=0 boot=00000000-0000-0000-0000-000000000000\n');
      const contenders = [0, 1].map(() => spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }));
      try {
        const lines = contenders.map((child) => {
          let text = '';
          child.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
          return async (count: number) => {
            while (text.split('\n').length <= count) await new Promise((resolve) => setTimeout(resolve, 5));
            return text.split('\n')[count - 1];
          };
        });
        await Promise.all(lines.map((line) => line(1)));
        for (const child of contenders) child.stdin!.write('go\n');
        const said = (await Promise.all(lines.map((line) => line(2)))).sort();
        assert.deepEqual(said, ['ERR_BUILD_LOCKED', 'took'], `round ${round}`);
        const owner = parseBuildLock(await readFile(join(t.dir.state, 'build.lock'), 'utf8'));
        assert.ok(contenders.some((child) => child.pid === owner?.pid), 'the lock names the one that took it');
      } finally {
        for (const child of contenders) {
          child.stdin!.end();
          child.kill('SIGKILL');
        }
      }
    }
  } finally {
    await t.cleanup();
  }
});
