import { test } from 'node:test';
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { tempDataDir, ingest, evidence } from './helpers.js';
import { startServer } from './server-process.js';

interface Ready {
  snapshot: string;
  thread: number;
}

/** Ask /readyz over fresh connections until every serving thread has answered; the snapshot each one serves. */
async function snapshotsByThread(base: string, threads: number): Promise<Map<number, string>> {
  const seen = new Map<number, string>();
  for (let attempt = 0; attempt < 400 && seen.size < threads; attempt++) {
    const body = await readyOverNewConnection(`${base}/readyz`);
    seen.set(body.thread, body.snapshot);
  }
  assert.equal(seen.size, threads, `reached ${seen.size} of ${threads} threads`);
  return seen;
}

/** GET on a connection of its own: the kernel spreads connections, not requests, over the threads. */
function readyOverNewConnection(url: string): Promise<Ready> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve(JSON.parse(text) as Ready));
    }).on('error', reject);
  });
}

test('a snapshot swap reaches every serving thread', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('first@ybl', 'https://u.example')]);
  const server = await startServer(t.dir.root, { args: ['--threads', '2'] });
  try {
    const before = await snapshotsByThread(server.base, 2);
    const initial = new Set(before.values());
    assert.equal(initial.size, 1, 'both threads start on the same snapshot');

    await ingest(t.dir, t.root, [evidence('second@ybl', 'https://v.example')]);
    let after = new Map<number, string>();
    const deadline = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 200));
      after = await snapshotsByThread(server.base, 2);
    } while ([...after.values()].some((id) => initial.has(id)) && Date.now() < deadline);
    const ids = new Set(after.values());
    assert.equal(ids.size, 1, 'both threads serve the same new snapshot');
    assert.equal(initial.has([...ids][0]!), false, 'and it is the new one');
  } finally {
    assert.equal(await server.stop(), 0);
    await t.cleanup();
  }
});
