/**
 * How long a correction takes to be served, as the corrections section
 * (corrections.ts) measures it: a retraction or a clearance sent over HTTP,
 * timed from the moment it is sent until every serving thread of the
 * server watched (the one asked, or another follower of the fleet) answers
 * the VPA's changed verdict, each thread polled every POLL_MS on a
 * keep-alive connection of its own; beside it, the request's own response
 * time and the server's own time for the change, from its log.
 */
import { performance } from 'node:perf_hooks';
import type { RunningServer } from '../../test/server-process.js';
import type { RetractionTarget, SeriesTargets } from './correction-targets.js';
import { answeredByEveryThread, freshnessOf, logEntries, type Freshness } from './freshness.js';
import { sleep } from './scenarios.js';
import type { ThreadConnections } from './thread-connections.js';

/** Why the bench's corrections are made, for the audit log. */
export const BENCH_REASON = 'bench: corrections section';

/** One kind of correction over a series. */
export interface CorrectionSeries {
  /** From sending the request until every serving thread watched answers the change, ms; `mergeP50`/`mergeMax`: the watched server's own time for it (its log). */
  readonly served: Freshness;
  /** From sending the request until its answer came back, ms. */
  readonly answered: Freshness;
}

/** A series: as many retractions (one evidence id each) as clearances, one after the other, alternating. */
export interface ServedSeries {
  readonly retraction: CorrectionSeries;
  readonly clearance: CorrectionSeries;
  /** Polls answered other than 200. */
  readonly pollFailures: number;
}

/** The server the corrections are sent to. */
export interface Desk {
  readonly base: string;
  readonly token: string;
}

/** The server whose answers are watched, and what its log calls serving a change. */
export interface Watched {
  readonly server: RunningServer;
  readonly connections: ThreadConnections;
  readonly token: string;
  /** The message of the log line whose `ms` is the server's own time to serve a change. */
  readonly logMessage: string;
  /** Throws when a server of the measurement has exited. */
  readonly alive: () => void;
}

/** POST `body` as JSON to `path` of `desk`: the status and the answer's text. */
export async function postJson(desk: Desk, path: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${desk.base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${desk.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** Retract `ids`, checking that each was retracted now: the answer's time, ms. */
export async function retract(desk: Desk, ids: readonly string[]): Promise<number> {
  const started = performance.now();
  const answer = await postJson(desk, '/v1/admin/retractions', { evidence_ids: ids, reason: BENCH_REASON });
  const ms = performance.now() - started;
  const retracted = answer.status === 200 ? (JSON.parse(answer.text) as { retracted: number }).retracted : -1;
  if (retracted !== ids.length) throw new Error(`a retraction of ${ids.length} ids answered ${answer.status}: ${answer.text.slice(0, 500)}`);
  return ms;
}

/** Clear `upi`: the answer's time, ms. */
export async function clear(desk: Desk, upi: string): Promise<number> {
  const started = performance.now();
  const answer = await postJson(desk, '/v1/admin/clearances', { upi, reason: BENCH_REASON });
  const ms = performance.now() - started;
  if (answer.status !== 201) throw new Error(`the clearance of ${upi} answered ${answer.status}: ${answer.text.slice(0, 500)}`);
  return ms;
}

interface Sample {
  readonly answered: number;
  readonly served: number;
  /** The watched server's standard error length when the request was sent. */
  readonly logFrom: number;
}

interface VerdictFields {
  readonly status: string;
  readonly evidence_count: number;
}

/** The series: retraction i, then clearance i, for each i; `log` hears of each kind's figures at the end. */
export async function servedSeries(desk: Desk, watched: Watched, targets: SeriesTargets, label: string, log: (line: string) => void): Promise<ServedSeries> {
  let pollFailures = 0;
  const watch = { alive: watched.alive, failed: () => pollFailures++ };
  const verdict = async (upi: string): Promise<VerdictFields> => {
    const answer = await watched.connections.get(0, `/v1/verify/upi?upi=${encodeURIComponent(upi)}`, watched.token);
    if (answer.status !== 200) throw new Error(`the lookup of ${upi} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    return JSON.parse(answer.body) as VerdictFields;
  };
  /** Send the correction and watch for its change at once: both times, and where the server's log stood before it. */
  const timed = async (upi: string, send: () => Promise<number>, changed: (body: string) => boolean): Promise<Sample> => {
    const logFrom = watched.server.stderr().length;
    const since = performance.now();
    const [answered, served] = await Promise.all([send(), answeredByEveryThread(watched.connections, watched.token, upi, since, changed, watch)]);
    return { answered, served, logFrom };
  };
  const samples: Record<'retraction' | 'clearance', Sample[]> = { retraction: [], clearance: [] };
  const count = Math.min(targets.retractions.length, targets.clearances.length);
  for (let i = 0; i < count; i++) {
    const item: RetractionTarget = targets.retractions[i]!;
    const before = await verdict(item.upi);
    if (before.status !== 'FLAGGED') throw new Error(`${item.upi} answers ${before.status}, not FLAGGED, before its retraction`);
    // One item fewer, or none left (CLEARED): either way the answer is no longer the one before.
    const retracted = (body: string) => {
      const now = JSON.parse(body) as VerdictFields;
      return now.status !== before.status || now.evidence_count !== before.evidence_count;
    };
    samples.retraction.push(await timed(item.upi, () => retract(desk, [item.evidenceId]), retracted));
    const upi = targets.clearances[i]!;
    const standing = await verdict(upi);
    if (standing.status !== 'FLAGGED') throw new Error(`${upi} answers ${standing.status}, not FLAGGED, before its clearance`);
    samples.clearance.push(await timed(upi, () => clear(desk, upi), (body) => !body.includes('"status":"FLAGGED"')));
  }
  // The log line of the last change may still be on its way when its answer is seen.
  await sleep(200);
  const text = watched.server.stderr();
  const starts = [...samples.retraction, ...samples.clearance].map((s) => s.logFrom).sort((a, b) => a - b);
  /** The server's own time for the change whose log starts at `from`: every such line up to the next change's. */
  const engineMs = (from: number): number | null => {
    const to = starts.find((start) => start > from) ?? text.length;
    const ms = logEntries(text.slice(from, to), watched.logMessage).flatMap((entry) => (typeof entry.ms === 'number' ? [entry.ms] : []));
    // A change may be served in more than one step: its whole time.
    return ms.length === 0 ? null : ms.reduce((a, b) => a + b, 0);
  };
  const series = (list: readonly Sample[]): CorrectionSeries => ({
    served: freshnessOf(list.map((s) => s.served), list.flatMap((s) => engineMs(s.logFrom) ?? [])),
    answered: freshnessOf(list.map((s) => s.answered), []),
  });
  const result = { retraction: series(samples.retraction), clearance: series(samples.clearance), pollFailures };
  for (const kind of ['retraction', 'clearance'] as const) {
    const { served, answered } = result[kind];
    log(
      `  ${label}, ${served.count} ${kind}s: served p50 ${served.p50} ms, p99 ${served.p99} ms, max ${served.max} ms; ` +
        `answered p50 ${answered.p50} ms, p99 ${answered.p99} ms; the server's own p50 ${served.mergeP50} ms, max ${served.mergeMax} ms`,
    );
  }
  return result;
}
