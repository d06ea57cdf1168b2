/**
 * Validation of a 100-item batch body: JSON.parse of the body text followed
 * by parseBatchRequest, and parseBatchRequest alone on bodies parsed before
 * timing. Their difference is only a rough JSON.parse share: the second
 * reads strings parsed long before (cold in the CPU caches), the first
 * strings JSON.parse has just written.
 *
 *   node --expose-gc dist/bench/batch-request.bench.js [--time 2000] [--json FILE]
 *
 * --vpas is accepted and ignored (no snapshot is involved), so a runner can
 * pass every bench the same options. Bodies are BODIES distinct texts of
 * valid VPAs of the shapes real payees use, a tenth upper-cased and a tenth
 * capitalised, cycled so each call reads a body not used for thousands of
 * calls.
 */
import { Bench } from 'tinybench';
import { parseBatchRequest } from '../src/api/batch-request.js';
import { microOptions, taskRows, writeBenchReport } from './support/report.js';
import { mix, payeeVpa, typedCase } from './support/vpas.js';

const BATCH = 100;
// 4096 bodies of ~2.5 KB: 10 MB of text, well past the CPU caches.
const BODIES = 4096;

const { time: taskTime, json } = microOptions();

const gc = (globalThis as { gc?: () => void }).gc;

// ---------------------------------------------------------------------------
// Bodies

function bodyTexts(): string[] {
  const texts: string[] = [];
  for (let b = 0; b < BODIES; b++) {
    const upis: string[] = new Array<string>(BATCH);
    for (let j = 0; j < BATCH; j++) upis[j] = typedCase(payeeVpa(b * BATCH + j), mix(~(b * BATCH + j)));
    texts.push(JSON.stringify({ upis }));
  }
  return texts;
}

// ---------------------------------------------------------------------------
// Tasks

interface Counters {
  calls: number;
  errors: number;
  items: number;
}

function cycle<T>(pool: readonly T[], counters: Counters, validate: (body: T) => unknown): () => void {
  const n = pool.length;
  let next = 0;
  return () => {
    const upis = validate(pool[next]!);
    next = next + 1 === n ? 0 : next + 1;
    counters.calls++;
    if (Array.isArray(upis)) counters.items += upis.length;
    else counters.errors++;
  };
}

// ---------------------------------------------------------------------------
// Run

function main(): void {
  const texts = bodyTexts();
  const parsed = texts.map((text) => JSON.parse(text) as unknown);
  let textBytes = 0;
  for (const text of texts) textBytes += text.length;
  console.log(`node ${process.version}, ${BODIES} bodies of ${BATCH} VPAs, mean ${Math.round(textBytes / BODIES)} B, gc ${gc ? 'exposed' : 'not exposed'}`);

  // Every body is valid, so every call must give back all of its VPAs.
  for (const body of parsed) {
    const upis = parseBatchRequest(body);
    if (!Array.isArray(upis) || upis.length !== BATCH) throw new Error(`a body was rejected: ${JSON.stringify(upis)}`);
  }

  gc?.();
  const bench = new Bench({ time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow', subtractTimerOverhead: true });
  const options = { beforeAll: () => gc?.() };
  const withParse: Counters = { calls: 0, errors: 0, items: 0 };
  const alone: Counters = { calls: 0, errors: 0, items: 0 };
  bench.add(`JSON.parse + parseBatchRequest, ${BATCH} items`, cycle(texts, withParse, (text) => parseBatchRequest(JSON.parse(text))), options);
  bench.add(`parseBatchRequest, ${BATCH} items`, cycle(parsed, alone, parseBatchRequest), options);
  bench.runSync();

  for (const [label, c] of [['with JSON.parse', withParse], ['alone', alone]] as const) {
    if (c.errors !== 0 || c.items !== c.calls * BATCH) throw new Error(`${label}: ${c.errors} errors, ${c.items} items in ${c.calls} calls`);
  }
  const rows = taskRows(bench).map((row) => ({ ...row, 'VPAs/s': row['ops/s'] * BATCH }));
  console.table(rows);

  if (json !== undefined) {
    writeBenchReport(json, 'batch-request', null, {
      rows,
      batch: BATCH,
      bodies: BODIES,
      meanBodyBytes: Math.round(textBytes / BODIES),
    });
  }
  // The item counts make every result observable, so no call is dead code.
  if (withParse.items + alone.items === 0.5) console.log('unreachable');
}

main();
