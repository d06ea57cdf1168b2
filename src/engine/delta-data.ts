import type { SnapshotData } from './snapshot-data.js';

/**
 * The live delta: evidence stored after a snapshot was built, served beside
 * it until a compaction folds it into the next snapshot (docs/design.md,
 * "The live delta").
 *
 * Its VPAs are laid out as a snapshot of their own, `overlay`, whose every
 * per-VPA field is already merged: a VPA the snapshot knew carries the
 * snapshot's evidence and the delta's together, so a lookup that finds a
 * VPA in the overlay answers from the overlay alone. The overlay's cluster
 * arrays are the snapshot's (cluster membership waits for compaction), and
 * `vpaCluster` names the VPA's cluster in the snapshot. Everything is in
 * shared memory, so every serving thread reads the one copy.
 */
export interface DeltaData {
  readonly meta: DeltaMeta;
  readonly overlay: SnapshotData;
  /** The overlay's keys (lower-cased VPAs) by id, as buildIndexArrays takes them: a merge appends to them and indexes them again. */
  readonly keyBytes: Uint8Array;
  readonly keyOffsets: Uint32Array;
  /** A Bloom filter of those keys (key-filter.ts): a lookup probes the overlay only when it passes. */
  readonly keyFilter: Uint32Array;
  /** Per overlay VPA: its id in the snapshot, or NOT_IN_SNAPSHOT for a VPA the snapshot does not know. */
  readonly baseVpa: Uint32Array;
  /** Per overlay url: its id in the snapshot, or NOT_IN_SNAPSHOT. */
  readonly urlBase: Uint32Array;
  /** Per overlay url, SOURCE_CATEGORIES.length counters: the delta's evidence items on it by source category. */
  readonly urlEvidence: Uint32Array;
  /** Per overlay url: distinct VPAs known on it, the snapshot's and the delta's (for the peers term of confidence). */
  readonly urlMembers: Uint32Array;
}

/** In `baseVpa` and `urlBase`: a VPA or url the snapshot does not hold. */
export const NOT_IN_SNAPSHOT = 0xffffffff;

export interface DeltaMeta {
  /** The snapshot this delta lies over. */
  readonly baseId: string;
  /** Its position, named in X-Data-Version: how many merges it has had since its snapshot, or in a follower the evidence log's position it has read to. */
  readonly position: number;
  /** The evidence files it holds, in ingestion order. */
  readonly files: readonly string[];
  /** When its newest evidence was ingested, epoch ms. */
  readonly dataAsOf: number;
  /** When its oldest evidence was applied, epoch ms (Date.now()): its age for the compaction policy. */
  readonly since: number;
  readonly vpaCount: number;
  /** Evidence items the delta holds (applied, after deduplication). */
  readonly evidenceItems: number;
  /** Bytes of its arrays, the snapshot's cluster arrays not counted. */
  readonly bytes: number;
}

/** The version a view of snapshot `snapshotId` with a delta at `position` is named by (X-Data-Version). */
export function dataVersion(snapshotId: string, position: number): string {
  return position === 0 ? snapshotId : `${snapshotId}+${position}`;
}
