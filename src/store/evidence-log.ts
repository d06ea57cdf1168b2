import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { ErrorCode, EvidenceError } from '../common/errors.js';
import type { EvidenceRecord } from '../evidence/record.js';
import { LineCheck, type LineError } from '../evidence/lines.js';
import { lockLogHead } from './log-head.js';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * The evidence log in the store (fleet mode): `upi-risk ingest --store`
 * appends to it, builders and followers read it in position order.
 *
 * An ingest is one transaction, all or nothing, like a file in embedded
 * mode. Holding the row lock of `log_head` until it commits, it validates
 * its lines, numbers them on from the head in line order, and stores them
 * in batches (storeBatch), leaving out every evidence id the log holds
 * already, so the first of each id wins; the next batch is read and
 * checked meanwhile. A duplicate leaves its position unused: positions
 * only ever increase. Since the next
 * ingest cannot take positions before this one commits, positions become
 * visible in order: a reader that has read up to P never finds a position
 * below P later (the trap of serial columns, where a transaction that took
 * an earlier number commits later, cannot happen).
 */
export interface LogIngestResult {
  readonly source: string;
  readonly accepted: boolean;
  readonly validLines: number;
  readonly invalidLines: number;
  readonly errors: readonly LineError[];
  /** Items appended (new evidence ids), and those skipped as ids the log or the input held before. */
  readonly added: number;
  readonly duplicates: number;
  /** The log's head after this ingest: its items are at positions up to it. */
  readonly position: number;
}

/** Append an NDJSON file to the log. */
export function appendEvidenceFile(client: pg.ClientBase, location: StoreLocation, file: string): Promise<LogIngestResult> {
  return appendEvidence(client, location, file, () => {
    const input = createReadStream(file, { encoding: 'utf8' });
    return new Promise<Readable>((resolve, reject) => {
      input.once('open', () => resolve(input));
      input.once('error', (error) => reject(new EvidenceError(ErrorCode.EVIDENCE_FILE, `cannot read ${file}: ${error.message}`, { cause: error })));
    });
  });
}

/**
 * Append NDJSON held in memory (an HTTP body) to the log; `source` names it.
 * `headWaitMs` bounds the wait for the log's head (log-head.ts).
 */
export function appendEvidenceBytes(client: pg.ClientBase, location: StoreLocation, bytes: Uint8Array, source: string, headWaitMs: number | null = null): Promise<LogIngestResult> {
  return appendEvidence(client, location, source, async () => Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')]), headWaitMs);
}

async function appendEvidence(client: pg.ClientBase, location: StoreLocation, source: string, open: () => Promise<Readable>, headWaitMs: number | null = null): Promise<LogIngestResult> {
  const input = await open();
  const check = new LineCheck(source, storableReason);
  try {
    await client.query('BEGIN');
    // A batch is sorted in memory; the log's evidence ids are looked up in its unique index, one by one.
    await client.query("SET LOCAL work_mem = '64MB'; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off");
    await client.query(
      'CREATE TEMP TABLE incoming (LIKE evidence INCLUDING DEFAULTS) ON COMMIT DROP',
    );
    // Held until commit: the next ingest numbers on from where this one ends, and commits after it.
    const before = await lockLogHead(client, location, headWaitMs);
    const numbering = { next: before + 1, last: before, added: 0 };
    // The database stores one batch while the next is read and checked here.
    let storing: Promise<void> = Promise.resolve();
    for await (const batch of csvBatches(check, numbering, input)) {
      await storing;
      if (check.invalidLines > 0) continue;
      storing = storeBatch(client, batch).then(({ added, last }) => {
        numbering.added += added;
        if (last !== null) numbering.last = last;
      });
      // Awaited before the next batch or after the last; failing meanwhile, it is not an unhandled rejection.
      storing.catch(() => {});
    }
    await storing;
    const { validLines, invalidLines, errors } = check;
    if (invalidLines > 0 || validLines === 0) {
      await client.query('ROLLBACK');
      return { source, accepted: invalidLines === 0, validLines, invalidLines, errors, added: 0, duplicates: 0, position: before };
    }
    const { added, last: position } = numbering;
    await client.query('UPDATE log_head SET position = $1', [position]);
    await client.query(
      'INSERT INTO ingests (source, items, duplicates, first_position, last_position) VALUES ($1, $2, $3, $4, $5)',
      [source, validLines, validLines - added, before + 1, position],
    );
    // Delivered on commit to whoever listens: followers and builders read on from where they were.
    if (added > 0) await client.query('SELECT pg_notify($1, $2)', [evidenceChannel(location), String(position)]);
    await client.query('COMMIT');
    return { source, accepted: true, validLines, invalidLines, errors, added, duplicates: validLines - added, position };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    input.destroy();
    if (error instanceof EvidenceError) throw error;
    throw storeError(location, error);
  }
}

/** Lines per batch: enough that a statement's own cost does not count, few enough to hold in memory twice. */
const BATCH_LINES = 50_000;

/**
 * The valid lines of an input as CSV rows for COPY, BATCH_LINES at a time,
 * each row given the next position of `numbering` in line order. A batch
 * is written into a few large buffers as it is read, not kept as a string
 * per row: at millions of lines, rows that outlive a young-generation
 * collection made collection most of the time spent here. The invalid
 * lines are counted by `check`; once there is one, the input is only read
 * through, to report every bad line.
 */
async function* csvBatches(check: LineCheck, numbering: { next: number }, input: Readable): AsyncGenerator<Batch> {
  let pieces: Buffer[] = [];
  let piece = Buffer.allocUnsafe(PIECE_BYTES);
  let used = 0;
  let rows = 0;
  const seal = () => {
    if (used > 0) pieces.push(piece.subarray(0, used));
    piece = Buffer.allocUnsafe(PIECE_BYTES);
    used = 0;
  };
  for await (const checked of check.lines(input)) {
    if (check.invalidLines > 0) continue;
    for (const { record } of checked) {
      const row = csvRow(numbering.next++, record);
      // At most 3 bytes of UTF-8 a character: room checked without encoding the row twice (a row is far below a piece).
      if (used + 3 * row.length > PIECE_BYTES) seal();
      used += piece.write(row, used);
      if (++rows === BATCH_LINES) {
        seal();
        yield { csv: pieces, rows, last: numbering.next - 1 };
        pieces = [];
        rows = 0;
      }
    }
  }
  seal();
  if (rows > 0) yield { csv: pieces, rows, last: numbering.next - 1 };
}

/** CSV rows for COPY, `rows` of them, the last at position `last`. */
interface Batch {
  readonly csv: readonly Buffer[];
  readonly rows: number;
  readonly last: number;
}

const PIECE_BYTES = 1 << 20;

/**
 * Append one batch to the log: every row whose evidence id the log does
 * not hold yet (rows of this ingest's earlier batches included), at the
 * position it was given, the first of each id in the batch. A batch of
 * ids all new, the usual case for a large file of fresh evidence, is
 * copied straight into the log; one that holds an id the log or the batch
 * has already fails that copy (its savepoint undoes it) and goes through a
 * temporary table instead, which leaves those rows out. Resolves with how
 * many rows were appended and the last position appended (null for none).
 */
async function storeBatch(client: pg.ClientBase, batch: Batch): Promise<{ added: number; last: number | null }> {
  await client.query('SAVEPOINT batch');
  try {
    await copyInto(client, 'evidence', batch);
    await client.query('RELEASE SAVEPOINT batch');
    return { added: batch.rows, last: batch.last };
  } catch (error) {
    if ((error as { code?: unknown }).code !== UNIQUE_VIOLATION) throw error;
    await client.query('ROLLBACK TO SAVEPOINT batch; RELEASE SAVEPOINT batch');
  }
  await client.query('TRUNCATE incoming');
  await copyInto(client, 'incoming', batch);
  const result = await client.query<{ added: string; last: string | null }>(
    `WITH appended AS (
       INSERT INTO evidence (${COLUMNS})
       SELECT DISTINCT ON (evidence_id) ${COLUMNS} FROM incoming i
       WHERE NOT EXISTS (SELECT 1 FROM evidence e WHERE e.evidence_id = i.evidence_id)
       -- Of two lines with one evidence id, the first.
       ORDER BY evidence_id, position
       RETURNING position
     )
     SELECT count(*) AS added, max(position) AS last FROM appended`,
  );
  const row = result.rows[0]!;
  return { added: Number(row.added), last: row.last === null ? null : Number(row.last) };
}

/** The columns a batch's CSV rows hold, in order. */
const COLUMNS = 'position, evidence_id, upi, url, source_category, risk_category, captured_at_ms, screenshot';
/** SQLSTATE of a unique index refusing a row. */
const UNIQUE_VIOLATION = '23505';

async function copyInto(client: pg.ClientBase, table: 'evidence' | 'incoming', batch: Batch): Promise<void> {
  await pipeline(Readable.from(batch.csv), client.query(copyStreams.from(`COPY ${table} (${COLUMNS}) FROM STDIN (FORMAT csv)`)));
}

/** The channel on which an ingest announces the log's new head. */
export function evidenceChannel(location: StoreLocation): string {
  return `${location.schema}_evidence`;
}

/** Why a valid record cannot be stored in PostgreSQL, or null: text there cannot hold a NUL character. */
function storableReason(record: EvidenceRecord): string | null {
  return record.evidenceId.includes('\0') || record.url.includes('\0') ? 'evidence_id or url holds a NUL character, which the store cannot keep' : null;
}

function csvRow(position: number, r: EvidenceRecord): string {
  return `${position},${csvText(r.evidenceId)},${csvText(r.upi)},${csvText(r.url)},${r.sourceCategory},${r.riskCategory},${r.capturedAt},${r.screenshot ? 't' : 'f'}\n`;
}

/** A field for COPY's CSV format: quoted, with quotes doubled (so commas, quotes and line breaks are kept as they are). */
function csvText(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}
