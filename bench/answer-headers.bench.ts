/**
 * The header lines of an answer (AnswerHead.lines), as the edge writes them
 * for every lookup: bytes in a reused buffer, numbers written digit by
 * digit. Next to it the two ways it was written before, as text: joined
 * with the numbers from decimal.ts's table, and with every number through
 * a template literal. Two figures each:
 *
 * - time per header (tinybench);
 * - young-generation collections while writing HEADERS headers, each with
 *   its own request id and the key's remaining count one lower, as under
 *   load: how many scavenges, and their median, mean and longest pause. Template
 *   literals put each new count into V8's number-string cache, which keeps
 *   it alive until the next scavenge has copied it; text joined without it
 *   is still garbage; the bytes are not.
 *
 *   node --expose-gc dist/bench/answer-headers.bench.js [--time 2000] [--json FILE]
 *
 * (--vpas is accepted, as by every micro bench, and ignored: no snapshot is involved.)
 */
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { Bench } from 'tinybench';
import { decimalText } from '../src/common/decimal.js';
import { AnswerHead, snapshotHeaderLines, type RateLimitHeaders } from '../src/http/answer-headers.js';
import { RequestIds } from '../src/http/request-ids.js';
import { microOptions, round3, taskRows, writeBenchReport } from './support/report.js';

/** Headers written per collection run: at 25k answers a second per thread, 80 s of load. */
const HEADERS = 2_000_000;
const QUOTA = 1_000_000_000;

const { time: taskTime, json } = microOptions();
const gc = (globalThis as { gc?: () => void }).gc;

/** Header lines for request `n` of `ids`, in one of the three ways; something with a length. */
type HeadLines = (ids: RequestIds, n: number, rateLimit: RateLimitHeaders) => { readonly length: number };

const DATA_VERSION = '20261122T074338123Z-000001';
const DATA_AS_OF = '2026-11-22T07:43:38.123Z';
const snapshotText = `application/json\r\nX-Data-Version: ${DATA_VERSION}\r\nX-Data-As-Of: ${DATA_AS_OF}`;
const snapshotBytes = snapshotHeaderLines(DATA_VERSION, DATA_AS_OF);

/** The text the edge wrote before the bytes: numbers joined from decimal.ts's table. */
const joinedHeadLines: HeadLines = (ids, n, rateLimit) =>
  `${snapshotText}\r\nX-Request-Id: ${ids.text(n)}\r\nX-RateLimit-Limit: ${rateLimit.limit}\r\nX-RateLimit-Remaining: ${decimalText(rateLimit.remaining)}\r\nX-RateLimit-Reset: ${rateLimit.reset}`;

/** The text written before decimal.ts: every number through a template literal. */
const templateHeadLines: HeadLines = (ids, n, rateLimit) =>
  `${snapshotText}\r\nX-Request-Id: ${ids.text(n)}\r\nX-RateLimit-Limit: ${rateLimit.limit}\r\nX-RateLimit-Remaining: ${rateLimit.remaining}\r\nX-RateLimit-Reset: ${rateLimit.reset}`;

/** AnswerHead.lines, one AnswerHead per RequestIds, as a serving thread has. */
const heads = new WeakMap<RequestIds, AnswerHead>();
const byteHeadLines: HeadLines = (ids, n, rateLimit) => {
  let head = heads.get(ids);
  if (head === undefined) {
    head = new AnswerHead(ids);
    heads.set(ids, head);
  }
  return head.lines(snapshotBytes, n, rateLimit);
};

/** A key's quota state as a run of requests spends it, and the id of each request. */
class RequestStream {
  readonly #ids = new RequestIds();
  #remaining = QUOTA;
  readonly #reset = Math.ceil(Date.now() / 1000) + 60;

  next(write: HeadLines): { readonly length: number } {
    if (this.#remaining === 0) this.#remaining = QUOTA;
    return write(this.#ids, this.#ids.next(), { limit: QUOTA, remaining: --this.#remaining, reset: this.#reset });
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
  // The three must write the same characters: the same request, every way.
  const check = new RequestStream();
  const all: HeadLines = (ids, n, rateLimit) => {
    const bytes = Buffer.from(byteHeadLines(ids, n, rateLimit) as Uint8Array).toString('latin1');
    const joined = joinedHeadLines(ids, n, rateLimit) as string;
    const template = templateHeadLines(ids, n, rateLimit) as string;
    if (bytes !== template || joined !== template) throw new Error(`the header writers differ:\n${bytes}\n${joined}\n${template}`);
    return bytes;
  };
  for (let i = 0; i < 10_000; i++) check.next(all);

  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  let sink = 0;
  const writers: [string, HeadLines][] = [
    ['AnswerHead.lines (bytes)', byteHeadLines],
    ['text, numbers from decimalText', joinedHeadLines],
    ['text, numbers by template literal', templateHeadLines],
  ];
  for (const [name, write] of writers) {
    const stream = new RequestStream();
    bench.add(name, () => {
      sink += stream.next(write).length;
    }, { beforeAll: () => gc?.() });
  }
  bench.runSync();
  const rows = taskRows(bench);
  console.table(rows);

  // Whichever writer runs first after the timing pays a one-off scavenge: a run not reported takes it.
  await collections(byteHeadLines);
  const young = {
    bytes: await collections(byteHeadLines),
    decimalText: await collections(joinedHeadLines),
    template: await collections(templateHeadLines),
  };
  console.log(`young-generation collections while writing ${HEADERS} headers:`);
  console.table(young);
  if (json !== undefined) writeBenchReport(json, 'answer-headers', null, { rows, headers: HEADERS, collections: young });
  if (sink === 0.5) console.log('unreachable');
}

await main();
