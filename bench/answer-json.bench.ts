/**
 * Encoding answers as JSON: the hand-written encoders of answer-json.ts next
 * to JSON.stringify of the same objects, for a flagged and a cleared
 * verdict and for batch responses of 100 (5% flagged, all flagged); and
 * JSON.stringify of a cluster, which is how clusters are served.
 *
 *   node --expose-gc dist/bench/answer-json.bench.js [--vpas 1000000] [--time 2000] [--json FILE]
 *
 * The objects are answers from a fake snapshot, OBJECTS distinct ones per
 * case, built before timing and cycled. Having survived into the old
 * generation they are colder than the fresh answers a request encodes, so
 * these times likely run high. Each encoder's output is checked against
 * JSON.stringify before timing; "mean B" is the mean encoded size.
 */
import { Bench } from 'tinybench';
import { batchResponseJson, verdictJson } from '../src/api/answer-json.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { type BatchItem, type BatchResponse, type Cluster, type VpaVerdict } from '../src/engine/verdict.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { microOptions, taskRows, writeBenchReport, type Row } from './support/report.js';
import { knownVpas, shuffledClusterIds, unknownVpas } from './support/vpas.js';

/** Objects per case: distinct answers, a few MB of them. */
const OBJECTS = 4096;
const BATCH = 100;
/** One in 20 batch items known, so 5% flagged. */
const MIXED_FLAGGED_EVERY = 20;

const { vpas: vpaCount, time: taskTime, json } = microOptions();

const gc = (globalThis as { gc?: () => void }).gc;

// ---------------------------------------------------------------------------
// Answers

/** Batch `at` of BATCH items from the query pools, every `flaggedEvery`-th one known. */
function batchResponse(view: SnapshotView, known: readonly string[], unknown: readonly string[], at: number, flaggedEvery: number): BatchResponse {
  const results: BatchItem[] = [];
  let flagged = 0;
  for (let j = 0; j < BATCH; j++) {
    const k = at * BATCH + j;
    const item = view.batchItem(j % flaggedEvery === 0 ? known[k % known.length]! : unknown[k % unknown.length]!);
    if (item.status === 'FLAGGED') flagged++;
    results.push(item);
  }
  return { results, total: BATCH, flagged_count: flagged, cleared_count: BATCH - flagged };
}

/** Clusters in a shuffled order, so consecutive encodings read unrelated memory. */
function clusters(view: SnapshotView, count: number, seed: number): Cluster[] {
  return shuffledClusterIds(view.data, count, seed).map((id) => view.cluster(id)!);
}

// ---------------------------------------------------------------------------
// Tasks

interface Encoding {
  name: string;
  bytes: number;
  calls: number;
  /** Mean encoded size over the pool, in bytes. */
  meanBytes: number;
}

/** Once, outside timing: `encode` must write exactly JSON.stringify's text for every object of `pool`. */
function checkEncoder<T>(label: string, pool: readonly T[], encode: (answer: T) => string): void {
  for (const answer of pool) {
    if (encode(answer) !== JSON.stringify(answer)) throw new Error(`${label}: differs from JSON.stringify for ${JSON.stringify(answer)}`);
  }
}

function meanBytes<T>(pool: readonly T[], encode: (answer: T) => string): number {
  let total = 0;
  for (const answer of pool) total += Buffer.byteLength(encode(answer));
  return Math.round(total / pool.length);
}

// ---------------------------------------------------------------------------
// Run

function main(): void {
  const t0 = performance.now();
  const view = new SnapshotView(fakeSnapshot(vpaCount));
  const t1 = performance.now();
  // Enough queries for OBJECTS / 4 all-flagged batches, the largest use.
  const known = knownVpas(view.data, (OBJECTS / 4) * BATCH, 1);
  const unknown = unknownVpas(view, (OBJECTS / 4) * BATCH, 2);
  const flaggedVerdicts: VpaVerdict[] = known.slice(0, OBJECTS).map((q) => view.verdict(q));
  const clearedVerdicts: VpaVerdict[] = unknown.slice(0, OBJECTS).map((q) => view.verdict(q));
  const mixedBatches: BatchResponse[] = [];
  const flaggedBatches: BatchResponse[] = [];
  for (let b = 0; b < OBJECTS / 4; b++) {
    mixedBatches.push(batchResponse(view, known, unknown, b, MIXED_FLAGGED_EVERY));
    flaggedBatches.push(batchResponse(view, known, unknown, b, 1));
  }
  const clusterPool = clusters(view, OBJECTS, 3);
  if (clusterPool.length === 0) throw new Error(`no clusters at ${vpaCount} VPAs; use --vpas 100 or more`);
  const t2 = performance.now();
  console.log(
    `node ${process.version}, ${vpaCount} VPAs (snapshot ${Math.round(t1 - t0)} ms, answers ${Math.round(t2 - t1)} ms), gc ${gc ? 'exposed' : 'not exposed'}`,
  );
  if (flaggedVerdicts.some((v) => v.status !== 'FLAGGED') || clearedVerdicts.some((v) => v.status !== 'CLEARED')) {
    throw new Error('a verdict pool holds a verdict of the other kind');
  }
  if (flaggedBatches.some((r) => r.flagged_count !== BATCH) || mixedBatches.some((r) => r.flagged_count !== BATCH / MIXED_FLAGGED_EVERY)) {
    throw new Error('a batch pool holds a batch with an unexpected flagged count');
  }
  checkEncoder('verdictJson', flaggedVerdicts, verdictJson);
  checkEncoder('verdictJson', clearedVerdicts, verdictJson);
  checkEncoder('batchResponseJson', mixedBatches, batchResponseJson);
  checkEncoder('batchResponseJson', flaggedBatches, batchResponseJson);

  gc?.();
  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  const encodings: Encoding[] = [];
  const add = <T>(name: string, pool: readonly T[], encode: (answer: T) => string): void => {
    const e: Encoding = { name, bytes: 0, calls: 0, meanBytes: meanBytes(pool, encode) };
    const n = pool.length;
    let next = 0;
    bench.add(
      name,
      () => {
        e.bytes += encode(pool[next]!).length;
        next = next + 1 === n ? 0 : next + 1;
        e.calls++;
      },
      { beforeAll: () => gc?.() },
    );
    encodings.push(e);
  };
  const stringify = (answer: object): string => JSON.stringify(answer);

  add('verdictJson, flagged', flaggedVerdicts, verdictJson);
  add('JSON.stringify verdict, flagged', flaggedVerdicts, stringify);
  add('verdictJson, cleared', clearedVerdicts, verdictJson);
  add('JSON.stringify verdict, cleared', clearedVerdicts, stringify);
  add(`batchResponseJson ${BATCH}, 5% flagged`, mixedBatches, batchResponseJson);
  add(`JSON.stringify batch of ${BATCH}, 5% flagged`, mixedBatches, stringify);
  add(`batchResponseJson ${BATCH}, all flagged`, flaggedBatches, batchResponseJson);
  add(`JSON.stringify batch of ${BATCH}, all flagged`, flaggedBatches, stringify);
  add('JSON.stringify cluster (as served)', clusterPool, stringify);
  bench.runSync();

  for (const e of encodings) if (e.calls === 0 || e.bytes === 0) throw new Error(`${e.name}: no output`);
  const rows: (Row & { 'mean B': number })[] = taskRows(bench).map((row, i) => ({ ...row, 'mean B': encodings[i]!.meanBytes }));
  console.table(rows);

  if (json !== undefined) writeBenchReport(json, 'answer-json', vpaCount, { rows, batch: BATCH, objectsPerCase: OBJECTS });
  // The byte counts make every encoding observable, so none is dead code.
  if (encodings.reduce((sum, e) => sum + e.bytes, 0) === 0.5) console.log('unreachable');
}

main();
