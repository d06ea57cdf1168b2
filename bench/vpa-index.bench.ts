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
 * prints it): a miss waits for one random cache line, a hit for two in
 * sequence. TLB misses are a large part of it, so compare runs with
 * GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which backs the large typed arrays
 * with transparent huge pages where the kernel allows it (THP "madvise");
 * the layout table shows how much memory huge pages back ("huge pages MiB").
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { NOT_FOUND } from '../src/common/brand.js';
import { ReferenceIndex } from '../src/engine/reference-index.js';
import { buildSlots, VpaIndex } from '../src/engine/vpa-index.js';
import type { KeyIndex } from '../src/engine/key-index.js';
import { round1, taskRows as rows, wholeNumberOption as wholeNumber, writeReport, type Row } from './support/report.js';

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
// Realistic keys. keyAt is injective in i (mobile handles are all digits and
// unique per i; named handles end in a number unique per i), so ids beyond
// keyCount give guaranteed misses of the same shape.

const MOBILE_PROVIDERS = ['ybl', 'okaxis', 'paytm', 'ibl', 'axl', 'apl', 'okicici', 'oksbi', 'upi', 'yapl', 'ptyes', 'ptsbi'];
const NAMED_PROVIDERS = ['okhdfcbank', 'okicici', 'oksbi', 'okaxis', 'ybl', 'axisbank', 'icici', 'sbi', 'hdfcbank', 'kotak'];
const FIRST = ['rahul', 'priya', 'amit', 'sneha', 'vikram', 'anita', 'suresh', 'deepa', 'arjun', 'kavya', 'rohan', 'meera',
  'sanjay', 'pooja', 'karthik', 'lakshmi', 'manoj', 'divya', 'imran', 'fatima', 'gurpreet', 'harish', 'nisha', 'vijay'];
const LAST = ['sharma', 'verma', 'patel', 'reddy', 'iyer', 'nair', 'singh', 'khan', 'gupta', 'das', 'rao', 'joshi',
  'mehta', 'kulkarni', 'chopra', 'bose', 'pillai', 'shetty', 'yadav', 'mishra'];

/** A well-mixed uint32 of i (murmur3 finaliser), for per-key choices. */
function mix(i: number): number {
  let h = Math.imul(i ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function pick<T>(list: readonly T[], r: number): T {
  return list[r % list.length]!;
}

function keyAt(i: number): string {
  const r = mix(i);
  if (r % 100 < 55) {
    // 48271 is coprime to 4e9, so the number is unique for i < 4e9.
    const mobile = 6_000_000_000 + ((i * 48271) % 4_000_000_000);
    return `${mobile}@${pick(MOBILE_PROVIDERS, r >>> 8)}`;
  }
  // 7919 is coprime to 1e8, so the suffix is unique for i < 1e8.
  const suffix = (i * 7919) % 100_000_000;
  const first = pick(FIRST, r >>> 8);
  const last = pick(LAST, r >>> 16);
  const provider = pick(NAMED_PROVIDERS, r >>> 4);
  switch ((r >>> 24) & 3) {
    case 0:
      return `${first}.${last}${suffix}@${provider}`;
    case 1:
      return `${first}${last}${suffix}@${provider}`;
    case 2:
      return `${first}_${suffix}@${provider}`;
    default:
      return `${first}.${last}.${suffix}@${provider}`;
  }
}

// ---------------------------------------------------------------------------
// Data

function encode(count: number): { keyBytes: Uint8Array; keyOffsets: Uint32Array } {
  let keyBytes = new Uint8Array(Math.max(64, count * 24));
  const keyOffsets = new Uint32Array(count + 1);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const key = keyAt(i);
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

/** Fresh, flat query strings for key ids `ids`, case varied. */
function queryPool(ids: ArrayLike<number>): string[] {
  const keys: string[] = [];
  let total = 0;
  for (let n = 0; n < ids.length; n++) {
    const key = keyAt(ids[n]!);
    const style = mix(n ^ 0x5bd1e995) & 3;
    const varied = style === 0 ? key.toUpperCase() : style === 1 ? key[0]!.toUpperCase() + key.slice(1) : key;
    keys.push(varied);
    total += varied.length;
  }
  const buffer = Buffer.allocUnsafe(total);
  let at = 0;
  for (const key of keys) at += buffer.write(key, at, 'latin1');
  const pool: string[] = [];
  at = 0;
  for (const key of keys) {
    pool.push(buffer.toString('latin1', at, at + key.length));
    at += key.length;
  }
  return pool;
}

function randomIds(count: number, from: number, span: number, seed: number): Uint32Array {
  const ids = new Uint32Array(count);
  for (let n = 0; n < count; n++) ids[n] = from + (mix(n * 2 + seed) % span);
  return ids;
}

/**
 * Latency of one dependent random load from a buffer of `bytes` (a pointer
 * chase through a random cycle of cache lines): the floor for each level of
 * a lookup (the slot run, then the key bytes) at the index's sizes.
 */
function loadLatencyNs(bytes: number): number {
  const lines = Math.max(2, Math.floor(bytes / 64));
  const next = new Uint32Array(lines * 16);
  const order = new Uint32Array(lines);
  for (let i = 0; i < lines; i++) order[i] = i;
  for (let i = lines - 1; i > 0; i--) {
    const j = mix(i + 0x1234) % (i + 1);
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
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

function benches(): [Bench, Bench] {
  const common = { time: taskTime, warmupTime: 500, timestampProvider: 'hrtimeNow' as const };
  return [new Bench({ ...common, subtractTimerOverhead: true }), new Bench(common)];
}

// ---------------------------------------------------------------------------
// Run

function main(): void {
  const t0 = performance.now();
  const { keyBytes, keyOffsets } = encode(keyCount);
  const t1 = performance.now();
  const slots = buildSlots(keyBytes, keyOffsets, keyCount);
  const t2 = performance.now();
  const index = new VpaIndex(slots, keyBytes, keyOffsets);

  const hitPool = queryPool(randomIds(queryCount, 0, keyCount, 1));
  const missPool = queryPool(randomIds(queryCount, keyCount, keyCount * 4, 2));
  const t3 = performance.now();

  const layout = {
    keys: keyCount,
    capacity: index.capacity,
    load: round1((keyCount / index.capacity) * 1000) / 1000,
    'slots B/key': round1(slots.byteLength / keyCount),
    'keyBytes+keyOffsets B/key': round1((keyBytes.byteLength + keyOffsets.byteLength) / keyCount),
    'index total B/key': round1((slots.byteLength + keyBytes.byteLength + keyOffsets.byteLength) / keyCount),
    'mean key length': round1(keyBytes.byteLength / keyCount),
    'encode ms': Math.round(t1 - t0),
    'buildSlots ms': Math.round(t2 - t1),
    'query pools ms': Math.round(t3 - t2),
    'huge pages MiB': hugePagesMiB(),
  };
  console.log(`node ${process.version}, ${keyCount} keys, ${queryCount} queries per pool, gc ${gc ? 'exposed' : 'not exposed'}`);
  console.table([layout]);
  const memoryLatency = {
    'dependent load ns, 1 MiB': loadLatencyNs(2 ** 20),
    'dependent load ns, slots size': loadLatencyNs(slots.byteLength),
    'dependent load ns, keyBytes size': loadLatencyNs(keyBytes.byteLength),
  };
  console.table([memoryLatency]);

  warm(index, hitPool, 300_000);
  warm(index, missPool, 300_000);
  const hits: Counters = { calls: 0, found: 0, sink: 0 };
  const misses: Counters = { calls: 0, found: 0, sink: 0 };
  const [perCall, batched] = benches();
  addTasks(perCall, batched, 'VpaIndex hit', index, hitPool, hits);
  addTasks(perCall, batched, 'VpaIndex miss', index, missPool, misses);
  perCall.runSync();
  batched.runSync();
  check('VpaIndex hit', hits, true);
  check('VpaIndex miss', misses, false);
  const indexRows = [...rows(perCall), ...rows(batched)];
  console.table(indexRows);

  let reference: { rows: Row[]; memory: Record<string, number> } | undefined;
  if (!args['no-reference']) {
    const before = memoryNow();
    const t4 = performance.now();
    const keys: string[] = new Array<string>(keyCount);
    for (let i = 0; i < keyCount; i++) keys[i] = keyAt(i);
    const map = new ReferenceIndex(keys);
    keys.length = 0;
    const t5 = performance.now();
    const after = memoryNow();
    const memory = {
      'build ms': Math.round(t5 - t4),
      'heap B/key': round1((after.heapUsed - before.heapUsed) / keyCount),
    };
    warm(map, hitPool, 300_000);
    warm(map, missPool, 300_000);
    const refHits: Counters = { calls: 0, found: 0, sink: 0 };
    const refMisses: Counters = { calls: 0, found: 0, sink: 0 };
    const [refPerCall, refBatched] = benches();
    addTasks(refPerCall, refBatched, 'Map reference hit', map, hitPool, refHits);
    addTasks(refPerCall, refBatched, 'Map reference miss', map, missPool, refMisses);
    refPerCall.runSync();
    refBatched.runSync();
    check('Map reference hit', refHits, true);
    check('Map reference miss', refMisses, false);
    reference = { rows: [...rows(refPerCall), ...rows(refBatched)], memory };
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
  if ((hits.sink ^ misses.sink) === 0.5) console.log('unreachable');
}

main();
