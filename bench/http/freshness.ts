/**
 * Freshness of ingests, as the delta and fleet sections measure it:
 * `upi-risk ingest` run as a process, then every serving thread polled on a
 * connection of its own until it answers FLAGGED for a VPA the file adds;
 * percentiles over a series, beside the servers' own merge times from their
 * logs. The corrections section polls the same way for a VPA's answer to
 * change.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { CLI, type RunningServer } from '../../test/server-process.js';
import { round1, percentile } from '../support/report.js';
import { sleep } from './scenarios.js';
import type { Answer, ThreadConnections } from './thread-connections.js';

/** Freshness of a series of ingests, ms: from the CLI process exiting until every serving thread answered FLAGGED. */
export interface Freshness {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Every ingest's, in order. */
  readonly samples: readonly number[];
  /** The server's own merge of each file into the delta (its log, `ms`), p50 and max. */
  readonly mergeP50: number | null;
  readonly mergeMax: number | null;
}

/** How often a thread is asked whether it serves the new VPA yet, ms. */
export const POLL_MS = 5;

/**
 * `upi-risk ingest` of `files` as a process, into the store `where` names
 * (`--data-dir DIR`, or `--store URL --store-schema S`); resolves with when
 * it exited (performance.now()), rejects when it failed.
 */
export function ingestCli(where: readonly string[], ...files: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'ingest', ...where, ...files], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let exitedAt = 0;
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', () => (exitedAt = performance.now()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(exitedAt) : reject(new Error(`upi-risk ingest exited with ${code}:\n${stderr}`))));
  });
}

/**
 * Until every serving thread behind `connections` answers FLAGGED for
 * `upi`, each asked every POLL_MS: ms from `since` (performance.now()) to
 * the last of them. `watch.alive` runs before each poll (it throws to end
 * the wait, a server having exited); `watch.failed` hears of each answer
 * other than 200.
 */
export function flaggedByEveryThread(
  connections: ThreadConnections,
  token: string,
  upi: string,
  since: number,
  watch: { readonly alive?: () => void; readonly failed?: () => void } = {},
): Promise<number> {
  return answeredByEveryThread(connections, token, upi, since, (body) => body.includes('"status":"FLAGGED"'), watch);
}

/**
 * Until every serving thread behind `connections` gives an answer about
 * `upi` that `done` accepts (the body of a 200), each asked every POLL_MS:
 * ms from `since` (performance.now()) to the last of them; `watch` as for
 * flaggedByEveryThread.
 */
export function answeredByEveryThread(
  connections: ThreadConnections,
  token: string,
  upi: string,
  since: number,
  done: (body: string) => boolean,
  watch: { readonly alive?: () => void; readonly failed?: () => void } = {},
): Promise<number> {
  const path = `/v1/verify/upi?upi=${encodeURIComponent(upi)}`;
  return Promise.all(
    Array.from({ length: connections.threads }, async (_, thread) => {
      while (performance.now() - since < 600_000) {
        watch.alive?.();
        const answer = await connections.get(thread, path, token).catch((error: unknown): Answer => ({ status: 0, body: String(error) }));
        if (answer.status !== 200) watch.failed?.();
        else if (done(answer.body)) return performance.now() - since;
        await sleep(POLL_MS);
      }
      throw new Error(`thread ${thread} did not serve the change to ${upi} within 600 s`);
    }),
  ).then((perThread) => Math.max(...perThread));
}

export function freshnessOf(samples: readonly number[], mergeMs: readonly number[]): Freshness {
  const sorted = [...samples].sort((a, b) => a - b);
  const merges = [...mergeMs].sort((a, b) => a - b);
  return {
    count: samples.length,
    p50: round1(percentile(sorted, 0.5)),
    p99: round1(percentile(sorted, 0.99)),
    max: round1(sorted.at(-1) ?? 0),
    samples: samples.map(round1),
    mergeP50: merges.length === 0 ? null : percentile(merges, 0.5),
    mergeMax: merges.length === 0 ? null : merges.at(-1)!,
  };
}

/** The JSON log lines of `text` (a process's standard error) with message `msg`, parsed. */
export function logEntries(text: string, msg: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes(msg)) continue;
    try {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.msg === msg) out.push(entry);
    } catch {
      // A line cut by the read: not an entry.
    }
  }
  return out;
}

/** The `ms` of the server's log lines with message `msg`, from `from` characters into its standard error. */
export function loggedMs(server: RunningServer, from: number, msg: string): number[] {
  return logEntries(server.stderr().slice(from), msg).flatMap((entry) => (typeof entry.ms === 'number' ? [entry.ms] : []));
}
