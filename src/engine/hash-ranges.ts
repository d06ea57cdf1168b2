import { runOneOffWorker } from '../common/one-off-worker.js';
import { vpaHashWords } from '../vpa/vpa-hash.js';
import { sharedArray } from './shared-arrays.js';
import { NO_CLUSTER, type SnapshotData } from './snapshot-data.js';
import type { DeltaData } from './delta-data.js';
import { NOT_IN_SNAPSHOT } from './delta-data.js';
import { VpaIndex } from './vpa-index.js';

/**
 * A snapshot's VPAs by h(upi) (vpa/vpa-hash.ts), for the mirror and range
 * lookups (docs/api.md, "Private lookups"): the ids ordered by their hash's
 * first 64 bits, and where each range (the first RANGE_PREFIX_BITS bits,
 * five hex digits) starts: 4 bytes a VPA and 4 MiB of starts.
 */
export interface HashOrder {
  readonly snapshotId: string;
  /** Range r's VPAs are order[starts[r] .. starts[r + 1]); RANGES + 1 entries. */
  readonly starts: Uint32Array;
  readonly order: Uint32Array;
  /** The most VPAs any one range holds. */
  readonly largest: number;
}

/**
 * A range record: what a range answer and the mirror read of each VPA of a
 * snapshot, RANGE_RECORD_WORDS words at that many times its position in
 * HashOrder.order: its whole hash (words 0 to 7), its verdict's fields
 * packed (RECORD_FIELDS: packRecordFields) and its cluster's number
 * (RECORD_CLUSTER). An answer then reads its entries side by side instead
 * of hashing each key again and reading its fields at random places in the
 * snapshot, which was most of a range answer's cost at 10M
 * (bench/MEASUREMENTS.md, "Range records in hash order"): 40 bytes a VPA.
 */
export const RANGE_RECORD_WORDS = 10;
export const RECORD_FIELDS = 8;
export const RECORD_CLUSTER = 9;

/** A record's fields word: the risk category's code, the confidence (CONFIDENCE_SCALE units) and whether a cluster is named. */
export function packRecordFields(riskCategory: number, confidence: number, clustered: boolean): number {
  return (riskCategory | (confidence << 8) | (clustered ? 1 << 24 : 0)) >>> 0;
}

export const recordRiskCategory = (fields: number): number => fields & 0xff;
export const recordConfidence = (fields: number): number => (fields >>> 8) & 0xffff;
export const recordClustered = (fields: number): boolean => (fields & (1 << 24)) !== 0;

/**
 * A snapshot's hash order with its range records: made off the serving
 * threads (hash-ranges-worker.ts), before or after the snapshot's swap
 * (service/hash-range-keeper.ts says which), and shared with them.
 */
export interface HashRanges extends HashOrder {
  readonly records: Uint32Array;
}

/** Bits of a range prefix: five hex digits. */
export const RANGE_PREFIX_BITS = 20;
export const RANGES = 1 << RANGE_PREFIX_BITS;
/** A hash's range: its first 20 bits. */
export const rangeOf = (hi: number): number => hi >>> (32 - RANGE_PREFIX_BITS);

/** The first 64 bits of every VPA's hash, by id (hi, lo): what the hash order is made from. */
export interface VpaHashHeads {
  readonly hi: Uint32Array;
  readonly lo: Uint32Array;
}

/**
 * The first 64 bits of h(upi) of the VPAs [from, to) of a snapshot (or a
 * delta's overlay), by id, into `heads`; and every word of each, 8 at 8
 * times its id, into `whole` when given.
 */
export function hashHeads(data: SnapshotData, heads: VpaHashHeads, from = 0, to = data.meta.vpaCount, whole: Uint32Array | null = null): void {
  const index = new VpaIndex(data, data.maxKeyLength);
  const words = new Uint32Array(8);
  for (let id = from; id < to; id++) {
    vpaHashWords(index.keyOf(id), words);
    heads.hi[id] = words[0]!;
    heads.lo[id] = words[1]!;
    whole?.set(words, 8 * id);
  }
}

/**
 * Part of a snapshot's range records, each at RANGE_RECORD_WORDS times its
 * VPA's id in `records` (orderRecords then puts them in hash order): the
 * whole hash of the VPA in each index slot of [fromSlot, toSlot), and the
 * fields of the ids [fromId, toId). Keys are read in slot order and fields
 * in id order, each array side by side; only the hash is written at random
 * (bench/MEASUREMENTS.md, "Range records hashed once").
 */
export function rangeRecordsById(data: SnapshotData, records: Uint32Array, fromSlot: number, toSlot: number, fromId: number, toId: number): void {
  const index = new VpaIndex(data, data.maxKeyLength);
  const words = new Uint32Array(8);
  for (let slot = fromSlot; slot < toSlot; slot++) {
    const id = index.idAtSlot(slot);
    if (id >= 0) records.set(vpaHashWords(index.keyAtSlot(slot), words), RANGE_RECORD_WORDS * id);
  }
  for (let id = fromId; id < toId; id++) {
    const at = RANGE_RECORD_WORDS * id;
    const cluster = data.vpaCluster[id]!;
    records[at + RECORD_FIELDS] = packRecordFields(data.riskCategory[id]!, data.confidence[id]!, cluster !== NO_CLUSTER);
    records[at + RECORD_CLUSTER] = cluster === NO_CLUSTER ? 0 : data.clusterNumber[cluster]!;
  }
}

/**
 * The hash order of `count` range records laid out by id
 * (rangeRecordsById): the ids bucketed by range, then ordered by head
 * within each; and the records moved, in place, to their positions in
 * that order, so that no second array of records is needed.
 */
export function orderRecords(snapshotId: string, count: number, records: Uint32Array): HashOrder {
  const starts = sharedArray(Uint32Array, RANGES + 1);
  for (let id = 0; id < count; id++) starts[rangeOf(records[RANGE_RECORD_WORDS * id]!) + 1]!++;
  let largest = 0;
  for (let r = 0; r < RANGES; r++) {
    if (starts[r + 1]! > largest) largest = starts[r + 1]!;
    starts[r + 1]! += starts[r]!;
  }
  const order = sharedArray(Uint32Array, count);
  // Each id's head beside it in bucket order, so that sorting a range reads
  // its neighbours rather than records at random ids.
  const his = new Uint32Array(count);
  const los = new Uint32Array(count);
  const next = starts.slice(0, RANGES);
  for (let id = 0; id < count; id++) {
    const hi = records[RANGE_RECORD_WORDS * id]!;
    const at = next[rangeOf(hi)]!++;
    order[at] = id;
    his[at] = hi;
    los[at] = records[RANGE_RECORD_WORDS * id + 1]!;
  }
  // Each range is a handful of ids: insertion sort by head.
  for (let r = 0; r < RANGES; r++) {
    const first = starts[r]!;
    const end = starts[r + 1]!;
    for (let i = first + 1; i < end; i++) {
      const id = order[i]!;
      const hi = his[i]!;
      const lo = los[i]!;
      let j = i - 1;
      while (j >= first && (his[j]! > hi || (his[j] === hi && los[j]! > lo))) {
        order[j + 1] = order[j]!;
        his[j + 1] = his[j]!;
        los[j + 1] = los[j]!;
        j--;
      }
      order[j + 1] = id;
      his[j + 1] = hi;
      los[j + 1] = lo;
    }
  }
  permuteRecords(records, order);
  return { snapshotId, starts, order, largest };
}

/**
 * Put at each position p the record that was at id order[p], in place:
 * each cycle of the permutation is followed once, its first record held
 * aside, every other moved straight from where the next one reads it.
 */
function permuteRecords(records: Uint32Array, order: Uint32Array): void {
  const moved = new Uint8Array((order.length + 7) >>> 3);
  const held = new Uint32Array(RANGE_RECORD_WORDS);
  for (let start = 0; start < order.length; start++) {
    if ((moved[start >>> 3]! & (1 << (start & 7))) !== 0 || order[start] === start) continue;
    held.set(records.subarray(RANGE_RECORD_WORDS * start, RANGE_RECORD_WORDS * (start + 1)));
    for (let p = start; ; ) {
      moved[p >>> 3]! |= 1 << (p & 7);
      const from = order[p]!;
      if (from === start) {
        records.set(held, RANGE_RECORD_WORDS * p);
        break;
      }
      records.copyWithin(RANGE_RECORD_WORDS * p, RANGE_RECORD_WORDS * from, RANGE_RECORD_WORDS * (from + 1));
      p = from;
    }
  }
}

/** A snapshot's ranges made on this thread, as hashRangesOffThread makes them on others (for tests and benches). */
export function hashRangesHere(data: SnapshotData): HashRanges {
  const count = data.meta.vpaCount;
  const records = sharedArray(Uint32Array, RANGE_RECORD_WORDS * count);
  rangeRecordsById(data, records, 0, data.slotTags.length, 0, count);
  return { ...orderRecords(data.meta.id, count, records), records };
}

function compareHeads(heads: VpaHashHeads, a: number, b: number): number {
  return headAfter(heads, a, b) ? 1 : headAfter(heads, b, a) ? -1 : 0;
}

/** Into `out`: the ids below `kept` of `previous` (sorted by head), merged with `fresh` (sorted by head). */
function mergeSorted(previous: Uint32Array, kept: number, fresh: readonly number[], heads: VpaHashHeads, out: Uint32Array): void {
  let n = 0;
  let f = 0;
  for (let p = 0; p < previous.length; p++) {
    const id = previous[p]!;
    if (id >= kept) continue;
    while (f < fresh.length && headAfter(heads, id, fresh[f]!)) out[n++] = fresh[f++]!;
    out[n++] = id;
  }
  while (f < fresh.length) out[n++] = fresh[f++]!;
}

function headAfter(heads: VpaHashHeads, a: number, b: number): boolean {
  const ha = heads.hi[a]!;
  const hb = heads.hi[b]!;
  return ha !== hb ? ha > hb : heads.lo[a]! > heads.lo[b]!;
}

/**
 * The live delta's VPAs by hash: each overlay VPA's head, and the overlay
 * ids sorted by head (a delta is small: a binary search finds a range).
 * Made by the thread that makes each state of the delta, hashing only the
 * VPAs the state before did not hold (a merge appends to the overlay).
 */
export interface DeltaHashes {
  /** The delta state these are of: its snapshot and position. */
  readonly baseId: string;
  readonly position: number;
  /** The overlay's keys (DeltaData's), to tell which of them the next state still holds. */
  readonly keyBytes: Uint8Array;
  readonly keyOffsets: Uint32Array;
  readonly heads: VpaHashHeads;
  /** Each overlay VPA's whole hash, 8 words at 8 times its id: a range answer tells the snapshot's VPAs the delta holds by it. */
  readonly words: Uint32Array;
  /** Overlay ids sorted by head. */
  readonly sorted: Uint32Array;
  /**
   * Per range the delta touches (ascending in `touched`), how many VPAs it
   * adds there: its VPAs the snapshot does not hold and that count, less
   * those the snapshot holds and a correction took back.
   */
  readonly touched: Uint32Array;
  readonly added: Int32Array;
}

/**
 * The hashes of `delta`, reusing `previous` (of an earlier state over the
 * same snapshot) for the overlay VPAs both hold. Null for an empty delta.
 */
export function deltaHashes(delta: DeltaData, previous: DeltaHashes | null): DeltaHashes | null {
  const overlay = delta.overlay;
  const count = overlay.meta.vpaCount;
  if (count === 0) return null;
  const heads = { hi: sharedArray(Uint32Array, count), lo: sharedArray(Uint32Array, count) };
  const words = sharedArray(Uint32Array, 8 * count);
  const from = previous !== null && previous.baseId === delta.meta.baseId ? keptKeys(previous, delta) : 0;
  if (from > 0) {
    heads.hi.set(previous!.heads.hi.subarray(0, from));
    heads.lo.set(previous!.heads.lo.subarray(0, from));
    words.set(previous!.words.subarray(0, 8 * from));
  }
  hashHeads(overlay, heads, from, count, words);
  const sorted = sharedArray(Uint32Array, count);
  const fresh = Array.from({ length: count - from }, (_, i) => from + i).sort((a, b) => compareHeads(heads, a, b));
  if (from === 0) sorted.set(fresh);
  else mergeSorted(previous!.sorted, from, fresh, heads, sorted);
  const added = new Map<number, number>();
  for (let id = 0; id < count; id++) {
    const inSnapshot = delta.baseVpa[id] !== NOT_IN_SNAPSHOT;
    const counts = overlay.evidenceCount[id]! > 0;
    if (inSnapshot === counts) continue;
    const range = rangeOf(heads.hi[id]!);
    added.set(range, (added.get(range) ?? 0) + (counts ? 1 : -1));
  }
  const ranges = [...added.keys()].sort((a, b) => a - b);
  const touched = sharedArray(Uint32Array, ranges.length);
  const addedCounts = sharedArray(Int32Array, ranges.length);
  ranges.forEach((r, i) => {
    touched[i] = r;
    addedCounts[i] = added.get(r)!;
  });
  return { baseId: delta.meta.baseId, position: delta.meta.position, keyBytes: delta.keyBytes, keyOffsets: delta.keyOffsets, heads, words, sorted, touched, added: addedCounts };
}

/**
 * How many overlay VPAs, from id 0, `delta` holds as `previous` held them:
 * a merge keeps the overlay's keys and appends (delta-merge.ts); a state
 * made afresh over the snapshot may not.
 */
function keptKeys(previous: DeltaHashes, delta: DeltaData): number {
  const limit = Math.min(previous.heads.hi.length, delta.overlay.meta.vpaCount);
  let kept = 0;
  while (kept < limit && previous.keyOffsets[kept + 1] === delta.keyOffsets[kept + 1]) kept++;
  const bytes = delta.keyOffsets[kept]!;
  return Buffer.from(previous.keyBytes.buffer, previous.keyBytes.byteOffset, bytes).equals(Buffer.from(delta.keyBytes.buffer, delta.keyBytes.byteOffset, bytes)) ? kept : 0;
}

/** The most VPAs any one range holds in a view of the snapshot whose ranges are `ranges` with the delta `delta`. */
export function largestRange(ranges: HashRanges, delta: DeltaHashes | null): number {
  let largest = ranges.largest;
  if (delta === null) return largest;
  for (let i = 0; i < delta.touched.length; i++) {
    const r = delta.touched[i]!;
    const count = ranges.starts[r + 1]! - ranges.starts[r]! + delta.added[i]!;
    if (count > largest) largest = count;
  }
  return largest;
}

/** The first index in `sorted` (a DeltaHashes') whose head's range is at least `range`. */
export function firstInRange(delta: DeltaHashes, range: number): number {
  let low = 0;
  let high = delta.sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (rangeOf(delta.heads.hi[delta.sorted[mid]!]!) < range) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * What a hash-ranges worker does (hash-ranges-worker.ts): write a part of
 * the range records by id (rangeRecordsById), or order all of them.
 */
export type HashRangesTask =
  | { readonly kind: 'records'; readonly data: SnapshotData; readonly records: Uint32Array; readonly fromSlot: number; readonly toSlot: number; readonly fromId: number; readonly toId: number }
  | { readonly kind: 'order'; readonly snapshotId: string; readonly count: number; readonly records: Uint32Array };

const WORKER_URL = new URL('./hash-ranges-worker.js', import.meta.url);

/**
 * A snapshot's ranges and their records, made on `threads` short-lived
 * worker threads (the hashing is split between them), so that no serving
 * or coordinating thread stalls: every VPA is hashed once, its record
 * written by id, and the records then ordered in place on one thread
 * (bench/MEASUREMENTS.md, "Range records hashed once").
 */
export async function hashRangesOffThread(data: SnapshotData, threads: number): Promise<HashRanges> {
  const count = data.meta.vpaCount;
  const records = sharedArray(Uint32Array, RANGE_RECORD_WORDS * count);
  const slices = Math.max(1, Math.min(threads, Math.ceil(count / 100_000)));
  const slots = data.slotTags.length;
  const part = (i: number, total: number) => [Math.floor((i * total) / slices), Math.floor(((i + 1) * total) / slices)] as const;
  await Promise.all(
    Array.from({ length: slices }, (_, i) => {
      const [fromSlot, toSlot] = part(i, slots);
      const [fromId, toId] = part(i, count);
      return runTask<null>({ kind: 'records', data, records, fromSlot, toSlot, fromId, toId });
    }),
  );
  const order = await runTask<HashOrder>({ kind: 'order', snapshotId: data.meta.id, count, records });
  return { ...order, records };
}

function runTask<T>(task: HashRangesTask): Promise<T> {
  return runOneOffWorker<T>(WORKER_URL, task, 'hashing VPAs');
}
