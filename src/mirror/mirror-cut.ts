import { createHash } from 'node:crypto';
import { runOneOffWorker } from '../common/one-off-worker.js';
import { HIGH_BAND_FLOOR, MEDIUM_BAND_FLOOR } from '../api/advice.js';
import { RANGE_RECORD_WORDS, RECORD_FIELDS, recordConfidence, recordRiskCategory, type DeltaHashes } from '../engine/hash-ranges.js';
import { NOT_IN_SNAPSHOT } from '../engine/delta-data.js';
import { CONFIDENCE_SCALE, type SnapshotData } from '../engine/snapshot-data.js';
import { sharedArray } from '../engine/shared-arrays.js';
import { MIRROR_ENTRY_BYTES, MIRROR_HEADER_BYTES, MIRROR_KIND_FULL, comparePrefixes, packMeta, writeMirrorHeader, type MirrorEntries } from './mirror-format.js';

/**
 * One mirror version's entry set, made from what a view serves (a snapshot
 * and its delta), and how it differs from the version before. A plain
 * function of shared arrays, so a worker thread runs it
 * (mirror-cut-worker.ts) and tests call it directly.
 */
export interface CutInput {
  /** The snapshot's ids in order of hash head (HashRanges.order). */
  readonly order: Uint32Array;
  /** The snapshot's range records (HashRanges.records, parallel to `order`): read in order, each cut. */
  readonly records: Uint32Array;
  readonly delta: { readonly overlay: SnapshotData; readonly baseVpa: Uint32Array; readonly hashes: DeltaHashes } | null;
  /** The previous version's entries; null for the first. */
  readonly previous: MirrorEntries | null;
}

/** Prefixes whose entry changed: `before` and `after` the entry byte, or -1 where there is no entry. Sorted by prefix. */
export interface MirrorChanges {
  readonly count: number;
  readonly hi: Uint32Array;
  readonly lo: Uint32Array;
  readonly before: Int16Array;
  readonly after: Int16Array;
}

export interface CutResult {
  readonly entries: MirrorEntries;
  /** The full file of these entries, and SHA-256 of its entries (the manifest's sha256). */
  readonly full: Uint8Array;
  readonly sha256: string;
  readonly changes: MirrorChanges;
}

const HIGH_FLOOR = Math.round(HIGH_BAND_FLOOR * CONFIDENCE_SCALE);
const MEDIUM_FLOOR = Math.round(MEDIUM_BAND_FLOOR * CONFIDENCE_SCALE);

/** The entry byte of a flagged VPA: its risk category, and the band of its confidence (advice.ts: high, medium, low). */
export function entryMeta(data: SnapshotData, id: number): number {
  return packMeta(data.riskCategory[id]!, confidenceBand(data.confidence[id]!));
}

/** The band of a confidence in CONFIDENCE_SCALE units: high 0, medium 1, low 2. */
function confidenceBand(confidence: number): number {
  return confidence >= HIGH_FLOOR ? 0 : confidence >= MEDIUM_FLOOR ? 1 : 2;
}

export function cutMirror(input: CutInput): CutResult {
  const { entries, full } = viewEntries(input);
  const sha256 = createHash('sha256').update(full.subarray(MIRROR_HEADER_BYTES)).digest('hex');
  return { entries, full, sha256, changes: changesBetween(input.previous, entries) };
}

/**
 * The snapshot's entries less those of the VPAs the delta holds, merged
 * with the delta's VPAs that count: sorted, one per prefix, written as the
 * entry set and as the full file's bytes in the same pass.
 */
function viewEntries({ order, records, delta }: CutInput): { entries: MirrorEntries; full: Uint8Array } {
  const skipped = replacedPositions(order, records, delta);
  const deltaCount = delta === null ? 0 : delta.hashes.sorted.length;
  const capacity = order.length + deltaCount;
  const hi = sharedArray(Uint32Array, capacity);
  const lo = sharedArray(Uint32Array, capacity);
  const meta = sharedArray(Uint8Array, capacity);
  const bytes = sharedArray(Uint8Array, MIRROR_HEADER_BYTES + capacity * MIRROR_ENTRY_BYTES);
  const file = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  let at = MIRROR_HEADER_BYTES;
  const put = (h: number, l: number, m: number): void => {
    if (n > 0 && hi[n - 1] === h && lo[n - 1] === l) {
      // Two VPAs sharing the prefix: the greater entry stays (mirror-format.ts).
      if (m > meta[n - 1]!) {
        meta[n - 1] = m;
        bytes[at - 1] = m;
      }
      return;
    }
    hi[n] = h;
    lo[n] = l;
    meta[n++] = m;
    file.setUint32(at, h);
    file.setUint32(at + 4, l);
    bytes[at + 8] = m;
    at += MIRROR_ENTRY_BYTES;
  };
  const sorted = delta?.hashes.sorted ?? new Uint32Array(0);
  let d = 0;
  const nextDelta = (): number => {
    while (d < sorted.length && delta!.overlay.evidenceCount[sorted[d]!] === 0) d++;
    return d < sorted.length ? sorted[d]! : -1;
  };
  let s = 0;
  for (let i = 0; i < order.length; i++) {
    if (s < skipped.length && skipped[s] === i) {
      s++;
      continue;
    }
    const at = RANGE_RECORD_WORDS * i;
    const h = records[at]!;
    const l = records[at + 1]!;
    const fields = records[at + RECORD_FIELDS]!;
    for (let o = nextDelta(); o >= 0 && comparePrefixes(delta!.hashes.heads.hi[o]!, delta!.hashes.heads.lo[o]!, h, l) <= 0; o = nextDelta()) {
      put(delta!.hashes.heads.hi[o]!, delta!.hashes.heads.lo[o]!, entryMeta(delta!.overlay, o));
      d++;
    }
    put(h, l, packMeta(recordRiskCategory(fields), confidenceBand(recordConfidence(fields))));
  }
  for (let o = nextDelta(); o >= 0; o = nextDelta()) {
    put(delta!.hashes.heads.hi[o]!, delta!.hashes.heads.lo[o]!, entryMeta(delta!.overlay, o));
    d++;
  }
  const full = bytes.subarray(0, at);
  writeMirrorHeader(full, MIRROR_KIND_FULL, n, 0);
  return { entries: { count: n, hi, lo, meta }, full };
}

/** The positions in `order` of the snapshot's VPAs the delta holds, ascending: found by their hash heads, which the delta knows. */
function replacedPositions(order: Uint32Array, records: Uint32Array, delta: CutInput['delta']): Uint32Array {
  if (delta === null) return new Uint32Array(0);
  const found: number[] = [];
  const heads = delta.hashes.heads;
  for (let o = 0; o < delta.overlay.meta.vpaCount; o++) {
    const id = delta.baseVpa[o]!;
    if (id === NOT_IN_SNAPSHOT) continue;
    // The first entry not below the head, then along those sharing it to the id's own.
    let low = 0;
    let high = order.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (comparePrefixes(records[RANGE_RECORD_WORDS * mid]!, records[RANGE_RECORD_WORDS * mid + 1]!, heads.hi[o]!, heads.lo[o]!) < 0) low = mid + 1;
      else high = mid;
    }
    for (let p = low; p < order.length && records[RANGE_RECORD_WORDS * p] === heads.hi[o] && records[RANGE_RECORD_WORDS * p + 1] === heads.lo[o]; p++) {
      if (order[p] === id) {
        found.push(p);
        break;
      }
    }
  }
  return Uint32Array.from(found).sort();
}

/** Every prefix whose entry differs between two sorted sets. */
export function changesBetween(previous: MirrorEntries | null, next: MirrorEntries): MirrorChanges {
  const before = previous ?? { count: 0, hi: new Uint32Array(0), lo: new Uint32Array(0), meta: new Uint8Array(0) };
  const hi: number[] = [];
  const lo: number[] = [];
  const was: number[] = [];
  const now: number[] = [];
  let a = 0;
  let b = 0;
  while (a < before.count || b < next.count) {
    const order = a >= before.count ? 1 : b >= next.count ? -1 : comparePrefixes(before.hi[a]!, before.lo[a]!, next.hi[b]!, next.lo[b]!);
    if (order === 0) {
      if (before.meta[a] !== next.meta[b]) {
        hi.push(next.hi[b]!);
        lo.push(next.lo[b]!);
        was.push(before.meta[a]!);
        now.push(next.meta[b]!);
      }
      a++;
      b++;
    } else if (order < 0) {
      hi.push(before.hi[a]!);
      lo.push(before.lo[a]!);
      was.push(before.meta[a++]!);
      now.push(-1);
    } else {
      hi.push(next.hi[b]!);
      lo.push(next.lo[b]!);
      was.push(-1);
      now.push(next.meta[b++]!);
    }
  }
  return { count: hi.length, hi: Uint32Array.from(hi), lo: Uint32Array.from(lo), before: Int16Array.from(was), after: Int16Array.from(now) };
}

const WORKER_URL = new URL('./mirror-cut-worker.js', import.meta.url);

/** cutMirror on a worker thread of its own: at 10M VPAs it walks them all. */
export function cutMirrorOffThread(input: CutInput): Promise<CutResult> {
  return runOneOffWorker<CutResult>(WORKER_URL, input, 'making a mirror version');
}
