import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, constants, createWriteStream, openSync, watch } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { listSnapshots, readSnapshotFile } from '../../src/engine/snapshot-files.js';
import { listEvidenceFiles } from '../../src/evidence/store.js';
import { parseBuildLock } from '../../src/builder/build-lock.js';
import { evidence, ndjson, tempDataDir, type EvidenceInput } from '../helpers.js';
import { CLI, runCli, startServer } from '../server-process.js';

// Writers killed mid-write (SIGKILL: no cleanup handler runs) leave their
// temporary files; the next ingest, build or server start removes them, and
// what was stored before stays whole.

const temps = async (folder: string) => (await readdir(folder).catch(() => [] as string[])).filter((name) => name.startsWith('.tmp-'));

/** The JSON log lines of a command or server that say what cleanup removed. */
function removals(stderr: string): { files: number; bytes: number }[] {
  return stderr
    .split('\n')
    .filter((line) => line.includes('removed temporary files'))
    .map((line) => JSON.parse(line) as { files: number; bytes: number });
}

/**
 * Start `upi-risk ingest` reading a FIFO, feed it more than one flush's
 * worth of lines and keep the FIFO open, so the ingest waits mid-file with
 * its temporary file written to; then SIGKILL it. Returns the leftover's name.
 */
async function killIngestMidWrite(dataRoot: string, scratch: string, prefix: string): Promise<string> {
  const fifo = join(scratch, `${prefix}.fifo`);
  const made = spawnSync('mkfifo', [fifo]);
  assert.equal(made.status, 0, String(made.stderr));
  const child = spawn(process.execPath, [CLI, 'ingest', '--data-dir', dataRoot, fifo], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  const feed = createWriteStream(fifo);
  feed.on('error', () => {}); // EPIPE once the reader is killed
  try {
    const items: EvidenceInput[] = [];
    for (let i = 0; i < 12_000; i++) items.push(evidence(`${prefix}.${i}@ybl`, `https://t.me/${prefix}${i % 50}`));
    const lines = ndjson(items);
    assert.ok(lines.length > 1 << 20);
    feed.write(lines); // over 1 MiB: the ingest flushes to its temporary file, then waits for more
    const evidenceDir = join(dataRoot, 'evidence');
    let leftover: string | undefined;
    for (const started = Date.now(); leftover === undefined; ) {
      assert.ok(Date.now() - started < 60_000, 'the ingest never wrote its temporary file');
      for (const name of await temps(evidenceDir)) {
        if ((await stat(join(evidenceDir, name))).size >= 1 << 20) leftover = name;
      }
      if (leftover === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return leftover;
  } finally {
    child.kill('SIGKILL');
    await exited;
    // Should the ingest have died before opening the FIFO, the open for writing still waits for a reader: give it one.
    closeSync(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK));
    feed.destroy();
  }
}

test('a killed ingest leaves its temporary file; the next ingest and a server start remove such files, stored evidence stays whole', async () => {
  const t = await tempDataDir();
  try {
    const first = join(t.root, 'first.ndjson');
    await writeFile(first, ndjson([evidence('kept.first@ybl', 'https://t.me/keptchannel')]));
    assert.equal((await runCli(['ingest', '--data-dir', t.dir.root, first])).code, 0);

    const leftover = await killIngestMidWrite(t.dir.root, t.root, 'killed');
    assert.match(leftover, /^\.tmp-ingest\.\d+-\d+-[0-9a-f]{8}\.[0-9a-f]{8}$/);
    assert.deepEqual(await temps(t.dir.evidence), [leftover], 'the killed ingest left its file');
    const leftoverBytes = (await stat(join(t.dir.evidence, leftover))).size;

    const second = join(t.root, 'second.ndjson');
    await writeFile(second, ndjson([evidence('kept.second@ybl', 'https://t.me/keptchannel')]));
    const ingested = await runCli(['ingest', '--data-dir', t.dir.root, second]);
    assert.equal(ingested.code, 0, ingested.stderr);
    assert.deepEqual(removals(ingested.stderr).map(({ files, bytes }) => ({ files, bytes })), [{ files: 1, bytes: leftoverBytes }]);
    assert.deepEqual(await temps(t.dir.evidence), []);
    assert.equal((await listEvidenceFiles(t.dir)).length, 2, 'both stored files, nothing of the killed one');

    const again = await killIngestMidWrite(t.dir.root, t.root, 'killedagain');
    const server = await startServer(t.dir.root);
    try {
      assert.deepEqual(await temps(t.dir.evidence), [], `${again} removed at start`);
      assert.equal(removals(server.stderr()).length, 1, server.stderr());
      assert.equal(removals(server.stderr())[0]!.files, 1);
      const serving = server.stderr().split('\n').find((line) => line.includes('"serving snapshot"'));
      assert.match(serving ?? '', /"vpas":2\b/, server.stderr());
    } finally {
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await t.cleanup();
  }
});

test('a build killed while writing its snapshot leaves a temporary file and its lock; the next build takes both over', async () => {
  const t = await tempDataDir();
  try {
    const demo = join(t.root, 'demo.ndjson');
    assert.equal((await runCli(['demo-data', '--vpas', '20000', '--seed', '3', '--out', demo])).code, 0);
    assert.equal((await runCli(['ingest', '--data-dir', t.dir.root, demo])).code, 0);
    await mkdir(t.dir.snapshots, { recursive: true });

    let leftovers: string[] = [];
    // Killed as soon as its snapshot's temporary file appears; should the kill come late, try again.
    for (let attempt = 0; attempt < 3 && leftovers.length === 0; attempt++) {
      const child = spawn(process.execPath, [CLI, 'build', '--data-dir', t.dir.root, '--threads', '1'], { stdio: 'ignore' });
      const exited = once(child, 'exit');
      const watcher = watch(t.dir.snapshots, (_, name) => {
        if (name?.startsWith('.tmp-') === true) child.kill('SIGKILL');
      });
      try {
        const [code, signal] = (await exited) as [number | null, string | null];
        assert.ok(signal === 'SIGKILL' || code === 0, `build ended with ${code ?? signal}`);
      } finally {
        watcher.close();
      }
      leftovers = await temps(t.dir.snapshots);
    }
    assert.equal(leftovers.length, 1, 'the killed build left its snapshot being written');
    assert.deepEqual(await listSnapshots(t.dir), [], 'and no snapshot');
    const lock = parseBuildLock(await readFile(join(t.dir.state, 'build.lock'), 'utf8'));
    assert.ok(lock !== null && lock.identity !== null, 'and its lock, naming it');

    const build = await runCli(['build', '--data-dir', t.dir.root, '--threads', '1']);
    assert.equal(build.code, 0, build.stderr);
    assert.match(build.stdout, /20000 flagged VPAs/);
    assert.ok(removals(build.stderr).some((removal) => removal.files >= 1), build.stderr);
    assert.deepEqual(await temps(t.dir.snapshots), []);
    assert.deepEqual(await temps(t.dir.state), []);
    const [path] = await listSnapshots(t.dir);
    assert.equal(new SnapshotView(await readSnapshotFile(path!)).meta.vpaCount, 20000);
    assert.deepEqual((await readdir(t.dir.state)).filter((name) => name === 'build.lock'), [], 'the lock is released');
  } finally {
    await t.cleanup();
  }
});
