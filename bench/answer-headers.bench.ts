/**
 * The header lines of an answer (answerHeadLines), as the edge writes them
 * for every lookup, next to the same text with its numbers written by
 * template literals, as before decimal.ts. Two figures each:
 *
 * - time per header (tinybench);
 * - young-generation collections while writing HEADERS headers, each with
 *   its own request id and the key's remaining count one lower, as under
 *   load: how many scavenges, and their median, mean and longest pause. Template
 *   literals put each new count into V8's number-string cache, which keeps
 *   it alive until the next scavenge has copied it: that is what the
 *   second figure shows.
 *
 *   node --expose-gc dist/bench/answer-headers.bench.js [--time 2000] [--json FILE]
 *
 * (--vpas is accepted, as by every micro bench, and ignored: no snapshot is involved.)
 */
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { Bench } from 'tinybench';
import { answerHeadLines, snapshotHeaderLines, type RateLimitHeaders } from '../src/http/answer-headers.js';
import { RequestIds } from '../src/http/request-ids.js';
import { microOptions, round3, taskRows, writeBenchReport } from './support/report.js';

/** Headers written per collection run: at 25k answers a second per thread, 80 s of load. */
const HEADERS = 2_000_000;
const QUOTA = 1_000_000_000;

const { time: taskTime, json } = microOptions();
const gc = (globalThis as { gc?: () => void }).gc;

type HeadLines = (snapshotLines: string, requestId: string, rateLimit: RateLimitHeaders) => string;

/** The text answerHeadLines wrote before decimal.ts: every number through a template literal. */
const templateHeadLines: HeadLines = (snapshotLines, requestId, rateLimit) =>
  `${snapshotLines}\r\nX-Request-Id: ${requestId}\r\nX-RateLimit-Limit: ${rateLimit.limit}\r\nX-RateLimit-Remaining: ${rateLimit.remaining}\r\nX-RateLimit-Reset: ${rateLimit.reset}`;

const snapshotLines = snapshotHeaderLines('20261122T074338123Z-000001', '2026-11-22T07:43:38.123Z');

/** A key's quota state as a run of requests spends it, and the id of each request. */
class RequestStream {
  readonly #ids = new RequestIds();
  #remaining = QUOTA;
  readonly #reset = Math.ceil(Date.now() / 1000) + 60;

  next(write: HeadLines): string {
    if (this.#remaining === 0) this.#remaining = QUOTA;
    return write(snapshotLines, this.#ids.next(), { limit: QUOTA, remaining: --this.#remaining, reset: this.#reset });
  }
}

interface Collections {
  readonly scavenges: number;
  /** The median resists the machine's own stalls, which land in one scavenge now and then. */
  readonly medianPauseMs: number;
  readonly meanPauseMs: number;
  readonly maxPauseMs: number;
}

/** Write HEADERS headers with `write` and report the collections that ran meanwhile. */
async function collections(write: HeadLines): Promise<Collections> {
  gc?.();
  const entries: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => entries.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  const stream = new RequestStream();
  let bytes = 0;
  for (let i = 0; i < HEADERS; i++) bytes += stream.next(write).length;
  // GC entries are delivered asynchronously.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  if (bytes === 0) throw new Error('no header written');
  const kind = (entry: PerformanceEntry) => (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
  const minor = entries.filter((entry) => kind(entry) === constants.NODE_PERFORMANCE_GC_MINOR);
  const pauses = minor.map((entry) => entry.duration).sort((a, b) => a - b);
  return {
    scavenges: minor.length,
    medianPauseMs: pauses.length === 0 ? 0 : round3(pauses[pauses.length >> 1]!),
    meanPauseMs: pauses.length === 0 ? 0 : round3(pauses.reduce((a, b) => a + b, 0) / pauses.length),
    maxPauseMs: pauses.length === 0 ? 0 : round3(Math.max(...pauses)),
  };
}

async function main(): Promise<void> {
  // The two must write the same text: the same request, both ways.
  const check = new RequestStream();
  const both: HeadLines = (lines, requestId, rateLimit) => {
    const text = answerHeadLines(lines, requestId, rateLimit);
    if (text !== templateHeadLines(lines, requestId, rateLimit)) throw new Error(`answerHeadLines differs from the template text: ${text}`);
    return text;
  };
  for (let i = 0; i < 10_000; i++) check.next(both);

  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  let sink = 0;
  const timed = new RequestStream();
  const template = new RequestStream();
  bench.add('answerHeadLines (decimalText)', () => {
    sink += timed.next(answerHeadLines).length;
  }, { beforeAll: () => gc?.() });
  bench.add('same lines, numbers by template literal', () => {
    sink += template.next(templateHeadLines).length;
  }, { beforeAll: () => gc?.() });
  bench.runSync();
  const rows = taskRows(bench);
  console.table(rows);

  // Whichever writer runs first after the timing pays a one-off 15–25 ms scavenge: a run not reported takes it.
  await collections(answerHeadLines);
  const young = { decimalText: await collections(answerHeadLines), template: await collections(templateHeadLines) };
  console.log(`young-generation collections while writing ${HEADERS} headers:`);
  console.table(young);
  if (json !== undefined) writeBenchReport(json, 'answer-headers', null, { rows, headers: HEADERS, collections: young });
  if (sink === 0.5) console.log('unreachable');
}

await main();
