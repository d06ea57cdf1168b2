import { NOT_FOUND } from '../common/brand.js';
import { formatIso } from '../common/time.js';
import { dataVersion, type DeltaData, type DeltaMeta } from './delta-data.js';
import { SnapshotView, clearedVerdict } from './snapshot-view.js';
import { PackedBatch, PackedQuery, UNMATCHABLE } from './vpa-index.js';
import { mayHold } from './key-filter.js';
import type { BatchItem, Cluster, VpaVerdict } from './verdict.js';
import { clearedBatchItem } from './verdict.js';

/**
 * What a serving thread answers from: one snapshot and the live delta over
 * it (delta-data.ts), replaced together, whole. A request takes one
 * ServingView when it begins, so it (and every item of a batch) is answered
 * from one snapshot and one state of the delta, the view `version` names.
 *
 * A VPA in the delta is answered from the delta alone (its fields there
 * are merged with the snapshot's), and is not found when the delta holds
 * no evidence of it that counts (a correction took it back); any other VPA
 * is answered from the snapshot. With an
 * empty delta, `delta` is null and a lookup costs one test more than the
 * snapshot's own.
 */
export class ServingView {
  readonly base: SnapshotView;
  /** The delta's VPAs as a view, or null when the delta holds none. */
  readonly delta: SnapshotView | null;
  readonly deltaMeta: DeltaMeta | null;
  /** X-Data-Version: the snapshot id, and the delta's position when it has one ("<id>+<position>"). */
  readonly version: string;
  /** X-Data-As-Of: when the newest evidence in the view was ingested, epoch ms and ISO text. */
  readonly asOf: number;
  readonly asOfIso: string;
  /** Where the last `locate` found its VPA: the delta's view or the snapshot's. */
  located: SnapshotView;
  /** The query being located, packed once for both indexes. */
  readonly #query: PackedQuery;
  /** The delta's key filter: most queries name no VPA of the delta, and are told so here. */
  readonly #deltaKeys: Uint32Array | null;
  /** locateAll's queries and answers, made at its first call. */
  #batch: PackedBatch | null = null;
  #located: LocatedBatch | null = null;

  constructor(base: SnapshotView, delta: DeltaData | null = null) {
    if (delta !== null && delta.meta.baseId !== base.meta.id) {
      throw new RangeError(`delta over snapshot ${delta.meta.baseId} served beside snapshot ${base.meta.id}`);
    }
    this.base = base;
    const held = delta !== null && delta.meta.vpaCount > 0 ? delta : null;
    this.delta = held === null ? null : new SnapshotView(held.overlay, base);
    this.deltaMeta = delta?.meta ?? null;
    // Named by its position even when it holds nothing: a server restarted on a snapshot it served
    // alone serves it under a new position, so that a version names one stretch of time.
    this.version = dataVersion(base.meta.id, delta?.meta.position ?? 0);
    this.asOf = servedAsOf(base, delta);
    this.asOfIso = this.asOf === base.asOf ? base.asOfIso : formatIso(this.asOf);
    this.located = base;
    this.#query = new PackedQuery(Math.max(base.maxKeyLength, this.delta?.maxKeyLength ?? 0));
    this.#deltaKeys = held === null ? null : held.keyFilter;
  }

  /**
   * The id of a VPA (any letter case) in `located`, the delta's view when
   * the delta holds it, else the snapshot's; NOT_FOUND when neither does.
   * The query is hashed once for both. Allocation-free; `located` is valid
   * until the next call.
   */
  locate(upi: string): number {
    const query = this.#query.pack(upi);
    const delta = this.delta;
    if (delta !== null && query.hash >= 0 && mayHold(this.#deltaKeys!, query.hash)) {
      const id = delta.lookupPacked(query);
      if (id !== NOT_FOUND) {
        this.located = delta;
        return servedDeltaId(delta, id);
      }
    }
    this.located = this.base;
    return this.base.lookupPacked(query);
  }

  /**
   * locate for each VPA of a batch, with the snapshot's memory reads of
   * every VPA made together (VpaIndex.lookupBatch): into `ids`, and into
   * `inDelta` 1 where the id is the delta view's and 0 where it is the
   * snapshot's, as `located` would say. Both are valid until the next
   * call; their room, made for the largest batch so far, is kept.
   */
  locateAll(upis: readonly string[]): LocatedBatch {
    if (this.#batch === null || this.#batch.capacity < upis.length) {
      this.#batch = new PackedBatch(this.#query.maxKeyLength, upis.length);
      this.#located = { ids: new Int32Array(upis.length), inDelta: new Uint8Array(upis.length) };
    }
    const batch = this.#batch.pack(upis);
    const located = this.#located!;
    const { ids, inDelta } = located;
    this.base.lookupBatch(batch, ids);
    inDelta.fill(0, 0, batch.count);
    const delta = this.delta;
    if (delta !== null) {
      const hashes = batch.hashes;
      for (let i = 0; i < batch.count; i++) {
        if (batch.lengths[i] === UNMATCHABLE || !mayHold(this.#deltaKeys!, hashes[i]!)) continue;
        const id = delta.lookupBatchItem(batch, i);
        if (id === NOT_FOUND) continue;
        ids[i] = servedDeltaId(delta, id);
        if (ids[i] !== NOT_FOUND) inDelta[i] = 1;
      }
    }
    return located;
  }

  /** Full verdict for a syntactically valid VPA; `upi` is echoed as given. */
  verdict(upi: string): VpaVerdict {
    const id = this.locate(upi);
    return id === NOT_FOUND ? clearedVerdict(upi) : this.located.flaggedVerdict(id, upi);
  }

  /** Batch item for a syntactically valid VPA. */
  batchItem(upi: string): BatchItem {
    const id = this.locate(upi);
    return id === NOT_FOUND ? clearedBatchItem(upi) : this.located.flaggedBatchItem(id, upi);
  }

  /** The cluster with this id: clusters are the snapshot's until compaction. */
  cluster(clusterId: string): Cluster | null {
    return this.base.cluster(clusterId);
  }
}

/**
 * The id to answer for a VPA the delta holds at `id`: NOT_FOUND (CLEARED,
 * whatever the snapshot says) when a correction took back all of its
 * evidence, which the delta keeps as a VPA with no evidence.
 */
function servedDeltaId(delta: SnapshotView, id: number): number {
  return delta.data.evidenceCount[id] === 0 ? NOT_FOUND : id;
}

/** What ServingView.locateAll found: by item, an id (or NOT_FOUND) and whether it is the delta view's. */
export interface LocatedBatch {
  readonly ids: Int32Array;
  readonly inDelta: Uint8Array;
}

/** X-Data-As-Of of `base` served with `delta`: when the newest evidence either holds was ingested, epoch ms. */
export function servedAsOf(base: SnapshotView, delta: DeltaData | null): number {
  return delta === null || delta.meta.vpaCount === 0 ? base.asOf : Math.max(base.asOf, delta.meta.dataAsOf);
}
