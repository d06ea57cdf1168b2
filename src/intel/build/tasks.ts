import type { AggregateResult, AggregateTask, DedupTask, ParseTask } from './phases.js';
import type { MessagePort } from 'node:worker_threads';
import type { SnapshotMeta } from '../../engine/snapshot-data.js';

/** Messages from the build orchestrator to pool threads. */
export type BuildTask =
  | ({ readonly kind: 'parse' } & ParseTask)
  | ({ readonly kind: 'dedup' } & DedupTask)
  | ({ readonly kind: 'aggregate' } & AggregateTask)
  | ({ readonly kind: 'assemble' } & AssembleTask);

export interface AssembleTask {
  readonly partials: AggregateResult[];
  readonly dataDirRoot: string;
  readonly urlMemberCap: number;
  readonly scoredAt: number;
  readonly evidenceFiles: readonly string[];
  readonly dataAsOf: number;
  readonly skippedLines: number;
  /** Where to post the assembled snapshot, in shared memory, before it is written (BuildOptions.onAssembled). */
  readonly assembled?: MessagePort;
}

export interface AssembleOutcome {
  readonly path: string;
  readonly meta: SnapshotMeta;
  readonly assembleMs: number;
  readonly writeMs: number;
}
