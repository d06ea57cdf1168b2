/**
 * A single lookup's answer below the HTTP layer (api/single-answer.ts):
 * lookup plus JSON written as bytes into a reused buffer, as a serving
 * thread answers, next to the text way it replaced (the verdict built as
 * objects, then joined by verdictJson), for flagged and unknown VPAs; and
 * the same lookups with a live delta of 100,000 VPAs beside the snapshot
 * (half of them VPAs the snapshot knows, half new), against an empty delta,
 * which the serving threads probe first (engine/serving-view.ts).
 *
 *   node --expose-gc dist/bench/single-answer.bench.js [--vpas 1000000] [--time 2000] [--json FILE]
 *
 * Queries are fresh flat strings cycled through pools larger than the CPU
 * caches, as in snapshot-view.bench.ts. Every answer is checked against the
 * text answer before timing; "mean B" is the mean answer size.
 */
import { Bench } from 'tinybench';
import { verdictJson } from '../src/api/answer-json.js';
import { answerSingle } from '../src/api/single-answer.js';
import { ByteScratch } from '../src/common/byte-scratch.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { ServingView } from '../src/engine/serving-view.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { microOptions, taskRows, writeBenchReport, type Row } from './support/report.js';
import { knownVpas, unknownVpas } from './support/vpas.js';
import { mergeDelta } from '../src/builder/delta-merge.js';
import { RecordWriter, packFlags } from '../src/builder/record-codec.js';
import type { SnapshotData } from '../src/engine/snapshot-data.js';
import type { DeltaData } from '../src/engine/delta-data.js';

const QUERIES = 1 << 18;
/** VPAs of the live delta measured beside the snapshot: the compaction policy's default bound. */
const DELTA_VPAS = 100_000;
/** As the serving thread's buffer (http/routes/verify.ts). */
const BODY_CAPACITY = 16_384;

const { vpas: vpaCount, time: taskTime, json } = microOptions();

const gc = (globalThis as { gc?: () => void }).gc;

function main(): void {
  const view = new SnapshotView(fakeSnapshot(vpaCount));
  const serving = new ServingView(view);
  const flagged = knownVpas(view.data, QUERIES, 1);
  const unknown = unknownVpas(view, QUERIES, 2);
  const out = new ByteScratch(BODY_CAPACITY);
  const asBytes = (q: string): number => {
    const answer = answerSingle(serving, q, out);
    return typeof answer === 'string' ? Buffer.byteLength(answer) : answer.length;
  };
  const asText = (q: string): number => verdictJson(view.verdict(q)).length;

  // Once, outside timing: the bytes are the text answer's, and no pool answer fell back to text.
  let fellBack = 0;
  for (const q of [...flagged.slice(0, 4096), ...unknown.slice(0, 4096)]) {
    const answer = answerSingle(serving, q, out);
    if (typeof answer === 'string') fellBack++;
    const bytes = typeof answer === 'string' ? Buffer.from(answer) : Buffer.from(answer);
    if (!bytes.equals(Buffer.from(verdictJson(view.verdict(q))))) throw new Error(`answer for ${q} differs from its text answer`);
  }
  console.log(`node ${process.version}, ${vpaCount} VPAs, ${fellBack} of 8192 answers checked written as text, gc ${gc ? 'exposed' : 'not exposed'}`);

  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  const sinks: { name: string; calls: number; bytes: number; meanBytes: number }[] = [];
  const add = (name: string, pool: readonly string[], answer: (q: string) => number): void => {
    const sink = { name, calls: 0, bytes: 0, meanBytes: 0 };
    for (let i = 0; i < 4096; i++) sink.meanBytes += answer(pool[i]!);
    sink.meanBytes = Math.round(sink.meanBytes / 4096);
    const n = pool.length;
    let next = 0;
    bench.add(
      name,
      () => {
        sink.bytes += answer(pool[next]!);
        next = next + 1 === n ? 0 : next + 1;
        sink.calls++;
      },
      { beforeAll: () => gc?.() },
    );
    sinks.push(sink);
  };
  const withDelta = new ServingView(view, deltaOver(view.data, flagged));
  const asBytesWithDelta = (q: string): number => {
    const answer = answerSingle(withDelta, q, out);
    return typeof answer === 'string' ? Buffer.byteLength(answer) : answer.length;
  };
  add('answerSingle as bytes, flagged', flagged, asBytes);
  add(`answerSingle as bytes, flagged, ${DELTA_VPAS} VPAs in the delta`, flagged, asBytesWithDelta);
  add('verdict object + verdictJson, flagged', flagged, asText);
  add('answerSingle as bytes, unknown', unknown, asBytes);
  add(`answerSingle as bytes, unknown, ${DELTA_VPAS} VPAs in the delta`, unknown, asBytesWithDelta);
  add('verdict object + verdictJson, unknown', unknown, asText);
  bench.runSync();

  for (const s of sinks) if (s.calls === 0 || s.bytes === 0) throw new Error(`${s.name}: no output`);
  const rows: (Row & { 'mean B': number })[] = taskRows(bench).map((row, i) => ({ ...row, 'mean B': sinks[i]!.meanBytes }));
  console.table(rows);
  if (json !== undefined) writeBenchReport(json, 'single-answer', vpaCount, { rows, queriesPerPool: QUERIES, bodyCapacity: BODY_CAPACITY });
}

/**
 * A delta of DELTA_VPAS VPAs over `base`: one new item for each of the
 * first half of `known` (VPAs the snapshot holds, which the flagged pool
 * then partly finds in the delta), and one for as many new VPAs.
 */
function deltaOver(base: SnapshotData, known: readonly string[]): DeltaData {
  const writer = new RecordWriter();
  const capturedAt = base.meta.scoredAt - 86_400_000;
  const knownKeys = [...new Set(known.map((q) => q.toLowerCase()))].slice(0, DELTA_VPAS / 2);
  for (let i = 0; i < DELTA_VPAS; i++) {
    const upi = i < knownKeys.length ? knownKeys[i]! : `delta.${i}@ybl`;
    writer.append(0, i, capturedAt, packFlags(i % 4, i % 5, i % 3 === 0), upi, `https://delta.example/${i % 20_000}`, `delta-${i}`);
  }
  const files = [{ name: 'delta.ndjson', firstChunk: 0, endChunk: 1, storedAt: capturedAt }];
  const { delta } = mergeDelta({ base, previous: null, inputs: [writer.finish()], files, now: Date.now() });
  if (delta.meta.vpaCount !== DELTA_VPAS) throw new Error(`the delta holds ${delta.meta.vpaCount} VPAs, not ${DELTA_VPAS}`);
  return delta;
}

main();
