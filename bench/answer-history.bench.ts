/**
 * What the history of answers (history/answer-changes.ts, change-log.ts)
 * costs an embedded server: the same data directory served with the
 * history (the default) and without it (`--history-days 0`), each server
 * in turn, `--rounds` times, each on a fresh copy of `--data-dir`. For
 * each: the time to ready, resident memory (VmRSS) idle a minute after
 * the stored evidence was read ahead and the snapshot's VPAs hashed,
 * one compaction (SIGUSR2) and the peak and idle a minute after it, the
 * size of history/changes.log, and each whole comparison the server
 * logged (`answer changes recorded`: changes and ms). With the history,
 * the second round of each copy starts on the file the first wrote, so a
 * first start (every VPA recorded) and a restart are both measured.
 *
 *   node dist/bench/answer-history.bench.js --data-dir DIR [--rounds 2] [--threads 2] [--json FILE]
 *
 * DIR holds evidence and a snapshot (`demo-data`, `ingest`, `build`).
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { wholeNumberOption, writeReport } from './support/report.js';
import { useServiceAllocatorSettings } from './support/allocator.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    rounds: { type: 'string', default: '2' },
    threads: { type: 'string', default: '2' },
    json: { type: 'string' },
  },
  strict: true,
});
if (values['data-dir'] === undefined) throw new Error('--data-dir DIR is required: a data directory with evidence and a snapshot');
const source = resolve(values['data-dir']);
const rounds = wholeNumberOption('rounds', values.rounds);
const threads = wholeNumberOption('threads', values.threads);
const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const IDLE_MS = 60_000;
useServiceAllocatorSettings();

interface Run {
  readonly history: boolean;
  readonly round: number;
  readonly readyMs: number;
  /** From the start until the stored evidence was read ahead and the snapshot's VPAs hashed. */
  readonly settledMs: number;
  /** A minute after that. */
  readonly idleMiB: number;
  readonly compactionMs: number;
  readonly peakMiB: number;
  readonly afterMiB: number;
  readonly historyBytes: number;
  readonly recorded: readonly { readonly changes: number; readonly ms: number }[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function residentMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
}

async function serveOnce(dir: string, history: boolean, round: number): Promise<Run> {
  const started = performance.now();
  const args = ['serve', '--data-dir', dir, '--plain-http', '--port', '0', '--threads', String(threads), '--log-level', 'info', ...(history ? [] : ['--history-days', '0'])];
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (c: Buffer) => (log += c.toString()));
  child.stderr.on('data', (c: Buffer) => (log += c.toString()));
  const count = (pattern: RegExp) => (log.match(pattern) ?? []).length;
  const until = async (done: () => boolean, what: string) => {
    const deadline = Date.now() + 600_000;
    while (!done()) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${what} did not come:\n${log.slice(-2000)}`);
      await sleep(50);
    }
  };
  try {
    await until(() => /listening on/.test(log), 'listening');
    const readyMs = Math.round(performance.now() - started);
    // Settled as both servers settle: the stored evidence read ahead and the snapshot's VPAs hashed, then a minute.
    await until(() => /stored evidence read ahead of ingests/.test(log) && /VPA hash ranges made/.test(log), 'the read-ahead and the hash ranges');
    const settledMs = Math.round(performance.now() - started);
    await sleep(IDLE_MS);
    const idleMiB = await residentMiB(child.pid!);
    const swaps = count(/snapshot swapped/g);
    const compacting = performance.now();
    child.kill('SIGUSR2');
    await until(() => count(/snapshot swapped/g) > swaps, 'the swap');
    const compactionMs = Math.round(performance.now() - compacting);
    let peakMiB = 0;
    for (const end = Date.now() + IDLE_MS; Date.now() < end; await sleep(200)) peakMiB = Math.max(peakMiB, await residentMiB(child.pid!));
    const afterMiB = await residentMiB(child.pid!);
    const historyBytes = history ? (await stat(join(dir, 'history', 'changes.log'))).size : 0;
    const recorded = log
      .split('\n')
      .filter((line) => line.includes('answer changes recorded'))
      .map((line) => JSON.parse(line) as { changes: number; ms: number })
      .map(({ changes, ms }) => ({ changes, ms }));
    return { history, round, readyMs, settledMs, idleMiB, compactionMs, peakMiB, afterMiB, historyBytes, recorded };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  }
}

const root = await mkdtemp(join(tmpdir(), 'upi-risk-answer-history-'));
const runs: Run[] = [];
try {
  const copies = { with: join(root, 'with'), without: join(root, 'without') };
  await cp(source, copies.with, { recursive: true });
  await cp(source, copies.without, { recursive: true });
  for (let round = 1; round <= rounds; round++) {
    for (const history of [true, false]) {
      const run = await serveOnce(history ? copies.with : copies.without, history, round);
      runs.push(run);
      process.stdout.write(`${JSON.stringify(run)}\n`);
    }
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
if (values.json !== undefined) writeReport(values.json, { benchmark: 'answer-history', source, threads, idleMs: IDLE_MS, runs });
