import type { AggregateResult, AggregateTask, DedupTask, ParseTask } from './phases.js';
import type { DeltaMergeTask } from './delta-merge.js';
import type { MessagePort } from 'node:worker_threads';
import type { SnapshotMeta } from '../engine/snapshot-data.js';
import type { IndexArrays } from '../engine/vpa-index.js';

/** Messages from the build orchestrator to pool threads. */
export type BuildTask =
  | ({ readonly kind: 'parse' } & ParseTask)
  | ({ readonly kind: 'dedup' } & DedupTask)
  | ({ readonly kind: 'aggregate' } & AggregateTask)
  | ({ readonly kind: 'assemble' } & AssembleTask)
  | ({ readonly kind: 'index' } & IndexTask & { readonly reuse?: readonly SharedArrayBuffer[]; readonly releaseScratch?: boolean })
  | ({ readonly kind: 'delta' } & DeltaMergeTask)
  /**
   * A full collection of the thread's heap, so that the shared memory it
   * alone still holds is given back; with `scratch`, its working memory
   * kept for the next task goes too.
   */
  | { readonly kind: 'collect'; readonly scratch?: boolean };

/**
 * Build the index of the keys an assemble task has gathered (in shared
 * memory; see AssembleTask.index). The orchestrator adds the buffers of a
 * replaced snapshot's index for the new one's arrays, when it has them.
 */
export interface IndexTask {
  readonly keyBytes: Uint8Array;
  readonly keyOffsets: Uint32Array;
  readonly count: number;
}

/** What an index task returns: the arrays, and how many of their bytes are in reused buffers. */
export interface IndexResult {
  readonly arrays: IndexArrays;
  readonly reusedBytes: number;
  /** Bytes of working memory the thread keeps for its next task (BuildReport.workingBytesKept). */
  readonly workingBytesKept: number;
}

/**
 * Messages on AssembleTask.index: the assemble thread sends an IndexTask,
 * the orchestrator runs it on another pool thread and answers with the
 * arrays or the error.
 */
export type IndexReply = { readonly arrays: IndexArrays } | { readonly error: string };

export interface AssembleTask {
  readonly partials: AggregateResult[];
  readonly dataDirRoot: string;
  readonly urlMemberCap: number;
  readonly scoredAt: number;
  readonly evidenceMaxAgeMs: number;
  readonly correctionSequence: number;
  readonly evidenceFiles: readonly string[];
  readonly dataAsOf: number;
  readonly skippedLines: number;
  /** Where to post the assembled snapshot, in shared memory, before it is written (BuildOptions.onAssembled). */
  readonly assembled?: MessagePort;
  /**
   * Where to send the keys for the index to be built on another pool thread
   * while this one lays out the columns (IndexReply comes back). Absent, the
   * assemble thread builds the index itself; always so on a one-thread pool,
   * where the index task would wait for the very thread waiting for it.
   */
  readonly index?: MessagePort;
  /**
   * Buffers of a replaced snapshot that nothing reads any more, for the new
   * snapshot's arrays (ReusedSharedArrays); those of its index too when
   * this thread builds the index.
   */
  readonly reuse?: readonly SharedArrayBuffer[];
  /**
   * Let go of this thread's working memory as the task starts (what
   * aggregation left in it) and once the snapshot is assembled and posted,
   * before its file is written (BuilderOptions.releaseWorkingMemory).
   */
  readonly releaseScratch?: boolean;
}

export interface AssembleOutcome {
  readonly path: string;
  readonly meta: SnapshotMeta;
  readonly assembleMs: number;
  readonly writeMs: number;
  /** Bytes of the snapshot's arrays this thread laid out in reused buffers. */
  readonly reusedBytes: number;
  /** Bytes of working memory the thread keeps for its next task (BuildReport.workingBytesKept). */
  readonly workingBytesKept: number;
}
