import { createHash } from 'node:crypto';
import { runOneOffWorker } from '../common/one-off-worker.js';
import { HIGH_BAND_FLOOR, MEDIUM_BAND_FLOOR } from '../api/advice.js';
import type { DeltaHashes, VpaHashHeads } from '../engine/hash-ranges.js';
import { NOT_IN_SNAPSHOT } from '../engine/delta-data.js';
import { CONFIDENCE_SCALE, type SnapshotData } from '../engine/snapshot-data.js';
import { sharedArray } from '../engine/shared-arrays.js';
import { MIRROR_HEADER_BYTES, MIRROR_KIND_FULL, comparePrefixes, encodeMirrorFile, packMeta, type MirrorEntries } from './mirror-format.js';

/**
 * One mirror version's entry set, made from what a view serves (a snapshot
 * and its delta), and how it differs from the version before. A plain
 * function of shared arrays, so a worker thread runs it
 * (mirror-cut-worker.ts) and tests call it directly.
 */
export interface CutInput {
  readonly base: SnapshotData;
  /** The snapshot's hash heads by id, and its ids in order of head (HashRanges.order). */
  readonly heads: VpaHashHeads;
  readonly order: Uint32Array;
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
  const confidence = data.confidence[id]!;
  return packMeta(data.riskCategory[id]!, confidence >= HIGH_FLOOR ? 0 : confidence >= MEDIUM_FLOOR ? 1 : 2);
}

export function cutMirror(input: CutInput): CutResult {
  const entries = viewEntries(input);
  const full = encodeMirrorFile(MIRROR_KIND_FULL, entries, undefined, (length) => sharedArray(Uint8Array, length));
  const sha256 = createHash('sha256').update(full.subarray(MIRROR_HEADER_BYTES)).digest('hex');
  return { entries, full, sha256, changes: changesBetween(input.previous, entries) };
}

/** The entries of the snapshot, less the VPAs the delta holds, merged with the delta's VPAs that count: sorted, one per prefix. */
function viewEntries({ base, heads, order, delta }: CutInput): MirrorEntries {
  const baseCount = base.meta.vpaCount;
  const replaced = new Uint8Array(baseCount);
  let deltaCount = 0;
  if (delta !== null) {
    for (let id = 0; id < delta.overlay.meta.vpaCount; id++) {
      const baseId = delta.baseVpa[id]!;
      if (baseId !== NOT_IN_SNAPSHOT) replaced[baseId] = 1;
      deltaCount++;
    }
  }
  const capacity = baseCount + deltaCount;
  const hi = sharedArray(Uint32Array, capacity);
  const lo = sharedArray(Uint32Array, capacity);
  const meta = sharedArray(Uint8Array, capacity);
  let n = 0;
  const put = (h: number, l: number, m: number): void => {
    if (n > 0 && hi[n - 1] === h && lo[n - 1] === l) {
      // Two VPAs sharing the prefix: the greater entry stays (mirror-format.ts).
      if (m > meta[n - 1]!) meta[n - 1] = m;
      return;
    }
    hi[n] = h;
    lo[n] = l;
    meta[n++] = m;
  };
  const sorted = delta?.hashes.sorted ?? new Uint32Array(0);
  let d = 0;
  const nextDelta = (): number => {
    while (d < sorted.length && delta!.overlay.evidenceCount[sorted[d]!] === 0) d++;
    return d < sorted.length ? sorted[d]! : -1;
  };
  for (let i = 0; i < order.length; i++) {
    const id = order[i]!;
    if (replaced[id] === 1) continue;
    const h = heads.hi[id]!;
    const l = heads.lo[id]!;
    for (let o = nextDelta(); o >= 0 && comparePrefixes(delta!.hashes.heads.hi[o]!, delta!.hashes.heads.lo[o]!, h, l) <= 0; o = nextDelta()) {
      put(delta!.hashes.heads.hi[o]!, delta!.hashes.heads.lo[o]!, entryMeta(delta!.overlay, o));
      d++;
    }
    put(h, l, entryMeta(base, id));
  }
  for (let o = nextDelta(); o >= 0; o = nextDelta()) {
    put(delta!.hashes.heads.hi[o]!, delta!.hashes.heads.lo[o]!, entryMeta(delta!.overlay, o));
    d++;
  }
  return { count: n, hi, lo, meta };
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
