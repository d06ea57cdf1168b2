import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { KeyAdmin } from '../../src/access/key-admin.js';
import { FileKeyBackend, keyFilePath } from '../../src/access/key-file.js';
import { evidence, ingest, tempDataDir, until } from '../helpers.js';
import { startServer, type RunningServer } from '../server-process.js';

// A server stopped by SIGTERM keeps its carry (state/carry/kept-carry.*),
// and the next start reads it instead of every evidence file: evidence
// that only the delta served before the stop is served again at once, and
// an ingest after the start is served. The kept carry stays, with the
// files it names, while the server that read it runs, so a SIGKILL later
// leaves it whole: the next start reads it and the evidence stored since.

const KEPT = 'stored evidence read from the carry kept at the last stop';
const REFUSED = 'the carry kept at the last stop is not used';

test('a clean stop keeps the carry and the next start reads it; a SIGKILL later leaves it whole', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  let server: RunningServer | null = null;
  try {
    await ingest(t.dir, t.root, [evidence('first@ybl', 'https://pages.example/a', { evidence_id: 'ev-1' })]);
    const key = (await new KeyAdmin(new FileKeyBackend(keyFilePath(t.dir))).create({ name: 'screen', scopes: ['screen'] })).key;
    const status = async (upi: string) => {
      const response = await fetch(`${server!.base}/v1/verify/upi?upi=${upi}`, { headers: { authorization: `Bearer ${key}` } });
      return ((await response.json()) as { status: string }).status;
    };

    // No snapshot yet: the server builds one before it listens, and carries what that build read.
    server = await startServer(t.dir.root);
    // Served from the delta only: no compaction runs before the stop.
    await ingest(t.dir, t.root, [evidence('second@ybl', 'https://pages.example/b', { evidence_id: 'ev-2' })]);
    await until('the ingest served', 30_000, async () => (await status('second@ybl')) === 'FLAGGED');
    assert.equal(await server.stop(), 0);
    const kept = await readdir(t.dir.carry);
    assert.ok(kept.includes('kept-carry.json') && kept.includes('kept-carry.bin'), kept.join(', '));

    server = await startServer(t.dir.root);
    assert.ok(server.stderr().includes(KEPT), 'read before listening: the snapshot lacks a file the carry holds');
    assert.equal(await status('first@ybl'), 'FLAGGED');
    assert.equal(await status('second@ybl'), 'FLAGGED', 'what the delta served before the stop is served again');
    await ingest(t.dir, t.root, [evidence('third@ybl', 'https://pages.example/c', { evidence_id: 'ev-3' })]);
    await until('an ingest after the start served', 30_000, async () => (await status('third@ybl')) === 'FLAGGED');

    server.child.kill('SIGKILL');
    await new Promise((resolve) => server!.child.once('exit', resolve));
    server = await startServer(t.dir.root);
    assert.ok(server.stderr().includes(KEPT) && !server.stderr().includes(REFUSED), 'the kept carry the killed server read, whole');
    for (const upi of ['first@ybl', 'second@ybl', 'third@ybl']) assert.equal(await status(upi), 'FLAGGED', upi);
    assert.equal(await server.stop(), 0);
  } finally {
    if (server?.child.exitCode === null && server.child.signalCode === null) await server.stop();
    await t.cleanup();
  }
});
