/**
 * Answers as of a past instant (history/change-log.ts, score-columns.ts)
 * over a year of history: its storage, and the time to tell one answer
 * again from a log just opened.
 *
 * A year of states is written through the change log as a server writes
 * them, at these rates (per day, of `--vpas` flagged VPAs): a merge of
 * evidence every `--merge-minutes` (5), together bringing 0.2 % new VPAs
 * and new evidence for 0.2 % of those known; retractions of 0.01 % and
 * clearances of 0.002 % (half of them ended a week later); a compaction
 * every `--compact-minutes` (10) that changes the peers of 0.01 % of the
 * VPAs, the first of each day scoring every VPA again (a column). Each
 * VPA's evidence names one to three pages. Then the log is closed, opened
 * again (the start of a server), and `--lookups` VPAs (9 in 10 flagged at
 * some time, 1 in 10 never seen) are told as of instants spread over the
 * year, one after another: p50, p99 and max, of all of them and of those
 * after the first second. With `--cold`, the page cache is dropped first
 * (`/proc/sys/vm/drop_caches`, as root), so that the lookups read the disk.
 * With `--dir`, the history is kept there, and a later run on the same
 * directory only opens it and looks up (to measure again, warm or cold).
 * With `--store URL`, the history is also copied into a new schema of that
 * PostgreSQL store as a fleet's recorder copies it, and the same lookups
 * are told from there as a follower tells them (the state of the instant,
 * then the answer: two queries), with the bytes the store takes; the
 * schema is dropped afterwards. Without `--dir`, the log is removed once its
 * records are in the store.
 *
 *   node dist/bench/answers-as-of.bench.js [--vpas 1000000] [--days 365] [--lookups 20000] [--dir DIR] [--cold] [--store URL] [--json FILE]
 */
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { verdictJson } from '../src/api/answer-json.js';
import { CLEARED_FACTS, ChangeLog, type AnswerFacts } from '../src/history/change-log.js';
import type { AnswerDetail } from '../src/history/answer-detail.js';
import { pastVerdict } from '../src/history/past-verdicts.js';
import { formatIso } from '../src/common/time.js';
import { mulberry32 } from '../test/fixtures/random.js';
import { StoreAnswerHistory, recordedStateAt } from '../src/store/answer-history-store.js';
import { copyHistoryToStore, dropCopiedHistory } from './support/history-in-store.js';
import { percentile, round1, round3, wholeNumberOption, writeReport } from './support/report.js';

const { values } = parseArgs({
  options: {
    vpas: { type: 'string', default: '1000000' },
    days: { type: 'string', default: '365' },
    lookups: { type: 'string', default: '20000' },
    'merge-minutes': { type: 'string', default: '5' },
    'compact-minutes': { type: 'string', default: '10' },
    dir: { type: 'string' },
    cold: { type: 'boolean', default: false },
    store: { type: 'string' },
    json: { type: 'string' },
  },
  strict: true,
});
const vpas = wholeNumberOption('vpas', values.vpas);
const days = wholeNumberOption('days', values.days);
const lookups = wholeNumberOption('lookups', values.lookups);
const mergeMinutes = wholeNumberOption('merge-minutes', values['merge-minutes']);
const compactMinutes = wholeNumberOption('compact-minutes', values['compact-minutes']);
const DAY = 86_400_000;
const START = Date.parse('2025-11-01T00:00:00Z');
const random = mulberry32(41);
const pick = (n: number) => Math.floor(random() * n);

const keyOf = (i: number) => `payee${i}.${i % 97}@${['ybl', 'okaxis', 'paytm', 'ibl'][i % 4]!}`;
const categories = ['gambling', 'phishing', 'scam', 'telegram'] as const;

/** A VPA's answer with `pages` sources, captured up to `at`. */
function facts(i: number, pages: number, at: number, confidence: number, cluster = 0): AnswerFacts {
  const sources = Array.from({ length: pages }, (_, p) => ({
    url: `https://pages-${(i * 7 + p) % 50_000}.example/offer/${(i + p) % 997}`,
    category: categories[(i + p) % 4]!,
    captured_at: formatIso(at - p * 3_600_000),
    screenshot_available: p % 2 === 0,
  }));
  const detail: AnswerDetail = { cluster_size: cluster === 0 ? 0 : 3, first_seen: sources.at(-1)!.captured_at, last_seen: sources[0]!.captured_at, sources, evidence_count: pages + (i % 3) };
  return { flagged: true, risk: i % 5, confidence, cluster, printA: (i * 2654435761) >>> 0, printB: (pages * 40503 + at) >>> 0, detail: () => detail };
}

const dir = values.dir ?? (await mkdtemp(join(tmpdir(), 'upi-risk-as-of-')));
const path = join(dir, 'history', 'changes.log');
const pages = new Uint8Array(vpas * 2);
let known = vpas;
let evidenceItems = 0;
let states = 0;

const written = await stat(path).then(
  () => true,
  () => false,
);
let firstMs = 0;

/** A year of states, as a server writes them (see above), into `log`. */
async function writeYear(log: ChangeLog): Promise<void> {
  const began = performance.now();
  // Day 0: the first state records every VPA flagged.
  // The first state is compared whole, as a server compares its first: the index held in memory.
  const releaseFirst = await log.holdIndex();
  log.begin(START, 'v0');
  for (let i = 0; i < vpas; i++) {
    pages[i] = 1 + pick(3);
    evidenceItems += pages[i]!;
    log.add(keyOf(i), facts(i, pages[i]!, START - pick(300) * DAY, 3000 + pick(6000)), 'evidence');
    if (i % 65_536 === 65_535) await log.drained();
  }
  await log.commit(START);
  releaseFirst();
  states++;
  firstMs = performance.now() - began;

  const clearedUntil = new Map<number, number>();
  for (let day = 0; day < days; day++) {
    const dayStart = START + day * DAY;
    const newPerDay = Math.max(1, Math.round(vpas * 0.002));
    const merges = Math.floor((24 * 60) / mergeMinutes);
    const perMerge = Math.max(1, Math.round(newPerDay / merges));
    const compactEvery = Math.max(1, Math.round(compactMinutes / mergeMinutes));
    for (let m = 0; m < merges; m++) {
      const at = dayStart + m * mergeMinutes * 60_000 + 1;
      log.begin(at, `d${day}m${m}`);
      // New VPAs and new evidence for known ones, spread over the day's merges.
      for (let k = 0; k < perMerge; k++) {
        if (known < pages.length) {
          pages[known] = 1;
          log.add(keyOf(known), facts(known, 1, at, 4000 + pick(2000)), 'evidence');
          known++;
          evidenceItems++;
        }
        const i = pick(known);
        pages[i] = Math.min(3, pages[i]! + 1);
        evidenceItems++;
        log.add(keyOf(i), facts(i, pages[i]!, at, 6000 + pick(3900)), 'evidence');
      }
      if (random() < (vpas * 0.0001) / merges) log.add(keyOf(pick(known)), CLEARED_FACTS, 'retraction');
      if (random() < (vpas * 0.00002) / merges) {
        const i = pick(known);
        log.add(keyOf(i), CLEARED_FACTS, 'clearance');
        clearedUntil.set(i, day + 7);
      }
      for (const [i, until] of clearedUntil) {
        if (until !== day || m !== 0) continue;
        log.add(keyOf(i), facts(i, pages[i]!, at, 5000), 'clearance_ended');
        clearedUntil.delete(i);
      }
      let scoredAt: number | null = null;
      let release: (() => void) | null = null;
      if (m % compactEvery === 0) {
        // A compaction: peers counted again for a few; the first of the day scores every VPA again.
        for (let k = 0; k < vpas * 0.0001; k++) {
          const i = pick(known);
          log.add(keyOf(i), facts(i, pages[i]!, at, 5000 + pick(4000), 1 + (i % 1000)), 'compaction');
        }
        if (m === 0) {
          // As a server takes a day's column: in a pass over every VPA, its index held in memory.
          release = await log.holdIndex();
          const scores = new Uint16Array(log.numbered);
          for (let n = 0; n < scores.length; n++) scores[n] = 2000 + pick(7900);
          log.takeServedConfidences(scores);
          scoredAt = dayStart;
        }
      }
      await log.commit(scoredAt);
      release?.();
      states++;
    }
  }
}

const started = performance.now();
let log = await ChangeLog.open(path, written ? Number.MAX_SAFE_INTEGER : 0);
if (!written) await writeYear(log);
await log.close();
// What was written, when this run wrote it: the year's end; else read back from the log.
if (written) known = log.vpaCount;
const writeMs = performance.now() - started;
const logBytes = (await stat(path)).size;
let scoreBytes = 0;
const scoresDir = join(dir, 'history', 'scores');
for (const name of await readdir(scoresDir)) scoreBytes += (await stat(join(scoresDir, name))).size;

// A server starting: the log opened (its kept index read), then lookups as of instants over the year.
let dropped = false;
if (values.cold) {
  await writeFile('/proc/sys/vm/drop_caches', '1\n').then(
    () => (dropped = true),
    (error: Error) => console.error(`the page cache was not dropped: ${error.message}`),
  );
}
const openStarted = performance.now();
log = await ChangeLog.open(path, Number.MAX_SAFE_INTEGER);
const openMs = performance.now() - openStarted;
const times: number[] = [];
const afterFirstSecond: number[] = [];
const lookupsStarted = performance.now();
for (let k = 0; k < lookups; k++) {
  const key = random() < 0.9 ? keyOf(pick(known)) : `nobody${k}@ybl`;
  const at = START + Math.floor(random() * days * DAY);
  const t0 = performance.now();
  verdictJson(pastVerdict(key, await log.answerAt(key, at)));
  const ms = performance.now() - t0;
  times.push(ms);
  if (t0 - lookupsStarted > 1000) afterFirstSecond.push(ms);
}

const summary = (list: number[]) => {
  const sorted = [...list].sort((a, b) => a - b);
  return { count: sorted.length, p50Ms: round3(percentile(sorted, 0.5)), p99Ms: round3(percentile(sorted, 0.99)), maxMs: round3(sorted.at(-1) ?? 0) };
};

// The same lookups as a fleet follower tells them, from the store.
let logOpen = true;
let store: { copyS: number; bytes: number; perMillionVpasMB: number; lookups: ReturnType<typeof summary>; lookupsAfterFirstSecond: ReturnType<typeof summary> } | null = null;
if (values.store !== undefined) {
  const copyStarted = performance.now();
  // A directory the bench made loses its log once copied, so that a year at 10M needs the disk of the larger of the two, not of both.
  const dropLog = async () => {
    if (values.dir !== undefined) return;
    logOpen = false;
    await log.close();
    await rm(path);
  };
  const copy = await copyHistoryToStore(values.store, log, join(dir, 'history'), START + days * DAY, dropLog);
  const copyMs = performance.now() - copyStarted;
  const history = new StoreAnswerHistory(copy.pool, copy.location, 0);
  const storeTimes: number[] = [];
  const storeAfterFirstSecond: number[] = [];
  const storeStarted = performance.now();
  const again = mulberry32(43);
  for (let k = 0; k < lookups; k++) {
    const key = again() < 0.9 ? keyOf(Math.floor(again() * known)) : `nobody${k}@ybl`;
    const at = START + Math.floor(again() * days * DAY);
    const t0 = performance.now();
    const state = await recordedStateAt(copy.pool, copy.location, at);
    verdictJson(pastVerdict(key, await history.answerAt(key, state?.from ?? at)));
    const ms = performance.now() - t0;
    storeTimes.push(ms);
    if (t0 - storeStarted > 1000) storeAfterFirstSecond.push(ms);
  }
  store = { copyS: round1(copyMs / 1000), bytes: copy.bytes, perMillionVpasMB: round1((copy.bytes / 1e6) * (1e6 / known)), lookups: summary(storeTimes), lookupsAfterFirstSecond: summary(storeAfterFirstSecond) };
  await dropCopiedHistory(copy);
}
if (logOpen) await log.close();
if (values.dir === undefined) await rm(dir, { recursive: true, force: true });

const report = {
  benchmark: 'answers-as-of',
  vpas,
  days,
  rates: { mergeMinutes, compactMinutes, newVpasPerDay: Math.round(vpas * 0.002), updatedVpasPerDay: Math.round(vpas * 0.002), retractionsPerDay: vpas * 0.0001, clearancesPerDay: vpas * 0.00002, peersChangedPerCompaction: vpas * 0.0001 },
  states,
  vpasAtEnd: known,
  evidenceItems,
  firstStateS: round1(firstMs / 1000),
  writeS: round1(writeMs / 1000),
  storage: {
    changesLogBytes: logBytes,
    scoresBytes: scoreBytes,
    perMillionVpasMB: round1(((logBytes + scoreBytes) / 1e6) * (1e6 / known)),
    perMillionEvidenceItemsMB: evidenceItems === 0 ? null : round1(((logBytes + scoreBytes) / 1e6) * (1e6 / evidenceItems)),
  },
  written: !written,
  pageCacheDropped: dropped,
  openMs: round1(openMs),
  lookups: summary(times),
  lookupsAfterFirstSecond: summary(afterFirstSecond),
  store,
};
console.log(JSON.stringify(report, null, 2));
if (values.json !== undefined) writeReport(values.json, report);
