import { Agent } from 'node:http';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evidence, getText, ingest, sample, tempDataDir, type Ready } from '../helpers.js';
import { lastLine, runCli, startServer } from '../server-process.js';

// Busy serving threads free a replaced snapshot by incremental marking, and
// take turns to start it (edge-worker.ts, MARKING_TURN_MS): the closing pause
// of one thread's collection held the other's loop too when both collected
// at once. ReleaseWatch's own test shows that `markAfterMs` delays marking;
// this one shows that a real server gives its threads different turns, and
// that the marking, not a full collection, frees the replaced snapshot.

/** The turn of the thread with index 1 (MARKING_TURN_MS): no sooner than this after its swap. */
const SECOND_TURN_MS = 500;
/** Kept-alive connections per serving thread: one slow request on one of them leaves the thread busy with the other. */
const CONNECTIONS_PER_THREAD = 2;
const MARKING_LINE = 'started incremental marking after a snapshot swap';
const COLLECTION_LINE = 'collected after a snapshot swap';

interface LogLine {
  readonly msg: string;
  readonly thread?: number;
  readonly sinceSwapMs?: number;
}

test('under load, the second serving thread starts marking for a replaced snapshot a turn after the first, and marking frees it', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, Array.from({ length: 200 }, (_, i) => evidence(`payee.${i}@ybl`, `https://t.me/channel${i % 13}`)));
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  // Every ingest compacted: the test is about the snapshot a swap replaces.
  const server = await startServer(t.dir.root, { args: ['--threads', '2', '--log-level', 'debug', '--compact-vpas', '0'] });
  const agents: Agent[] = [];
  let loading = true;
  let loads: Promise<void>[] = [];
  try {
    // Connections to each serving thread: the kernel spreads connections, not requests, over the threads.
    const byThread = new Map<number, Agent[]>([[0, []], [1, []]]);
    const filled = () => [...byThread.values()].every((list) => list.length >= CONNECTIONS_PER_THREAD);
    for (let attempt = 0; attempt < 400 && !filled(); attempt++) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      agents.push(agent);
      const { thread } = JSON.parse((await getText(`${server.base}/readyz`, { agent })).body) as Ready;
      const list = byThread.get(thread)!;
      if (list.length < CONNECTIONS_PER_THREAD) list.push(agent);
    }
    assert.ok(filled(), 'connections to each serving thread');

    // Requests back to back on each connection, so that neither thread is ever idle at its check (an
    // idle one collects at once instead of marking). Every twentieth asks which thread answers: still the same.
    const headers = { authorization: `Bearer ${key}` };
    loads = [...byThread].flatMap(([thread, list]) =>
      list.map(async (agent) => {
        for (let i = 0; loading; i++) {
          if (i % 20 === 0) {
            const ready = JSON.parse((await getText(`${server.base}/readyz`, { agent })).body) as Ready;
            assert.equal(ready.thread, thread, 'the connection stayed with its thread');
          } else {
            const { status } = await getText(`${server.base}/v1/verify/upi?upi=payee.${i % 300}%40ybl`, { agent, headers });
            assert.equal(status, 200);
          }
        }
      }),
    );
    // A failed load stops the test at once, rather than when the waits below give up.
    const loadFailed = Promise.race(loads.map((load) => load.then(() => new Promise<never>(() => {}))));
    loadFailed.catch(() => {});

    await ingest(t.dir, t.root, Array.from({ length: 50 }, (_, i) => evidence(`later.${i}@ybl`, `https://t.me/channel${i % 13}`)));
    const logLines = (msg: string): LogLine[] => {
      const complete = server.stderr().slice(0, server.stderr().lastIndexOf('\n'));
      return complete
        .split('\n')
        .filter((line) => line.includes(`"msg":"${msg}"`))
        .map((line) => JSON.parse(line) as LogLine);
    };
    const firstMarking = (thread: number) => logLines(MARKING_LINE).find((line) => line.thread === thread);
    // Under the load still: marking frees the replaced snapshot on both threads (within a second or so),
    // and the main thread lets go of it once both have reported. A thread that did not free it by marking
    // would pause for a full collection 10 s after its swap, and log it.
    const held = async () => sample(await (await fetch(`${server.base}/metrics`)).text(), 'upi_risk_replaced_snapshots_held');
    const freed = async () => {
      for (let i = 0; firstMarking(0) === undefined || firstMarking(1) === undefined || (await held()) !== 0; i++) {
        if (!loading) return; // the test has ended another way
        assert.ok(i < 600, `both threads marked and the replaced snapshot was let go within 60 s:\n${server.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await Promise.race([freed(), loadFailed]);
    assert.deepEqual(logLines(COLLECTION_LINE), [], 'no full collection on a busy thread');
    loading = false;
    await Promise.all(loads);

    const first = firstMarking(0)!;
    const second = firstMarking(1)!;
    assert.equal(typeof second.sinceSwapMs, 'number');
    // The turn: thread 1 waits for it (exactly: it compares the clock with its swap time plus the turn).
    assert.ok(second.sinceSwapMs! >= SECOND_TURN_MS, `thread 1 marked ${second.sinceSwapMs} ms after its swap, before its turn`);
    // Thread 0 has no wait: it marks at its first look, a quarter second after the swap, before thread 1's
    // turn. Only a thread kept off the CPU for a quarter second while busy with requests would look later.
    assert.ok(first.sinceSwapMs! < SECOND_TURN_MS, `thread 0 marked ${first.sinceSwapMs} ms after its swap, not at its first look`);
    assert.ok(first.sinceSwapMs! < second.sinceSwapMs!);
  } finally {
    loading = false;
    await Promise.allSettled(loads);
    for (const agent of agents) agent.destroy();
    await server.stop();
    await t.cleanup();
  }
});
