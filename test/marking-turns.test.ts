import { Agent, get } from 'node:http';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evidence, ingest, tempDataDir, type Ready } from './helpers.js';
import { lastLine, runCli, startServer } from './server-process.js';

// Busy serving threads free a replaced snapshot by incremental marking, and
// take turns to start it (edge-worker.ts, MARKING_TURN_MS): the closing pause
// of one thread's collection held the other's loop too when both collected
// at once. ReleaseWatch's own test shows that `markAfterMs` delays marking;
// this one shows that a real server gives its threads different turns.

/** The turn of the thread with index 1 (MARKING_TURN_MS): no sooner than this after its swap. */
const SECOND_TURN_MS = 500;

interface LogLine {
  readonly msg: string;
  readonly thread?: number;
  readonly sinceSwapMs?: number;
}

/** GET over `agent` (one kept-alive connection), the body as text. */
function fetchOver(agent: Agent, url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent, headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

test('under load, the second serving thread starts marking for a replaced snapshot a turn after its swap, the first at its first check', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, Array.from({ length: 200 }, (_, i) => evidence(`payee.${i}@ybl`, `https://t.me/channel${i % 13}`)));
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  const server = await startServer(t.dir.root, { args: ['--threads', '2', '--log-level', 'debug'] });
  const agents: Agent[] = [];
  let loading = true;
  try {
    // One connection per serving thread: the kernel spreads connections, not requests, over the threads.
    const byThread = new Map<number, Agent>();
    for (let attempt = 0; attempt < 200 && byThread.size < 2; attempt++) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      agents.push(agent);
      const { thread } = JSON.parse((await fetchOver(agent, `${server.base}/readyz`)).body) as Ready;
      if (!byThread.has(thread)) byThread.set(thread, agent);
    }
    assert.equal(byThread.size, 2, 'a connection to each serving thread');

    // Requests back to back on each thread, so that neither is ever idle at its check (an idle one
    // collects at once instead of marking). Every twentieth asks which thread answers: still the same.
    const loads = [...byThread].map(async ([thread, agent]) => {
      const headers = { authorization: `Bearer ${key}` };
      for (let i = 0; loading; i++) {
        if (i % 20 === 0) {
          const ready = JSON.parse((await fetchOver(agent, `${server.base}/readyz`)).body) as Ready;
          assert.equal(ready.thread, thread, 'the connection stayed with its thread');
        } else {
          const { status } = await fetchOver(agent, `${server.base}/v1/verify/upi?upi=payee.${i % 300}%40ybl`, headers);
          assert.equal(status, 200);
        }
      }
    });

    await ingest(t.dir, t.root, Array.from({ length: 50 }, (_, i) => evidence(`later.${i}@ybl`, `https://t.me/channel${i % 13}`)));
    const markings = (): LogLine[] =>
      server
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as LogLine)
        .filter((line) => line.msg === 'started incremental marking after a snapshot swap');
    const firstOf = (thread: number) => markings().find((line) => line.thread === thread);
    for (let i = 0; firstOf(0) === undefined || firstOf(1) === undefined; i++) {
      assert.ok(i < 600, `both threads marked within 60 s:\n${server.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    loading = false;
    await Promise.all(loads);

    // Neither thread was idle, so neither collected with a full pause instead.
    assert.ok(!server.stderr().includes('collected after a snapshot swap'), 'no full collection on a busy thread');
    const first = firstOf(0)!;
    const second = firstOf(1)!;
    assert.equal(typeof first.sinceSwapMs, 'number');
    // Threads look every quarter second: the first thread's first look (a timer may fire a millisecond early).
    assert.ok(first.sinceSwapMs! >= 240, `thread 0 marked ${first.sinceSwapMs} ms after its swap`);
    assert.ok(second.sinceSwapMs! >= SECOND_TURN_MS, `thread 1 marked ${second.sinceSwapMs} ms after its swap, before its turn`);
    // Marking freed it on both threads: the main thread lets go of it once both have reported.
    const held = async () => /^upi_risk_replaced_snapshots_held (\S+)$/m.exec(await (await fetch(`${server.base}/metrics`)).text())?.[1];
    for (let i = 0; (await held()) !== '0'; i++) {
      assert.ok(i < 300, 'the replaced snapshot let go within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    loading = false;
    for (const agent of agents) agent.destroy();
    await server.stop();
    await t.cleanup();
  }
});
