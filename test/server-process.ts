import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';

export const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
/** The installed command, which sets the allocator settings and becomes the CLI (bin/upi-risk). */
export const BIN = fileURLToPath(new URL('../../bin/upi-risk', import.meta.url));
/** Limits no functional test reaches; rate-limit tests pass their own plans. */
export const GENEROUS_PLANS = fileURLToPath(new URL('../../test/fixtures/plans-generous.json', import.meta.url));

export interface ServerOptions {
  /** Serve TLS (self-signed in the data directory) instead of plain HTTP. */
  readonly tls?: boolean;
  /** Plans file; GENEROUS_PLANS by default. */
  readonly plans?: string;
  readonly args?: readonly string[];
  /** Environment variables to set for the server, over this process's. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Start the server in a session of its own (setsid), as a service manager
   * would, rather than in this process's: see bench/http/scenarios.ts.
   */
  readonly ownSession?: boolean;
  /** Start through BIN, as an operator would, rather than node and CLI. */
  readonly viaBin?: boolean;
  /** Called with the process as soon as it is spawned, before it listens. */
  readonly onSpawn?: (child: ChildProcess) => void;
  /** How long it may take to listen before it is killed, ms (default 60,000). */
  readonly listenTimeoutMs?: number;
}

export interface RunningServer {
  readonly base: string;
  readonly child: ChildProcess;
  readonly output: () => string;
  /** Standard error alone (the JSON log lines). */
  readonly stderr: () => string;
  /** SIGTERM, then the exit status, or the signal that ended the process instead. */
  stop(): Promise<number | NodeJS.Signals | null>;
}

/** Start `upi-risk serve` as a real process on a free port and wait until it listens. */
export async function startServer(dataDirRoot: string, options: ServerOptions = {}): Promise<RunningServer> {
  const args = ['serve', '--data-dir', dataDirRoot, '--port', '0', '--poll-ms', '100', '--plans', options.plans ?? GENEROUS_PLANS];
  if (options.tls !== true) args.push('--plain-http');
  const [command, first]: [string, string[]] = options.viaBin === true ? [BIN, []] : [process.execPath, [CLI]];
  const child = spawn(command, [...first, ...args, ...(options.args ?? [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownSession === true,
    ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } }),
  });
  options.onSpawn?.(child);
  let output = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stderr += chunk.toString();
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      // A server that never said where it listens would otherwise outlive the test run.
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${output}`));
    }, options.listenTimeoutMs ?? 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on https?:\/\/(?:\[[^\]]*\]|[^:/]+):(\d+)/.exec(output);
      if (match !== null) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return {
    base: `${options.tls === true ? 'https' : 'http'}://127.0.0.1:${port}`,
    child,
    output: () => output,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? child.signalCode;
      child.kill('SIGTERM');
      // 'close', not 'exit': every line the server wrote has been read by then.
      const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
      // The signal, when one ended it, so a failing assertion says which.
      return code ?? signal;
    },
  };
}

/** A call with a key and an optional JSON body: the status and the JSON answer. */
export async function callWithKey(server: RunningServer, path: string, key: string, method = 'GET', body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Run the CLI to completion. */
export function runCli(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    // 'close', not 'exit': the process can end before its output has been read.
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

export interface RefusedServe {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Whether it said it listens (then it was killed). */
  readonly listened: boolean;
}

/** Run `upi-risk serve` with `args` where it is to refuse to start; one that listens instead is killed at once. */
export async function serveExpectingRefusal(args: readonly string[]): Promise<RefusedServe> {
  const child = spawn(process.execPath, [CLI, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let listened = false;
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (!listened && /listening on/.test(stdout)) {
      listened = true;
      child.kill('SIGKILL');
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr, listened };
}

/** The key printed as the last line of `keys create` / `keys rotate`. */
export function lastLine(text: string): string {
  return text.trim().split('\n').at(-1)!;
}

export interface BuilderProcess {
  readonly child: ChildProcess;
  /** Standard error so far (the JSON log lines). */
  readonly stderr: () => string;
  /** Whether it has logged taking the builder lease. */
  readonly active: () => boolean;
  /** SIGTERM (unless it has ended), then its exit. */
  stop(): Promise<void>;
}

/** Start `upi-risk builder` as a real process with `args` (the store's among them). */
export function startBuilder(args: readonly string[]): BuilderProcess {
  const child = spawn(process.execPath, [CLI, 'builder', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    child,
    stderr: () => stderr,
    active: () => stderr.includes('builder lease taken'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
