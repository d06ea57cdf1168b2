/**
 * Lookup latency and footprint of the compact VPA index, with a Map-backed
 * ReferenceIndex of the same keys for context.
 *
 *   node --expose-gc dist/bench/vpa-index.bench.js [--keys 1000000] [--queries 1000000] [--time 2000] [--json FILE] [--no-reference]
 *
 * Queries are fresh flat strings decoded from bytes (as a request parser
 * makes them), a quarter upper-cased and a quarter capitalised; hits and
 * misses run as separate tasks and each cycles through its own pool, larger
 * than the CPU caches, so nothing stays warm between uses of a query.
 *
 * Two timings per case: "1 call" times every lookup on its own (hrtime,
 * timer overhead subtracted), giving a true per-lookup median and p99;
 * "batch" times runs of BATCH lookups, giving the throughput of back-to-back
 * lookups, whose cache misses may overlap.
 *
 * Lookups at 10M keys are bound by random-access memory latency (the run
 * prints it): a miss waits for one random cache line of tags; a hit also for
 * the slot's entry, whose read overlaps the tag's (its address depends only
 * on the slot), and a key too long for its entry for its tail after that.
 * Most keys are short, so short keys make the hit median. TLB misses are a
 * large part of it, so compare runs with
 * GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which backs the large typed arrays
 * with transparent huge pages where the kernel allows it (THP "madvise");
 * the layout table shows how much memory huge pages back ("huge pages MiB").
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { NOT_FOUND } from '../src/common/brand.js';
import { ReferenceIndex } from '../test/reference-index.js';
import { buildIndexArrays, VpaIndex } from '../src/engine/vpa-index.js';
import type { KeyIndex } from '../src/engine/key-index.js';
import { round1, taskRows as rows, wholeNumberOption as wholeNumber, writeReport, type Row } from './support/report.js';
import { distinctVpa, flatStrings, mix, shuffledOrder, typedCase } from './support/vpas.js';

const BATCH = 1000;

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    queries: { type: 'string', default: '1000000' },
    time: { type: 'string', default: '2000' },
    json: { type: 'string' },
    'no-reference': { type: 'boolean', default: false },
  },
  strict: true,
});
const keyCount = wholeNumber('keys', args.keys);
const queryCount = wholeNumber('queries', args.queries);
const taskTime = wholeNumber('time', args.time);

const gc = (globalThis as { gc?: () => void }).gc;

// ---------------------------------------------------------------------------
// Data: key i is distinctVpa(i) for i < keyCount, so ids beyond it give
// guaranteed misses of the same shape.

function encode(count: number): { keyBytes: Uint8Array; keyOffsets: Uint32Array } {
  let keyBytes = new Uint8Array(Math.max(64, count * 24));
  const keyOffsets = new Uint32Array(count + 1);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const key = distinctVpa(i);
    if (at + key.length > keyBytes.length) {
      const grown = new Uint8Array(keyBytes.length * 2);
      grown.set(keyBytes);
      keyBytes = grown;
    }
    for (let j = 0; j < key.length; j++) keyBytes[at++] = key.charCodeAt(j);
    keyOffsets[i + 1] = at;
  }
  return { keyBytes: keyBytes.slice(0, at), keyOffsets };
}

/** Fresh, flat query strings for key ids `ids`, a quarter upper-cased and a quarter capitalised. */
function queryPool(ids: Uint32Array): string[] {
  return flatStrings(Array.from(ids, (id, n) => typedCase(distinctVpa(id), mix(n ^ 0x5bd1e995), 4)));
}

function randomIds(count: number, from: number, span: number, seed: number): Uint32Array {
  const ids = new Uint32Array(count);
  for (let n = 0; n < count; n++) ids[n] = from + (mix(n * 2 + seed) % span);
  return ids;
}

/**
 * Latency of one dependent random load from a buffer of `bytes` (a pointer
 * chase through a random cycle of cache lines): the floor for each part of
 * a lookup (the tags, the entries) at the index's sizes.
 */
function loadLatencyNs(bytes: number): number {
  const lines = Math.max(2, Math.floor(bytes / 64));
  const next = new Uint32Array(lines * 16);
  const order = shuffledOrder(lines, 0x1234);
  for (let i = 0; i < lines; i++) next[order[i]! * 16] = order[(i + 1) % lines]! * 16;
  const steps = 2_000_000;
  let at = 0;
  for (let i = 0; i < steps / 4; i++) at = next[at]!;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < steps; i++) at = next[at]!;
  const ns = Number(process.hrtime.bigint() - t0) / steps;
  if (at === 0.5) console.log('unreachable');
  return round1(ns);
}

/** MiB of this process's memory backed by transparent huge pages (Linux), or -1 when unknown. */
function hugePagesMiB(): number {
  try {
    const match = /AnonHugePages:\s+(\d+) kB/.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : -1;
  } catch {
    return -1;
  }
}

function memoryNow(): { heapUsed: number; external: number; arrayBuffers: number } {
  gc?.();
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers };
}

// ---------------------------------------------------------------------------
// Tasks

interface Counters {
  calls: number;
  found: number;
  sink: number;
}

function addTasks(perCall: Bench, batched: Bench, label: string, index: KeyIndex, pool: readonly string[], counters: Counters): void {
  const n = pool.length;
  let next = 0;
  perCall.add(`${label} (1 call)`, () => {
    const id = index.lookup(pool[next]!);
    next = next + 1 === n ? 0 : next + 1;
    counters.calls++;
    if (id !== NOT_FOUND) counters.found++;
    counters.sink ^= id;
  });
  batched.add(`${label} (batch)`, () => {
    let found = 0;
    let sink = 0;
    let at = next;
    const t0 = process.hrtime.bigint();
    for (let k = 0; k < BATCH; k++) {
      const id = index.lookup(pool[at]!);
      at = at + 1 === n ? 0 : at + 1;
      if (id !== NOT_FOUND) found++;
      sink ^= id;
    }
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    next = at;
    counters.calls += BATCH;
    counters.found += found;
    counters.sink ^= sink;
    return { overriddenDuration: ms / BATCH, overriddenIterationCost: ms };
  });
}

function warm(index: KeyIndex, pool: readonly string[], rounds: number): number {
  let sink = 0;
  for (let k = 0; k < rounds; k++) sink ^= index.lookup(pool[k % pool.length]!);
  return sink;
}

function check(label: string, counters: Counters, expectHits: boolean): void {
  const expected = expectHits ? counters.calls : 0;
  if (counters.found !== expected) {
    throw new Error(`${label}: ${counters.found} of ${counters.calls} lookups found, expected ${expected}`);
  }
}

/** Hits and misses through `index`, one call and batched; throws unless every hit is found and no miss is. */
function measure(label: string, index: KeyIndex, hitPool: readonly string[], missPool: readonly string[]): { rows: Row[]; sink: number } {
  warm(index, hitPool, 300_000);
  warm(index, missPool, 300_000);
  const hits: Counters = { calls: 0, found: 0, sink: 0 };
  const misses: Counters = { calls: 0, found: 0, sink: 0 };
  const common = { time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow' as const };
  const perCall = new Bench({ ...common, subtractTimerOverhead: true });
  const batched = new Bench(common);
  addTasks(perCall, batched, `${label} hit`, index, hitPool, hits);
  addTasks(perCall, batched, `${label} miss`, index, missPool, misses);
  perCall.runSync();
  batched.runSync();
  check(`${label} hit`, hits, true);
  check(`${label} miss`, misses, false);
  return { rows: [...rows(perCall), ...rows(batched)], sink: hits.sink ^ misses.sink };
}

// ---------------------------------------------------------------------------
// Run

function main(): void {
  const t0 = performance.now();
  const { keyBytes, keyOffsets } = encode(keyCount);
  const t1 = performance.now();
  const arrays = buildIndexArrays(keyBytes, keyOffsets, keyCount);
  const t2 = performance.now();
  const index = new VpaIndex(arrays);
  const { slotTags, slotEntries, keyTails, vpaSlots } = arrays;
  const slotBytes = slotTags.byteLength + slotEntries.byteLength;

  const hitPool = queryPool(randomIds(queryCount, 0, keyCount, 1));
  const missPool = queryPool(randomIds(queryCount, keyCount, keyCount * 4, 2));
  const t3 = performance.now();

  const layout = {
    keys: keyCount,
    capacity: index.capacity,
    load: round1((keyCount / index.capacity) * 1000) / 1000,
    'slots B/key': round1(slotBytes / keyCount),
    'keyTails+vpaSlots B/key': round1((keyTails.byteLength + vpaSlots.byteLength) / keyCount),
    'index total B/key': round1((slotBytes + keyTails.byteLength + vpaSlots.byteLength) / keyCount),
    'mean key length': round1(keyBytes.byteLength / keyCount),
    'encode ms': Math.round(t1 - t0),
    'build ms': Math.round(t2 - t1),
    'query pools ms': Math.round(t3 - t2),
    'huge pages MiB': hugePagesMiB(),
  };
  console.log(`node ${process.version}, ${keyCount} keys, ${queryCount} queries per pool, gc ${gc ? 'exposed' : 'not exposed'}`);
  console.table([layout]);
  const memoryLatency = {
    'dependent load ns, 1 MiB': loadLatencyNs(2 ** 20),
    'dependent load ns, tags size': loadLatencyNs(slotTags.byteLength),
    'dependent load ns, entries size': loadLatencyNs(slotEntries.byteLength),
  };
  console.table([memoryLatency]);

  const measured = measure('VpaIndex', index, hitPool, missPool);
  const indexRows = measured.rows;
  let sink = measured.sink;
  console.table(indexRows);

  let reference: { rows: Row[]; memory: Record<string, number> } | undefined;
  if (!args['no-reference']) {
    const before = memoryNow();
    const t4 = performance.now();
    const keys: string[] = new Array<string>(keyCount);
    for (let i = 0; i < keyCount; i++) keys[i] = distinctVpa(i);
    const map = new ReferenceIndex(keys);
    keys.length = 0;
    const t5 = performance.now();
    const after = memoryNow();
    const memory = {
      'build ms': Math.round(t5 - t4),
      'heap B/key': round1((after.heapUsed - before.heapUsed) / keyCount),
    };
    const measuredMap = measure('Map reference', map, hitPool, missPool);
    sink ^= measuredMap.sink;
    reference = { rows: measuredMap.rows, memory };
    console.table([memory]);
    console.table(reference.rows);
  }

  if (args.json !== undefined) {
    const report = {
      benchmark: 'vpa-index',
      node: process.version,
      date: new Date().toISOString(),
      queriesPerPool: queryCount,
      batch: BATCH,
      layout,
      memoryLatency,
      index: indexRows,
      reference,
    };
    writeReport(args.json, report);
  }
  // The sinks feed the results somewhere observable, so no lookup is dead code.
  if (sink === 0.5) console.log('unreachable');
}

main();
