/**
 * A batch of 100 end to end below the HTTP layer: answerBatchBody from body
 * bytes to response JSON (JSON.parse, validation, 100 lookups and batch
 * items, written as bytes) against a fake snapshot.
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
import { Bench } from 'tinybench';
import { BATCH_ANSWER_BOUND, answerBatchBody } from '../src/api/batch-answer.js';
import { ByteScratch } from '../src/common/byte-scratch.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { ServingView } from '../src/engine/serving-view.js';
import type { BatchResponse } from '../src/engine/verdict.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { microOptions, round1, taskRows, writeBenchReport, type Row } from './support/report.js';
import { knownVpas, mix, unknownVpas } from './support/vpas.js';

const BATCH = 100;
// 4096 bodies of ~2.5 KB: 10 MB per case, well past the CPU caches.
const BODIES = 4096;
const FLAGGED_PER_MIXED_BODY = 5;

const { vpas: vpaCount, time: taskTime, json } = microOptions();

const gc = (globalThis as { gc?: () => void }).gc;
/** The answer's bytes, reused from call to call as the edge reuses them. */
const scratch = new ByteScratch(BATCH_ANSWER_BOUND);

// ---------------------------------------------------------------------------
// Bodies

/** BODIES request bodies of BATCH VPAs, `flaggedPerBody` of them known to `view`, at positions varying by body. */
function bodyPool(view: SnapshotView, flaggedPerBody: number, seed: number): Buffer[] {
  const stride = BATCH / flaggedPerBody;
  const known = knownVpas(view.data, BODIES * flaggedPerBody, seed);
  const unknown = unknownVpas(view, BODIES * (BATCH - flaggedPerBody), seed);
  let k = 0;
  let u = 0;
  const bodies: Buffer[] = [];
  for (let b = 0; b < BODIES; b++) {
    const offset = mix(b + seed) % stride;
    const upis: string[] = new Array<string>(BATCH);
    for (let j = 0; j < BATCH; j++) upis[j] = j % stride === offset ? known[k++]! : unknown[u++]!;
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
function check(label: string, view: SnapshotView, body: Buffer, flagged: number): void {
  const answer = answerBatchBody(new ServingView(view), body, scratch);
  if (!(answer instanceof Uint8Array)) throw new Error(`${label}: answered ${JSON.stringify(answer)}`);
  const response = JSON.parse(Buffer.from(answer).toString('latin1')) as BatchResponse;
  if (response.total !== BATCH || response.results.length !== BATCH || response.flagged_count !== flagged) {
    throw new Error(`${label}: total ${response.total}, flagged ${response.flagged_count}; expected ${BATCH}, ${flagged}`);
  }
}

function addTask(bench: Bench, label: string, view: SnapshotView, pool: readonly Buffer[], counters: Counters): void {
  const serving = new ServingView(view);
  const n = pool.length;
  let next = 0;
  bench.add(
    label,
    () => {
      const answer = answerBatchBody(serving, pool[next]!, scratch);
      next = next + 1 === n ? 0 : next + 1;
      counters.calls++;
      if (answer instanceof Uint8Array) counters.bytes += answer.length;
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
  const view = new SnapshotView(fakeSnapshot(vpaCount));
  const t1 = performance.now();
  const mixed = bodyPool(view, FLAGGED_PER_MIXED_BODY, 1);
  const flagged = bodyPool(view, BATCH, 2);
  const t2 = performance.now();
  console.log(
    `node ${process.version}, ${vpaCount} VPAs (snapshot ${Math.round(t1 - t0)} ms), ${BODIES} bodies of ${BATCH} per case (${Math.round(t2 - t1)} ms), gc ${gc ? 'exposed' : 'not exposed'}`,
  );

  const cases = [
    { label: `mixed, ${FLAGGED_PER_MIXED_BODY}% flagged`, pool: mixed, flagged: FLAGGED_PER_MIXED_BODY },
    { label: 'all flagged', pool: flagged, flagged: BATCH },
  ];
  for (const c of cases) check(c.label, view, c.pool[0]!, c.flagged);
  // A pass over each pool first: cluster sizes are decoded on first use and
  // then kept for the snapshot's life, so a serving process has them all.
  let warm = 0;
  const serving = new ServingView(view);
  for (const c of cases) for (const body of c.pool) warm += (answerBatchBody(serving, body, scratch) as Uint8Array).length;

  gc?.();
  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  const counters = cases.map((c) => {
    const counter: Counters = { calls: 0, errors: 0, bytes: 0 };
    addTask(bench, `answerBatchBody ${BATCH}, ${c.label}`, view, c.pool, counter);
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

  if (json !== undefined) {
    writeBenchReport(json, 'batch-answer', vpaCount, {
      rows,
      batch: BATCH,
      bodiesPerCase: BODIES,
      clusters: view.meta.clusterCount,
    });
  }
  // The byte counts make every answer observable, so none is dead code.
  if (counters.reduce((sum, c) => sum + c.bytes, warm) === 0.5) console.log('unreachable');
}

main();
