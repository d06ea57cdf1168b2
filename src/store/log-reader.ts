import type pg from 'pg';
import { ErrorCode, StoreError } from '../common/errors.js';
import { MAX_EVIDENCE_ID_LENGTH, MAX_URL_LENGTH, storedRecordProblem, type EvidenceRecord } from '../evidence/record.js';
import { MAX_VPA_LENGTH } from '../vpa/vpa.js';
import { readCopyOut, withPoolClient } from './copy-out.js';
import { CopyTextRows, RowTooLongError } from './copy-text.js';
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

/** A row of the log as the builder's mirror reads it: when it was ingested is not read. */
export type MirroredEvidence = Omit<LoggedEvidence, 'ingestedAt'>;

/** Rows after `after`, oldest first, at most `limit`. */
export async function readLog(client: pg.ClientBase | pg.Pool, location: StoreLocation, after: number, limit: number): Promise<LoggedEvidence[]> {
  let result: pg.QueryResult<LogRow>;
  try {
    result = await client.query<LogRow>(`SELECT ${logColumns('evidence')} FROM evidence WHERE position > $1 ORDER BY position LIMIT $2`, [after, limit]);
  } catch (error) {
    throw storeError(location, error);
  }
  const order = new LogOrder(location, after);
  return result.rows.map((row) => order.check(loggedEvidenceOf(row, location)));
}

/**
 * The log after `after`, oldest first, at most `limit` rows, checked as
 * readLog checks them and handed to `onRow` one by one as they stream in:
 * one COPY, so that PostgreSQL reads and sends the next rows while these
 * are checked, and no result object is made per row (bench/MEASUREMENTS.md,
 * "Fleet start: the download and the mirror"). When `onRow` returns a
 * promise, the next rows wait for it. Resolves with the rows read and the
 * last one's position (`after` when none). A failure of `onRow` or of a
 * check ends the call with it once the rest of the COPY is read and
 * dropped, which `limit` bounds, so the connection goes back to the pool
 * usable.
 */
export async function copyLog(
  pool: pg.Pool,
  location: StoreLocation,
  after: number,
  limit: number,
  onRow: (entry: MirroredEvidence) => Promise<void> | undefined,
): Promise<{ rows: number; position: number }> {
  if (!Number.isSafeInteger(after) || after < 0) throw new RangeError(`copyLog: after must be a whole number, got ${after}`);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`copyLog: limit must be a positive whole number, got ${limit}`);
  const order = new LogOrder(location, after);
  const parser = new CopyTextRows(MAX_LOG_ROW_BYTES);
  let count = 0;
  const sql = `COPY (SELECT ${MIRROR_COLUMNS} FROM evidence WHERE position > ${after} ORDER BY position LIMIT ${limit}) TO STDOUT`;
  try {
    await withPoolClient(pool, location, (client) =>
      readCopyOut(client, location, sql, async (piece) => {
        for (const fields of parser.push(piece)) {
          count++;
          const waiting = onRow(order.check(mirroredEvidenceOf(mirrorRowOf(fields, location), location)));
          if (waiting !== undefined) await waiting;
        }
      }),
    );
  } catch (error) {
    if (!(error instanceof RowTooLongError)) throw error;
    throw new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: the evidence log's row after position ${order.position} is longer than ${error.maxRowBytes} bytes`);
  }
  if (!parser.complete) throw new StoreError(ErrorCode.STORE, `store schema ${location.schema}: the log's COPY ended inside a row`);
  return { rows: count, position: order.position };
}

/** Positions only increase (a duplicate leaves one unused, evidence-log.ts); the query's order says so, the rows are checked all the same. */
class LogOrder {
  readonly #location: StoreLocation;
  position: number;

  constructor(location: StoreLocation, after: number) {
    this.#location = location;
    this.position = after;
  }

  check<T extends MirroredEvidence>(entry: T): T {
    if (entry.position <= this.position) {
      throw new StoreError(ErrorCode.STORE_DATA, `store schema ${this.#location.schema}: the evidence log goes from position ${this.position} to ${entry.position}`);
    }
    this.position = entry.position;
    return entry;
  }
}

const MIRROR_COLUMNS = 'position, evidence_id, upi, url, source_category, risk_category, captured_at_ms, screenshot';

/**
 * The most bytes of one row of the log in COPY's text (copyLog): far past
 * a row the contract allows (an id, a VPA and a url at their longest, each
 * character escaped), so a longer one, made by another writer, is refused
 * before it is gathered whole.
 */
const MAX_LOG_ROW_BYTES = 64 * 1024;

/**
 * The columns a query reads a row of the log by (`table` names the
 * evidence table in it), each text cut one character past its contract's
 * bound: a row another writer made huge reads back small and is refused by
 * its check, never held whole.
 */
export function logColumns(table: string): string {
  return [
    `${table}.position`,
    `left(${table}.evidence_id, ${MAX_EVIDENCE_ID_LENGTH + 1}) AS evidence_id`,
    `left(${table}.upi, ${MAX_VPA_LENGTH + 1}) AS upi`,
    `left(${table}.url, ${MAX_URL_LENGTH + 1}) AS url`,
    `${table}.source_category`,
    `${table}.risk_category`,
    `${table}.captured_at_ms`,
    `${table}.screenshot`,
    `(extract(epoch FROM ${table}.ingested_at) * 1000)::bigint AS ingested_at_ms`,
  ].join(', ');
}

/** A row of the COPY's text as the row a query gives (MIRROR_COLUMNS, in order). */
function mirrorRowOf(fields: readonly string[], location: StoreLocation): MirrorRow {
  const [position, evidenceId, upi, url, source, risk, capturedAt, screenshot] = fields;
  if (fields.length !== 8 || (screenshot !== 't' && screenshot !== 'f')) {
    throw new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: a row of the evidence log (position ${JSON.stringify(fields[0])}) is not in the form of its table`);
  }
  return {
    position: position!,
    evidence_id: evidenceId!,
    upi: upi!,
    url: url!,
    source_category: Number(source),
    risk_category: Number(risk),
    captured_at_ms: capturedAt!,
    screenshot: screenshot === 't',
  };
}

/** The evidence id at `position`, or null when the log has no such position. */
export async function evidenceIdAt(client: pg.ClientBase | pg.Pool, location: StoreLocation, position: number): Promise<string | null> {
  try {
    return (await client.query<{ evidence_id: string }>('SELECT evidence_id FROM evidence WHERE position = $1', [position])).rows[0]?.evidence_id ?? null;
  } catch (error) {
    throw storeError(location, error);
  }
}

export interface MirrorRow {
  readonly position: string;
  readonly evidence_id: string;
  readonly upi: string;
  readonly url: string;
  readonly source_category: number;
  readonly risk_category: number;
  readonly captured_at_ms: string;
  readonly screenshot: boolean;
}

export interface LogRow extends MirrorRow {
  readonly ingested_at_ms: string;
}

/** A row of the log, checked against the ingestion contract again. */
export function loggedEvidenceOf(row: LogRow, location: StoreLocation): LoggedEvidence {
  const { position, record } = mirroredEvidenceOf(row, location);
  const ingestedAt = Number(row.ingested_at_ms);
  if (!Number.isSafeInteger(ingestedAt)) throw badRow(row, location, 'has no valid ingest time');
  return { position, record, ingestedAt };
}

/** A row of the log without its ingest time, checked against the ingestion contract again. */
function mirroredEvidenceOf(row: MirrorRow, location: StoreLocation): MirroredEvidence {
  const position = Number(row.position);
  const capturedAt = Number(row.captured_at_ms);
  if (!Number.isSafeInteger(position) || position < 1) throw badRow(row, location, 'has no valid position');
  if (!Number.isSafeInteger(capturedAt)) throw badRow(row, location, 'has no valid capture time');
  const stored: EvidenceRecord = {
    evidenceId: row.evidence_id,
    upi: row.upi,
    url: row.url,
    sourceCategory: row.source_category,
    riskCategory: row.risk_category,
    capturedAt,
    screenshot: row.screenshot,
  };
  // Checked as the contract item it stands for would be: stored as validated, it reads back the same.
  const problem = storedRecordProblem(stored);
  if (problem !== null) throw badRow(row, location, `breaks the ingestion contract: ${problem}`);
  return { position, record: stored };
}

function badRow(row: MirrorRow, location: StoreLocation, why: string): StoreError {
  return new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: evidence at position ${row.position} ${why}`);
}
