import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDataDir, evidence, ndjson } from '../helpers.js';
import { listSnapshots, readSnapshotFile } from '../../src/engine/snapshot-files.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';

const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

test('demo-data, ingest and build run as commands and produce a snapshot that answers', async () => {
  const t = await tempDataDir();
  try {
    const file = join(t.root, 'demo.ndjson');
    const demo = await run(['demo-data', '--vpas', '300', '--seed', '7', '--out', file]);
    assert.equal(demo.code, 0, demo.stderr);
    const ingest = await run(['ingest', '--data-dir', t.dir.root, file]);
    assert.equal(ingest.code, 0, ingest.stderr);
    assert.match(ingest.stdout, /1 of 1 files stored/);
    const build = await run(['build', '--data-dir', t.dir.root, '--threads', '2']);
    assert.equal(build.code, 0, build.stderr);
    assert.match(build.stdout, /300 flagged VPAs/);
    const [path] = await listSnapshots(t.dir);
    const view = new SnapshotView(await readSnapshotFile(path!));
    assert.equal(view.meta.vpaCount, 300);
  } finally {
    await t.cleanup();
  }
});

test('ingest refuses a bad file with FILE:LINE reasons and exit status 1, and stores the good file beside it', async () => {
  const t = await tempDataDir();
  try {
    const good = join(t.root, 'good.ndjson');
    const bad = join(t.root, 'bad.ndjson');
    await writeFile(good, ndjson([evidence('a@ybl', 'https://u.example')]));
    await writeFile(bad, `${JSON.stringify(evidence('b@ybl', 'https://u.example'))}\n{"evidence_id":"x"}\n`);
    const result = await run(['ingest', '--data-dir', t.dir.root, good, bad]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2: `));
    assert.match(result.stdout, /refused .*bad\.ndjson.*nothing from this file was stored/);
    assert.match(result.stdout, /1 of 2 files stored/);
  } finally {
    await t.cleanup();
  }
});

test('usage errors exit 2 with a message; --help exits 0', async () => {
  const unknown = await run(['ingest', '--no-such-option', 'x']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no-such-option/);
  const noFiles = await run(['ingest']);
  assert.equal(noFiles.code, 2);
  const badThreads = await run(['build', '--threads', 'many']);
  assert.equal(badThreads.code, 2);
  assert.match(badThreads.stderr, /--threads must be a whole number/);
  // Checked before anything is loaded or served.
  const badIdle = await run(['serve', '--build-idle-seconds=-1']);
  assert.equal(badIdle.code, 2);
  assert.match(badIdle.stderr, /--build-idle-seconds must be a whole number/);
  const longIdle = await run(['serve', '--build-idle-seconds', '86401']);
  assert.equal(longIdle.code, 2);
  assert.match(longIdle.stderr, /--build-idle-seconds must be between 0 and 86400/);
  const manyBuildThreads = await run(['serve', '--build-threads', '257']);
  assert.equal(manyBuildThreads.code, 2);
  assert.match(manyBuildThreads.stderr, /--build-threads must be between 1 and 256/);
  for (const [value, message] of [
    ['lots', /--max-memory must be a size such as 2G/],
    ['10M', /--max-memory must be from 64M to 1P/],
  ] as const) {
    const badMemory = await run(['serve', '--max-memory', value]);
    assert.equal(badMemory.code, 2, value);
    assert.match(badMemory.stderr, message);
    assert.match(badMemory.stderr, /ERR_CONFIG/);
  }
  const followerMemory = await run(['serve', '--store', 'postgres://127.0.0.1:1/none', '--max-memory', '2G']);
  assert.equal(followerMemory.code, 2);
  assert.match(followerMemory.stderr, /--max-memory is for the embedded mode/);
  // Its channels (<schema>_snapshots) must fit PostgreSQL's 63 characters.
  const longSchema = await run(['serve', '--store', 'postgres://127.0.0.1:1/none', '--store-schema', 's'.repeat(54)]);
  assert.equal(longSchema.code, 2);
  assert.match(longSchema.stderr, /--store-schema must be 1 to 53/);
  const embeddedPinned = await run(['serve', '--mirror-public-key', Buffer.alloc(32, 7).toString('base64')]);
  assert.equal(embeddedPinned.code, 2);
  assert.match(embeddedPinned.stderr, /--mirror-public-key is for a follower/);
  const embeddedReader = await run(['serve', '--read-history-only']);
  assert.equal(embeddedReader.code, 2);
  assert.match(embeddedReader.stderr, /--read-history-only is for a follower/);
  for (const key of ['short', Buffer.alloc(31).toString('base64'), `${Buffer.alloc(32).toString('base64url')}`]) {
    const badKey = await run(['serve', '--store', 'postgres://127.0.0.1:1/none', '--mirror-public-key', key]);
    assert.equal(badKey.code, 2, key);
    assert.match(badKey.stderr, /--mirror-public-key must be a public key/);
  }
  const help = await run(['build', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage: upi-risk build/);
  const nothing = await run([]);
  assert.equal(nothing.code, 2);
  const wrong = await run(['frobnicate']);
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /unknown command/);
});
