import { messageOf } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { DeltaData } from '../engine/delta-data.js';
import type { SnapshotData } from '../engine/snapshot-data.js';
import type { SnapshotView } from '../engine/snapshot-view.js';
import type { ServingView } from '../engine/serving-view.js';

/**
 * What a server serves, as the HTTP edge sees it: a snapshot and the live
 * delta beside it, replaced whole. SnapshotService keeps it from a data
 * directory (embedded mode); FollowerService from the fleet's store.
 */
export interface ServedData {
  /** The snapshot answering now. */
  readonly current: SnapshotView;
  /** The live delta over `current`. */
  readonly delta: DeltaData;
  /** Snapshot and delta together: take it once per request and use that reference throughout. */
  readonly view: ServingView;
  /** Called with every swap; the function returned stops that. */
  onSwap(listener: (event: SwapEvent) => void): () => void;
  /**
   * Work a snapshot needs done before it is served (its VPAs by hash, which
   * range lookups read): a swap to a snapshot loaded from elsewhere (a
   * publication, another process's file) waits until `prepare` has
   * finished with it, while the one before serves on; a compaction's own
   * snapshot is served first (SnapshotService says why). A preparation that
   * fails is logged and the swap goes on without it. The function returned
   * stops that.
   */
  beforeServing(prepare: Preparation): () => void;
  /** Called with every new state of the delta over the same snapshot (a swap brings its own, in SwapEvent); the function returned stops that. */
  onDelta(listener: (delta: DeltaData) => void): () => void;
  /**
   * Offered a replaced snapshot no thread reads any more: whether its
   * memory is kept (for the next build's arrays); false lets it go.
   */
  reuseMemoryOf(data: SnapshotData): boolean;
}

export interface SwapEvent {
  readonly previous: SnapshotView | null;
  readonly next: SnapshotView;
  /** The delta served with `next` from the same moment: what of the old delta the new snapshot does not hold. */
  readonly delta: DeltaData;
  readonly reason: 'start' | 'rebuild' | 'new-snapshot';
}

/** The live delta's figures, as /metrics and the console show them. */
export interface DeltaFigures {
  readonly vpas: number;
  readonly evidenceItems: number;
  readonly bytes: number;
  readonly ageSeconds: number;
  readonly secondsSinceCompaction: number;
}

/** What a snapshot needs done before it is served (ServedData.beforeServing). */
export type Preparation = (next: SnapshotData) => Promise<void>;

/** Run every preparation of `next` side by side; one that fails is logged, and the swap goes on without it. */
export async function prepareToServe(preparations: readonly Preparation[], next: SnapshotData, logger: Logger): Promise<void> {
  await Promise.all(
    preparations.map((prepare) =>
      Promise.resolve()
        .then(() => prepare(next))
        .catch((error: unknown) =>
          logger.error({ snapshot: next.meta.id, err: messageOf(error) }, 'a snapshot could not be prepared before it is served; served without'),
        ),
    ),
  );
}
