import { join, resolve } from 'node:path';

/**
 * Layout of a data directory. Everything the service persists lives here, so
 * one path is all an operator has to back up or hand to `--data-dir`.
 *
 *   evidence/    accepted evidence, one NDJSON file per ingest (immutable)
 *   snapshots/   built snapshots; the newest valid one is served
 *   state/       build state that must survive rebuilds (cluster id assignment),
 *                the data version positions handed out (never to be handed out
 *                again), which snapshot was last served (a start that cannot
 *                load it builds before serving), the corrections journal (retractions and clearances:
 *                not derived, as precious as the evidence), the journal of
 *                disputes and reports (disputes.ndjson), and parsed evidence
 *                chunks kept to speed rebuilds up (state/parsed/, derived:
 *                safe to delete), the carried records of the process that
 *                builds in it, a `serve` or a fleet builder (state/carry/, its
 *                own: emptied when it starts writing and when it stops); and
 *                the locks naming the live processes
 *                that hold them: the `serve` that owns the directory
 *                (serve.lock) and the build running (build.lock)
 *   history/     what was served and when: every data version with the time
 *                it began to be served (versions.bin), so that a version read
 *                from a screening record is resolved later; and how each
 *                VPA's answer changed (changes.log)
 */
export interface DataDir {
  readonly root: string;
  readonly evidence: string;
  readonly snapshots: string;
  readonly state: string;
  readonly clusterIds: string;
  /** The positions of data versions reserved so far (service/position-reserve.ts). */
  readonly positions: string;
  /** Which snapshot was last served (service/last-served-snapshot.ts). */
  readonly servedSnapshot: string;
  /** The lock of the one `serve` (embedded) that owns the directory while it runs (service/serve-lock.ts). */
  readonly serveLock: string;
  /** The carried build records of the process that builds here, in files (builder/spilled-segments.ts). */
  readonly carry: string;
  /** The local mirror's signing key (upi-risk mirror-key create) and the last mirror version made. */
  readonly mirror: string;
  /** The record of the data versions served (history/version-journal.ts). */
  readonly versions: string;
  /** The history of each VPA's answer (history/change-log.ts). */
  readonly answerChanges: string;
}

export const DEFAULT_DATA_DIR = 'var/data';

export function dataDir(root: string = process.env.UPI_RISK_DATA_DIR ?? DEFAULT_DATA_DIR): DataDir {
  const absolute = resolve(root);
  return {
    root: absolute,
    evidence: join(absolute, 'evidence'),
    snapshots: join(absolute, 'snapshots'),
    state: join(absolute, 'state'),
    clusterIds: join(absolute, 'state', 'cluster-ids.bin'),
    positions: join(absolute, 'state', 'data-version-positions.json'),
    servedSnapshot: join(absolute, 'state', 'served-snapshot.json'),
    serveLock: join(absolute, 'state', 'serve.lock'),
    carry: join(absolute, 'state', 'carry'),
    mirror: join(absolute, 'mirror'),
    versions: join(absolute, 'history', 'versions.bin'),
    answerChanges: join(absolute, 'history', 'changes.log'),
  };
}
