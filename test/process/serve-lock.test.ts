import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode } from '../../src/common/errors.js';
import { parseOwnerLock } from '../../src/common/owner-lock.js';
import { evidence, ingest, ndjson, tempDataDir } from '../helpers.js';
import { freePort } from '../private-services.js';
import { GENEROUS_PLANS, lastLine, runCli, serveExpectingRefusal, startServer, type RefusedServe } from '../server-process.js';

// One `serve` per data directory: state/serve.lock names the live server that
// holds it. A second one refuses before it binds a port (the serving threads
// bind with SO_REUSEPORT, so on the same port it would otherwise share the
// traffic), a lock left by a killed server is taken over, and a clean stop
// removes it. The commands that work beside a server do not take it.

const exists = (path: string) => access(path).then(() => true, () => false);

async function readyStatus(base: string): Promise<number> {
  const response = await fetch(`${base}/readyz`);
  await response.arrayBuffer();
  return response.status;
}

async function lockHolder(path: string): Promise<number | undefined> {
  return parseOwnerLock(await readFile(path, 'latin1'))?.pid;
}

/** Run a `serve` that is to refuse to start; one that listens instead is killed at once. */
function refusedServe(dataDirRoot: string, port: number): Promise<RefusedServe> {
  return serveExpectingRefusal(['--data-dir', dataDirRoot, '--plain-http', '--port', String(port), '--poll-ms', '100', '--plans', GENEROUS_PLANS]);
}

function assertRefused(refusal: RefusedServe, holder: number, dataDirRoot: string): void {
  assert.equal(refusal.listened, false, `the second serve listened:\n${refusal.stdout}${refusal.stderr}`);
  assert.equal(refusal.code, 1, refusal.stderr);
  assert.doesNotMatch(refusal.stdout, /listening/);
  // One line, naming the directory, the holder and the code; no log line: nothing was started.
  const lines = refusal.stderr.split('\n').filter((line) => line !== '');
  assert.equal(lines.length, 1, refusal.stderr);
  assert.ok(lines[0]!.startsWith('upi-risk serve: '), lines[0]);
  assert.ok(lines[0]!.includes(dataDirRoot), lines[0]);
  assert.ok(lines[0]!.includes(`pid ${holder}`), lines[0]);
  assert.ok(lines[0]!.endsWith(`[${ErrorCode.DATA_DIR_IN_USE}]`), lines[0]);
}

test("a second serve of a data directory refuses before it listens; a killed server's lock is taken over; a clean stop removes it", { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  const lock = t.dir.serveLock;
  assert.equal(lock, join(t.dir.state, 'serve.lock'));
  await ingest(t.dir, t.root, [evidence('first@ybl', 'https://first.example', { evidence_id: 'first' })]);
  let first = await startServer(t.dir.root, { args: ['--threads', '1'] });
  try {
    const firstPid = first.child.pid!;
    assert.equal(await lockHolder(lock), firstPid, 'the lock names the running server');
    const port = Number(new URL(first.base).port);

    // On another port, and on the same one (where, without the lock, SO_REUSEPORT would let it share the traffic).
    const otherPort = await freePort();
    const elsewhere = await refusedServe(t.dir.root, otherPort);
    assertRefused(elsewhere, firstPid, t.dir.root);
    const samePort = await refusedServe(t.dir.root, port);
    assertRefused(samePort, firstPid, t.dir.root);
    assert.equal(await lockHolder(lock), firstPid, 'the refused ones left the lock as it was');
    assert.equal(await readyStatus(first.base), 200, 'the first server still serves');

    // The commands that work beside a server still do.
    const evidencePath = join(t.root, 'second.ndjson');
    await writeFile(evidencePath, ndjson([evidence('second@ybl', 'https://second.example', { evidence_id: 'second' })]));
    const ingested = await runCli(['ingest', '--data-dir', t.dir.root, evidencePath]);
    assert.equal(ingested.code, 0, ingested.stderr);
    const created = await runCli(['keys', 'create', '--data-dir', t.dir.root]);
    assert.equal(created.code, 0, created.stderr);
    assert.match(lastLine(created.stdout), /^upirisk_/);
    const retracted = await runCli(['retract', '--data-dir', t.dir.root, '--reason', 'sent by mistake', 'second']);
    assert.equal(retracted.code, 0, retracted.stderr);
    const built = await runCli(['build', '--data-dir', t.dir.root, '--threads', '1']);
    assert.equal(built.code, 0, built.stderr);
    assert.equal(await lockHolder(lock), firstPid);
    assert.equal(await readyStatus(first.base), 200);

    // Killed, the server leaves its lock; the next serve takes it over.
    first.child.kill('SIGKILL');
    await once(first.child, 'close');
    assert.equal(await lockHolder(lock), firstPid, 'a killed server leaves its lock behind');
    first = await startServer(t.dir.root, { args: ['--threads', '1'] });
    assert.equal(await lockHolder(lock), first.child.pid!, 'the stale lock was taken over');
    assert.equal(await readyStatus(first.base), 200);

    // A clean stop releases it.
    assert.equal(await first.stop(), 0);
    assert.equal(await exists(lock), false, 'a clean stop removes the lock');
  } finally {
    if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    await t.cleanup();
  }
});

test('a serve whose start fails releases the data directory', { timeout: 60_000 }, async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [evidence('first@ybl', 'https://first.example')]);
    // A damaged record of data version positions stops serve at start, after it has taken the directory.
    await mkdir(t.dir.state, { recursive: true });
    await writeFile(t.dir.positions, 'not what serve writes\n');
    const failed = await runCli(['serve', '--data-dir', t.dir.root, '--plain-http', '--port', '0', '--threads', '1', '--plans', GENEROUS_PLANS]);
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(failed.stderr, new RegExp(`\\[${ErrorCode.POSITION_STATE}\\]`));
    assert.equal(await exists(t.dir.serveLock), false, 'no lock left behind');
  } finally {
    await t.cleanup();
  }
});
