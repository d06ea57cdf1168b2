import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { access } from 'node:fs/promises';
import { createServer } from 'node:net';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCode } from '../../src/common/errors.js';
import { evidence, ingest, tempDataDir } from '../helpers.js';
import { GENEROUS_PLANS, serveExpectingRefusal, startServer, type RefusedServe } from '../server-process.js';
import { freePort } from '../private-services.js';

// A serve asked for a port another process listens on refuses with
// ERR_LISTEN. The serving threads bind with SO_REUSEPORT, so beside another
// server doing the same (a serve of another data directory, a follower)
// they would otherwise listen too, and the kernel would split the traffic
// between two servers answering from different data. A serve first claims
// the port for its life, so of two started in the same instant one listens.

const exists = (path: string) => access(path).then(() => true, () => false);

/** Run a serve on `port` that is to refuse; one that listens is killed at once. */
function serveOn(dataDirRoot: string, port: number): Promise<RefusedServe> {
  return serveExpectingRefusal(['--data-dir', dataDirRoot, '--plain-http', '--port', String(port), '--threads', '2', '--poll-ms', '100', '--plans', GENEROUS_PLANS]);
}

function assertRefused(outcome: RefusedServe, port: number): void {
  assert.equal(outcome.listened, false, `the second serve listened:\n${outcome.stderr}`);
  assert.equal(outcome.code, 1, outcome.stderr);
  assert.match(outcome.stderr, new RegExp(`127\\.0\\.0\\.1:${port}: another process listens there`));
  assert.match(outcome.stderr, new RegExp(`\\[${ErrorCode.LISTEN}\\]`));
}

test('a serve on a port another serve listens on refuses, and the first serves on', { timeout: 180_000 }, async () => {
  const first = await tempDataDir();
  const second = await tempDataDir();
  try {
    await ingest(first.dir, first.root, [evidence('first@ybl', 'https://first.example')]);
    await ingest(second.dir, second.root, [evidence('second@ybl', 'https://second.example')]);
    const server = await startServer(first.dir.root, { args: ['--threads', '2'] });
    try {
      const port = Number(new URL(server.base).port);
      assertRefused(await serveOn(second.dir.root, port), port);
      // The refused one let its data directory go.
      assert.equal(await exists(second.dir.serveLock), false);
      // By name too: the port is tried at the address the serving threads would bind, the name's first IPv6 one if it
      // has one (then no other process listens there), else its IPv4 one, which the first server holds.
      const byName = await serveExpectingRefusal(['--data-dir', second.dir.root, '--plain-http', '--host', 'localhost', '--port', String(port), '--plans', GENEROUS_PLANS]);
      if ((await lookup('localhost', { all: true })).some((a) => a.family === 6)) assert.equal(byName.listened, true, byName.stderr);
      else {
        assert.equal(byName.listened, false, `the serve by name listened:\n${byName.stderr}`);
        assert.match(byName.stderr, new RegExp(`localhost:${port}: another process listens there`));
      }
      const ready = await fetch(`${server.base}/readyz`);
      await ready.arrayBuffer();
      assert.equal(ready.status, 200);
      // A server started on the port right after the first stops is no other process: it listens.
      await server.stop();
      const again = await startServer(first.dir.root, { args: ['--threads', '2', '--port', String(port)] });
      try {
        assert.equal(Number(new URL(again.base).port), port);
      } finally {
        await again.stop();
      }
    } finally {
      await server.stop();
    }
  } finally {
    await Promise.all([first.cleanup(), second.cleanup()]);
  }
});

test('a serve on a port held by any other program refuses', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  const holder = createServer();
  try {
    await ingest(t.dir, t.root, [evidence('first@ybl', 'https://first.example')]);
    await new Promise<void>((resolve, reject) => holder.listen(0, '127.0.0.1', resolve).once('error', reject));
    const address = holder.address();
    assert.ok(address !== null && typeof address === 'object');
    assertRefused(await serveOn(t.dir.root, address.port), address.port);
  } finally {
    await new Promise((resolve) => holder.close(resolve));
    await t.cleanup();
  }
});

test('a serve on a port another serve has claimed, not yet listening there, refuses', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  const port = await freePort();
  // The claim a serve takes first of all, held by another process that never listens: two serves started in the same
  // instant both find the port free, and the claim decides between them.
  const claim = `import(${JSON.stringify(pathToFileURL(resolve('dist/src/http/port-claim.js')).href)}).then((m) => m.claimPort('127.0.0.1', ${port})).then(() => { console.log('claimed'); setInterval(() => {}, 1000); })`;
  const holder = spawn(process.execPath, ['-e', claim], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await ingest(t.dir, t.root, [evidence('first@ybl', 'https://first.example')]);
    const [chunk] = (await once(holder.stdout!, 'data')) as [Buffer];
    assert.equal(chunk.toString().trim(), 'claimed');
    assertRefused(await serveOn(t.dir.root, port), port);
    holder.kill('SIGKILL');
    await once(holder, 'close');
    // The kernel let the claim go with the process that held it.
    const after = await serveOn(t.dir.root, port);
    assert.equal(after.listened, true, after.stderr);
  } finally {
    holder.kill('SIGKILL');
    await t.cleanup();
  }
});
