import type { DeltaFile } from '../builder/delta-merge.js';
import { RecordWriter, packFlags } from '../builder/record-codec.js';
import type { LoggedEvidence } from '../store/log-reader.js';

/**
 * Rows of the evidence log as the records a delta merge takes
 * (record-codec.ts), as one file of the merge: chunk `chunk`, each row's
 * line its place in the batch. The log holds each evidence id once
 * (evidence-log.ts), so the rows need no deduplication, and their ids are
 * left out as a build leaves them out once deduplicated.
 */
export function logRecords(rows: readonly LoggedEvidence[], chunk: number): { records: ArrayBuffer; file: DeltaFile } {
  if (rows.length === 0) throw new RangeError('logRecords needs at least one row');
  const writer = new RecordWriter(Math.max(1024, rows.length * 96));
  let storedAt = 0;
  for (const [line, { record, ingestedAt }] of rows.entries()) {
    writer.append(chunk, line, record.capturedAt, packFlags(record.sourceCategory, record.riskCategory, record.screenshot), record.upi, record.url, '');
    storedAt = Math.max(storedAt, ingestedAt);
  }
  const first = rows[0]!.position;
  const last = rows[rows.length - 1]!.position;
  return { records: writer.finish(), file: { name: `log-${first}-${last}`, firstChunk: chunk, endChunk: chunk + 1, storedAt } };
}
