/**
 * A batch of 100 end to end below the HTTP layer: answerBatchBody from body
 * bytes to response JSON (JSON.parse, validation, 100 lookups and batch
 * items, JSON.stringify) against a fake snapshot.
 *
 *   node --expose-gc dist/bench/batch-answer.bench.js [--vpas 1000000] [--time 2000] [--json FILE]
 *
 * Bodies are Buffers built before timing, BODIES distinct ones per case,
 * cycled so each call parses and looks up VPAs not used for thousands of
 * calls. Two cases: a realistic mix (5 of every 100 VPAs known, so flagged;
 * the rest unknown payees of the shapes real VPAs take) and all flagged
 * (every item carries a cluster id and size). In both, a tenth of the VPAs
 * are upper-cased and a tenth capitalised, as users type them.
 */
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { answerBatchBody } from '../src/api/batch-answer.js';
import { NOT_FOUND } from '../src/common/brand.js';
import { Intelligence } from '../src/engine/intelligence.js';
import type { BatchResponse } from '../src/engine/verdict.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { round1, taskRows, wholeNumberOption, writeReport, type Row } from './support/report.js';

const BATCH = 100;
// 4096 bodies of ~2.5 KB: 10 MB per case, well past the CPU caches.
const BODIES = 4096;
const FLAGGED_PER_MIXED_BODY = 5;

const { values: args } = parseArgs({
  options: {
    vpas: { type: 'string', default: '1000000' },
    time: { type: 'string', default: '2000' },
    json: { type: 'string' },
  },
  strict: true,
});
const vpaCount = wholeNumberOption('vpas', args.vpas);
const taskTime = wholeNumberOption('time', args.time);

const gc = (globalThis as { gc?: () => void }).gc;

// ---------------------------------------------------------------------------
// VPAs

const PROVIDERS = ['ybl', 'okaxis', 'paytm', 'ibl', 'axl', 'apl', 'okicici', 'oksbi', 'okhdfcbank', 'upi', 'axisbank', 'kotak'];
const FIRST = ['rahul', 'priya', 'amit', 'sneha', 'vikram', 'anita', 'suresh', 'deepa', 'arjun', 'kavya', 'rohan', 'meera',
  'sanjay', 'pooja', 'karthik', 'lakshmi', 'manoj', 'divya', 'imran', 'fatima', 'gurpreet', 'harish', 'nisha', 'vijay'];
const LAST = ['sharma', 'verma', 'patel', 'reddy', 'iyer', 'nair', 'singh', 'khan', 'gupta', 'das', 'rao', 'joshi',
  'mehta', 'kulkarni', 'chopra', 'bose', 'pillai', 'shetty', 'yadav', 'mishra'];

/** A well-mixed uint32 of i (murmur3 finaliser), for per-item choices. */
function mix(i: number): number {
  let h = Math.imul(i ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function pick<T>(list: readonly T[], r: number): T {
  return list[r % list.length]!;
}

/**
 * A valid payee VPA: mobile numbers, name handles, merchant QR handles. The
 * fake snapshot's keys are a word and a short base-36 id, so these almost
 * never collide with them; the pools check every one anyway.
 */
function payeeVpa(i: number): string {
  const r = mix(i);
  const n = mix(i ^ 0x5bd1e995);
  const first = pick(FIRST, r >>> 8);
  const last = pick(LAST, r >>> 16);
  const provider = pick(PROVIDERS, r >>> 4);
  switch (r % 10) {
    case 0:
    case 1:
    case 2:
    case 3:
      return `${6_000_000_000 + (n % 4_000_000_000)}@${provider}`;
    case 4:
      return `${first}.${last}${n % 10_000}@${provider}`;
    case 5:
      return `${first}${last}${n % 1000}@${provider}`;
    case 6:
      return `${first}_${n % 100_000}@${provider}`;
    case 7:
      return `${first}.${last}@${provider}`;
    case 8:
      return `paytmqr${n}${(r >>> 12).toString(36)}@paytm`;
    default:
      return `q${100_000_000 + (n % 900_000_000)}@ybl`;
  }
}

function caseVaried(vpa: string, r: number): string {
  const style = r % 10;
  return style === 0 ? vpa.toUpperCase() : style === 1 ? vpa[0]!.toUpperCase() + vpa.slice(1) : vpa;
}

function keyOf(keyBytes: Uint8Array, keyOffsets: Uint32Array, id: number): string {
  return Buffer.from(keyBytes.buffer, keyBytes.byteOffset + keyOffsets[id]!, keyOffsets[id + 1]! - keyOffsets[id]!).toString('latin1');
}

/** BODIES request bodies of BATCH VPAs, `flaggedPerBody` of them known to `intel`, at positions varying by body. */
function bodyPool(intel: Intelligence, flaggedPerBody: number, seed: number): Buffer[] {
  const { keyBytes, keyOffsets } = intel.data;
  const stride = BATCH / flaggedPerBody;
  const bodies: Buffer[] = [];
  let payee = seed * 1_000_003;
  for (let b = 0; b < BODIES; b++) {
    const offset = mix(b + seed) % stride;
    const upis: string[] = new Array<string>(BATCH);
    for (let j = 0; j < BATCH; j++) {
      const r = mix(b * BATCH + j + seed);
      if (j % stride === offset) {
        upis[j] = caseVaried(keyOf(keyBytes, keyOffsets, r % vpaCount), r >>> 8);
      } else {
        let vpa: string;
        do vpa = payeeVpa(payee++);
        while (intel.lookup(vpa) !== NOT_FOUND);
        upis[j] = caseVaried(vpa, r >>> 8);
      }
    }
    bodies.push(Buffer.from(JSON.stringify({ upis })));
  }
  return bodies;
}

// ---------------------------------------------------------------------------
// Tasks

interface Counters {
  calls: number;
  errors: number;
  bytes: number;
}

/** Once, outside timing: the answer is JSON of a full batch with the expected flagged count. */
function check(label: string, intel: Intelligence, body: Buffer, flagged: number): void {
  const answer = answerBatchBody(intel, body);
  if (typeof answer !== 'string') throw new Error(`${label}: answered ${answer.status} ${answer.message}`);
  const response = JSON.parse(answer) as BatchResponse;
  if (response.total !== BATCH || response.results.length !== BATCH || response.flagged_count !== flagged) {
    throw new Error(`${label}: total ${response.total}, flagged ${response.flagged_count}; expected ${BATCH}, ${flagged}`);
  }
}

function addTask(bench: Bench, label: string, intel: Intelligence, pool: readonly Buffer[], counters: Counters): void {
  const n = pool.length;
  let next = 0;
  bench.add(
    label,
    () => {
      const answer = answerBatchBody(intel, pool[next]!);
      next = next + 1 === n ? 0 : next + 1;
      counters.calls++;
      if (typeof answer === 'string') counters.bytes += answer.length;
      else counters.errors++;
    },
    { beforeAll: () => gc?.() },
  );
}

function meanBytes(pool: readonly Buffer[]): number {
  let total = 0;
  for (const body of pool) total += body.length;
  return Math.round(total / pool.length);
}

// ---------------------------------------------------------------------------
// Run

function main(): void {
  const t0 = performance.now();
  const intel = new Intelligence(fakeSnapshot(vpaCount));
  const t1 = performance.now();
  const mixed = bodyPool(intel, FLAGGED_PER_MIXED_BODY, 1);
  const flagged = bodyPool(intel, BATCH, 2);
  const t2 = performance.now();
  console.log(
    `node ${process.version}, ${vpaCount} VPAs (snapshot ${Math.round(t1 - t0)} ms), ${BODIES} bodies of ${BATCH} per case (${Math.round(t2 - t1)} ms), gc ${gc ? 'exposed' : 'not exposed'}`,
  );

  const cases = [
    { label: `mixed, ${FLAGGED_PER_MIXED_BODY}% flagged`, pool: mixed, flagged: FLAGGED_PER_MIXED_BODY },
    { label: 'all flagged', pool: flagged, flagged: BATCH },
  ];
  for (const c of cases) check(c.label, intel, c.pool[0]!, c.flagged);
  // A pass over each pool first: cluster sizes are decoded on first use and
  // then kept for the snapshot's life, so a serving process has them all.
  let warm = 0;
  for (const c of cases) for (const body of c.pool) warm += (answerBatchBody(intel, body) as string).length;

  gc?.();
  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  const counters = cases.map((c) => {
    const counter: Counters = { calls: 0, errors: 0, bytes: 0 };
    addTask(bench, `answerBatchBody ${BATCH}, ${c.label}`, intel, c.pool, counter);
    return counter;
  });
  bench.runSync();

  const rows: (Row & Record<string, number | string>)[] = taskRows(bench).map((row, i) => {
    const counter = counters[i]!;
    if (counter.errors !== 0) throw new Error(`${row.task}: ${counter.errors} of ${counter.calls} answers were errors`);
    return {
      ...row,
      'VPAs/s': row['ops/s'] * BATCH,
      'ns/VPA': round1(row['mean ns'] / BATCH),
      'body B': meanBytes(cases[i]!.pool),
      'answer B': Math.round(counter.bytes / counter.calls),
    };
  });
  console.table(rows);

  if (args.json !== undefined) {
    writeReport(args.json, {
      benchmark: 'batch-answer',
      node: process.version,
      date: new Date().toISOString(),
      vpas: vpaCount,
      rows,
      batch: BATCH,
      bodiesPerCase: BODIES,
      clusters: intel.meta.clusterCount,
    });
  }
  // The byte counts make every answer observable, so none is dead code.
  if (counters.reduce((sum, c) => sum + c.bytes, warm) === 0.5) console.log('unreachable');
}

main();
