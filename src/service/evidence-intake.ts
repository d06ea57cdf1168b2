import type { DataDir } from '../common/data-dir.js';
import { ingestBytes } from '../evidence/store.js';
import type { LineError } from '../evidence/lines.js';
import type { SnapshotService } from './snapshot-service.js';

/** What became of evidence sent in one request (POST /v1/admin/evidence). */
export type IntakeResult =
  | {
      readonly kind: 'stored';
      /** Valid evidence items in the body, all stored. */
      readonly items: number;
      /** Items with an evidence id not seen before: served from now on. Null when not known (IntakeResult of a server without incremental builds). */
      readonly added: number | null;
      /** Items whose evidence id was seen before, which change nothing. */
      readonly duplicates: number | null;
      /** The data version that serves them (X-Data-Version). */
      readonly dataVersion: string;
    }
  | { readonly kind: 'refused'; readonly invalidLines: number; readonly errors: readonly Pick<LineError, 'line' | 'reason'>[] }
  | { readonly kind: 'empty' };

/**
 * Store a body of NDJSON evidence as `upi-risk ingest` stores a file (all
 * or nothing, fsynced before this resolves), then wait until the server
 * serves it, and say how much of it was new.
 */
export async function takeEvidence(service: SnapshotService, dir: DataDir, body: Uint8Array): Promise<IntakeResult> {
  const result = await ingestBytes(dir, body, 'request body');
  if (!result.accepted) {
    return { kind: 'refused', invalidLines: result.invalidLines, errors: result.errors.map(({ line, reason }) => ({ line, reason })) };
  }
  if (result.storedAs === null) return { kind: 'empty' };
  const added = await service.served(result.storedAs);
  return {
    kind: 'stored',
    items: result.validLines,
    added,
    duplicates: added === null ? null : result.validLines - added,
    dataVersion: service.view.version,
  };
}
