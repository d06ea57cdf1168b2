import type pg from 'pg';
import { ErrorCode, StoreError } from '../common/errors.js';
import { evidenceItem, validateEvidence, type EvidenceRecord } from '../evidence/record.js';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * Reading the evidence log (evidence-log.ts writes it) in position order:
 * followers read what came after their snapshot, the builder mirrors it
 * into files. Each row is checked against the ingestion contract again, as
 * every input is: a row that breaks it was not written by this service.
 */
export interface LoggedEvidence {
  readonly position: number;
  readonly record: EvidenceRecord;
  /** When its ingest committed, by the database's clock, epoch ms. */
  readonly ingestedAt: number;
}

/** Rows after `after`, oldest first, at most `limit`. */
export async function readLog(client: pg.ClientBase | pg.Pool, location: StoreLocation, after: number, limit: number): Promise<LoggedEvidence[]> {
  let result: pg.QueryResult<LogRow>;
  try {
    result = await client.query<LogRow>(
      `SELECT position, evidence_id, upi, url, source_category, risk_category, captured_at_ms, screenshot,
              (extract(epoch FROM ingested_at) * 1000)::bigint AS ingested_at_ms
       FROM evidence WHERE position > $1 ORDER BY position LIMIT $2`,
      [after, limit],
    );
  } catch (error) {
    throw storeError(location, error);
  }
  // Positions only increase (a duplicate leaves one unused, evidence-log.ts); the query's order says so, the rows are checked all the same.
  let previous = after;
  return result.rows.map((row) => {
    const entry = loggedEvidenceOf(row, location);
    if (entry.position <= previous) {
      throw new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: the evidence log goes from position ${previous} to ${entry.position}`);
    }
    previous = entry.position;
    return entry;
  });
}

/** The evidence id at `position`, or null when the log has no such position. */
export async function evidenceIdAt(client: pg.ClientBase | pg.Pool, location: StoreLocation, position: number): Promise<string | null> {
  try {
    return (await client.query<{ evidence_id: string }>('SELECT evidence_id FROM evidence WHERE position = $1', [position])).rows[0]?.evidence_id ?? null;
  } catch (error) {
    throw storeError(location, error);
  }
}

export interface LogRow {
  readonly position: string;
  readonly evidence_id: string;
  readonly upi: string;
  readonly url: string;
  readonly source_category: number;
  readonly risk_category: number;
  readonly captured_at_ms: string;
  readonly screenshot: boolean;
  readonly ingested_at_ms: string;
}

/** A row of the log, checked against the ingestion contract again. */
export function loggedEvidenceOf(row: LogRow, location: StoreLocation): LoggedEvidence {
  const position = Number(row.position);
  const ingestedAt = Number(row.ingested_at_ms);
  const capturedAt = Number(row.captured_at_ms);
  const bad = (why: string) => new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: evidence at position ${row.position} ${why}`);
  if (!Number.isSafeInteger(position) || position < 1 || !Number.isSafeInteger(ingestedAt)) throw bad('has no valid position or ingest time');
  if (!Number.isSafeInteger(capturedAt)) throw bad('has no valid capture time');
  const stored: EvidenceRecord = {
    evidenceId: row.evidence_id,
    upi: row.upi,
    url: row.url,
    sourceCategory: row.source_category,
    riskCategory: row.risk_category,
    capturedAt,
    screenshot: row.screenshot,
  };
  // The row as the contract item it came from, validated again; stored as validated, it reads back the same.
  const checked = validateEvidence(evidenceItem(stored));
  if (!checked.ok) throw bad(`breaks the ingestion contract: ${checked.reason}`);
  const record = checked.record;
  if (record.upi !== stored.upi || record.capturedAt !== capturedAt || record.riskCategory !== stored.riskCategory || record.sourceCategory !== stored.sourceCategory) {
    throw bad('is not in the form ingest stores');
  }
  return { position, record, ingestedAt };
}
