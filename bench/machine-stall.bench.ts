/**
 * The machine's own event-loop stalls: how late a 1 ms timer fires in an
 * idle process that shares nothing with this one, first while nothing else
 * runs, then while this process allocates and touches fresh memory in rounds
 * of a few GiB, as a snapshot build does.
 *
 *   node --expose-gc dist/bench/machine-stall.bench.js [--gib 2] [--rounds 12] [--idle 5] [--busy 20] [--json FILE]
 *
 * The observer is a separate process: no shared heap, address space, lock or
 * thread with the one touching memory. Whatever stalls it is the machine's
 * (on a virtual machine, the host backing guest memory it had not backed
 * yet), so the serving threads of `serve` can do no better while a rebuild
 * runs beside them. The swap section of `npm run bench` reports it next to
 * the serving-thread stall it measures.
 *
 * Then, twice, this process runs what a serving process runs during a
 * rebuild, without the service: threads computing without pause at nice +10
 * (the build threads) beside threads waking every millisecond (the
 * event-loop monitors of `serve`'s main and serving threads), first on every
 * core, then on every core but one (serve's default build threads). What
 * it showed: bench/MEASUREMENTS.md, "A core kept for serving" and "Where
 * the misses come from".
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { BACKGROUND_NICE, defaultBuildThreads } from '../src/service/snapshot-service.js';
import { round1, wholeNumberOption, writeBenchReport } from './support/report.js';

/** Loaded by the computing threads, which are evaluated code with no module path of their own to resolve it from. */
const NICE_MODULE = createRequire(import.meta.url).resolve('@napi-rs/nice');

const { values: args } = parseArgs({
  options: {
    gib: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '12' },
    idle: { type: 'string', default: '5' },
    // Seconds of each busy-cores phase.
    busy: { type: 'string', default: '20' },
    json: { type: 'string' },
    // Internal: run as the observer for this many seconds.
    observe: { type: 'string' },
  },
  strict: true,
});

const gc = (globalThis as { gc?: () => void }).gc;

export interface MachineStallResult {
  /** Longest event-loop delay of the observer while nothing else ran, ms. */
  readonly idleStallMs: number;
  /** Longest while this process touched fresh memory, ms. */
  readonly touchingStallMs: number;
  readonly gibPerRound: number;
  readonly rounds: number;
  /** Seconds each round took to allocate and touch its memory; slow rounds are memory the host had to back. */
  readonly roundSeconds: readonly number[];
  /**
   * Longest while this process kept every core computing beside threads
   * waking every millisecond, and every core but one, ms; over `busySeconds`
   * each. Absent in reports from before it was measured.
   */
  readonly busyStallMs?: { readonly everyCore: number; readonly everyCoreButOne: number };
  readonly busySeconds?: number;
  /** Threads waking every millisecond in those phases: serve's serving threads (one per core) and its main thread. */
  readonly wakers?: number;
}

if (args.observe !== undefined) {
  observe(wholeNumberOption('observe', args.observe));
} else {
  await main();
}

/** Observer: once a second, print the longest event-loop delay of that second (ms) on its own line. */
function observe(seconds: number): void {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let left = seconds;
  const timer = setInterval(() => {
    process.stdout.write(`${delay.max / 1e6}\n`);
    delay.reset();
    if (--left === 0) clearInterval(timer);
  }, 1000);
}

async function main(): Promise<void> {
  const gib = wholeNumberOption('gib', args.gib);
  const rounds = wholeNumberOption('rounds', args.rounds);
  const idleSeconds = wholeNumberOption('idle', args.idle);
  const busySeconds = wholeNumberOption('busy', args.busy);
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--observe', '100000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let phase: 'warmup' | 'idle' | 'touching' | 'everyCore' | 'everyCoreButOne' | 'between' = 'warmup';
  const stalls = { idle: 0, touching: 0, everyCore: 0, everyCoreButOne: 0 };
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (text: string) => {
    pending += text;
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const ms = Number(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
      if (phase !== 'warmup' && phase !== 'between') stalls[phase] = Math.max(stalls[phase], ms);
    }
  });
  try {
    // Settle first: memory a process just before this one gave back (a server stopping) stalls the machine too.
    await sleep(5000);
    phase = 'idle';
    await sleep(idleSeconds * 1000);
    phase = 'touching';
    const roundSeconds: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const started = performance.now();
      touchFresh(gib * 2 ** 30);
      roundSeconds.push(Math.round(performance.now() - started) / 1000);
      // Free the round's memory before the next, as a build's phases do.
      gc?.();
      // Let the observer's per-second report land.
      await sleep(50);
    }
    await sleep(1100);
    const cores = availableParallelism();
    const wakers = cores + 1;
    for (const [busyPhase, computing] of [['everyCore', cores], ['everyCoreButOne', defaultBuildThreads(cores)]] as const) {
      phase = 'between';
      await sleep(1100);
      phase = busyPhase;
      await keepBusy(computing, wakers, busySeconds * 1000);
      // The observer's report of the phase's last second.
      await sleep(1100);
    }
    const result: MachineStallResult = {
      idleStallMs: round1(stalls.idle),
      touchingStallMs: round1(stalls.touching),
      gibPerRound: gib,
      rounds,
      roundSeconds,
      busyStallMs: { everyCore: round1(stalls.everyCore), everyCoreButOne: round1(stalls.everyCoreButOne) },
      busySeconds,
      wakers,
    };
    console.table([{ ...result, roundSeconds: roundSeconds.join(' ') }]);
    if (args.json !== undefined) writeBenchReport(args.json, 'machine-stall', null, result);
  } finally {
    child.kill();
  }
}

/**
 * `computing` threads computing without pause at nice +10 and `wakers`
 * threads whose event loop wakes every millisecond (a 1 ms event-loop
 * delay monitor, as metrics.ts keeps on serve's threads), for `ms`.
 */
async function keepBusy(computing: number, wakers: number, ms: number): Promise<void> {
  // At the build threads' nice increment, as Piscina sets it for serve's build pool (BACKGROUND_NICE).
  const compute = `require(${JSON.stringify(NICE_MODULE)}).nice(${BACKGROUND_NICE});
    const end = Date.now() + ${ms}; let x = 1;
    while (Date.now() < end) for (let i = 0; i < 1e6; i++) x = (x * 1103515245 + 12345) | 0;
    require('node:worker_threads').parentPort.postMessage(x);`;
  const wake = `const delay = require('node:perf_hooks').monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    setTimeout(() => delay.disable(), ${ms});`;
  const threads = [...Array.from({ length: computing }, () => compute), ...Array.from({ length: wakers }, () => wake)].map(
    (code) => new Worker(code, { eval: true }),
  );
  await Promise.all(threads.map((thread) => once(thread, 'exit')));
}

/** Allocate `bytes` and write one byte per 4 KiB page, so every page is backed. */
function touchFresh(bytes: number): number {
  const buffer = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 4096) buffer[i] = 1;
  return buffer[bytes - 4096]!;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
