/**
 * Running the two load generators as their own processes: wrk for peak
 * throughput (closed loop: as fast as answers come back) and, for latency
 * at a fixed rate, open-loop.ts (no coordinated omission, but its send loop
 * keeps a core busy) and wrk paced by think time (sleeps between sends).
 */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { OpenLoopResult } from './open-loop.js';
import { processCpuSeconds } from '../support/process-cpu.js';
import { round1 } from '../support/report.js';

export type { OpenLoopResult };

const WRK_SCRIPT = fileURLToPath(new URL('../../../bench/http/workload.lua', import.meta.url));
const OPEN_LOOP = fileURLToPath(new URL('./open-loop.js', import.meta.url));

/** Where to send load, and what. */
export interface Target {
  readonly port: number;
  readonly tls: boolean;
  /** One request target (GET) or JSON body (POST) per line. */
  readonly linesFile: string;
  readonly method: 'GET' | 'POST';
  /** The path of a POST (GET targets come from the lines). */
  readonly path: string;
  readonly token: string;
}

/** The wrk line's fields, as workload.lua's done() prints them. */
interface WrkLine {
  readonly requests: number;
  readonly durationUs: number;
  readonly connect: number;
  readonly read: number;
  readonly write: number;
  readonly status: number;
  readonly timeout: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly p999Us: number;
  readonly maxUs: number;
  readonly cpuUs: number;
}

export interface WrkResult {
  readonly requestsPerSecond: number;
  readonly requests: number;
  /** Answers other than 2xx and 3xx. */
  readonly non2xx: number;
  /** Socket errors and timeouts. */
  readonly errors: number;
  /** wrk's own (closed-loop) latency, ms: for context only. */
  readonly p50: number;
  readonly p99: number;
  /**
   * CPU the server process spent per request while wrk ran, all threads, µs
   * (null when no server process was given or /proc cannot tell).
   */
  readonly serverCpuUsPerRequest: number | null;
}

/** Fail early, with the fix, when wrk is not installed. */
export function requireWrk(): void {
  const probe = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined) {
    throw new Error('wrk is not installed; on Debian or Ubuntu: sudo apt-get install -y wrk (or run with --only micro,engine)');
  }
}

/**
 * Peak throughput: `threads` wrk threads, `connections` keep-alive
 * connections, for `seconds`; with `serverPid`, also the CPU that process
 * spent per request meanwhile.
 */
export async function runWrk(target: Target, options: { seconds: number; connections: number; threads: number; serverPid?: number }): Promise<WrkResult> {
  const cpuBefore = options.serverPid === undefined ? null : await processCpuSeconds(options.serverPid);
  const r = await wrkLine(target, options);
  const cpuAfter = options.serverPid === undefined ? null : await processCpuSeconds(options.serverPid);
  return {
    requestsPerSecond: Math.round((r.requests / r.durationUs) * 1e6),
    requests: r.requests,
    non2xx: r.status,
    errors: r.connect + r.read + r.write + r.timeout,
    p50: r.p50Us / 1000,
    p99: r.p99Us / 1000,
    serverCpuUsPerRequest: cpuBefore === null || cpuAfter === null || r.requests === 0 ? null : round1(((cpuAfter - cpuBefore) / r.requests) * 1e6),
  };
}

/** Mean think time of a paced run, ms: long beside a lookup, so the rate hardly depends on the server's latency. */
const PACED_THINK_MS = 5;
/**
 * What a paced connection's cycle adds to its think time, ms: the answer's
 * latency, less what wrk's whole-ms timers take off (they fire at the first
 * pass of its loop in the due ms). Rates came out within 2 % of those asked.
 */
const PACED_EXTRA_MS = 0.5;

/**
 * As an open-loop run's figures, but the rate reached is near the rate asked
 * (think times are random) and latency runs from each request's write.
 */
export interface PacedResult extends Pick<OpenLoopResult, 'rate' | 'achievedRate' | 'non2xx' | 'errors' | 'p50' | 'p99' | 'p999' | 'max'> {
  readonly connections: number;
  readonly thinkMs: number;
  /** The share of one core wrk used: it sleeps between sends, so well below one. */
  readonly generatorCore: number;
}

/**
 * Latency at about `rate` requests a second from a generator that sleeps
 * between sends: wrk on one thread, each connection waiting a random think
 * time after every answer (workload.lua). Each connection is a closed loop;
 * wrk corrects its figures for coordinated omission (an answer slower than
 * twice a connection's mean cycle adds the samples the requests not sent
 * meanwhile would have had), but only from that mean, so the open-loop
 * figures stay the exact ones. For comparing the tails of two kinds of
 * request on a host whose cores the generator must not take, beside
 * runOpenLoop's, not instead of them.
 */
export async function runPaced(target: Target, options: { rate: number; seconds: number }): Promise<PacedResult> {
  const connections = Math.max(1, Math.round((options.rate * (PACED_THINK_MS + PACED_EXTRA_MS)) / 1000));
  const r = await wrkLine(target, { threads: 1, connections, seconds: options.seconds, thinkMs: PACED_THINK_MS });
  return {
    rate: Math.round(options.rate),
    achievedRate: Math.round((r.requests / r.durationUs) * 1e6),
    connections,
    thinkMs: PACED_THINK_MS,
    non2xx: r.status,
    errors: r.connect + r.read + r.write + r.timeout,
    p50: r.p50Us / 1000,
    p99: r.p99Us / 1000,
    p999: r.p999Us / 1000,
    max: r.maxUs / 1000,
    generatorCore: Math.round((r.cpuUs / r.durationUs) * 1000) / 1000,
  };
}

/** Run wrk with workload.lua against `target` (paced when `thinkMs` is given) and read its result line. */
async function wrkLine(target: Target, run: { threads: number; connections: number; seconds: number; thinkMs?: number }): Promise<WrkLine> {
  const url = `${target.tls ? 'https' : 'http'}://127.0.0.1:${target.port}`;
  const args = [`-t${run.threads}`, `-c${run.connections}`, `-d${run.seconds}s`, '-s', WRK_SCRIPT, url, '--', target.linesFile, target.method, target.path, target.token];
  if (run.thinkMs !== undefined) args.push(String(run.thinkMs));
  const output = await capture('wrk', args);
  const line = output.split('\n').find((l) => l.startsWith('WRK_RESULT '));
  if (line === undefined) throw new Error(`wrk printed no result:\n${output}`);
  return JSON.parse(line.slice('WRK_RESULT '.length)) as WrkLine;
}

/** Latency at a constant `rate` (requests per second), measured without coordinated omission. */
export async function runOpenLoop(
  target: Target,
  options: { rate: number; seconds: number; warmupSeconds: number; connections: number },
): Promise<OpenLoopResult> {
  return startOpenLoop(target, options).result;
}

/** An open-loop run under way: `stop()` ends it early (open-loop.ts, SIGTERM); `result` comes once it has ended either way. */
export interface RunningOpenLoop {
  stop(): void;
  /** The generator's process id, to sample its CPU while it runs. */
  readonly pid: number;
  readonly result: Promise<OpenLoopResult>;
}

/**
 * runOpenLoop, started and left running: for load that lasts as long as
 * something else does, `seconds` being an upper bound.
 */
export function startOpenLoop(
  target: Target,
  options: { rate: number; seconds: number; warmupSeconds: number; connections: number },
): RunningOpenLoop {
  const args = [
    OPEN_LOOP,
    '--port',
    String(target.port),
    '--rate',
    String(Math.round(options.rate)),
    '--lines',
    target.linesFile,
    '--method',
    target.method,
    '--path',
    target.path,
    '--token',
    target.token,
    '--duration',
    String(options.seconds),
    '--warmup',
    String(options.warmupSeconds),
    '--connections',
    String(options.connections),
  ];
  if (target.tls) args.push('--tls');
  const running = captureRunning(process.execPath, args);
  return {
    stop: running.stop,
    pid: running.pid,
    result: running.output.then((output) => JSON.parse(output.trim().split('\n').at(-1)!) as OpenLoopResult),
  };
}

function capture(command: string, args: readonly string[]): Promise<string> {
  return captureRunning(command, args).output;
}

/** Run `command` to its end and collect its standard output; `stop()` sends it SIGTERM. */
function captureRunning(command: string, args: readonly string[]): { stop: () => void; pid: number; output: Promise<string> } {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    // 'close', not 'exit': the output must be read in full before it is parsed.
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} exited with ${code}:\n${out}${err}`))));
  });
  return {
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    },
    pid: child.pid ?? 0,
    output,
  };
}
