import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { ErrorCode, EvidenceError } from '../common/errors.js';
import type { EvidenceRecord } from '../evidence/record.js';
import { LineCheck, type LineError } from '../evidence/lines.js';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * The evidence log in the store (fleet mode): `upi-risk ingest --store`
 * appends to it, builders and followers read it in position order.
 *
 * An ingest is one transaction, all or nothing, like a file in embedded
 * mode. Its lines are validated as they stream into a temporary table with
 * COPY; then, holding the row lock of `log_head` until it commits, it
 * inserts the items whose evidence id the log does not hold yet (the first
 * of each id in the input), numbered on from the head. Since the next
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

/** Append NDJSON held in memory (an HTTP body) to the log; `source` names it. */
export function appendEvidenceBytes(client: pg.ClientBase, location: StoreLocation, bytes: Uint8Array, source: string): Promise<LogIngestResult> {
  return appendEvidence(client, location, source, async () => Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')]));
}

async function appendEvidence(client: pg.ClientBase, location: StoreLocation, source: string, open: () => Promise<Readable>): Promise<LogIngestResult> {
  const input = await open();
  const check = new LineCheck(source, storableReason);
  try {
    await client.query('BEGIN');
    await client.query(
      'CREATE TEMP TABLE incoming (line integer, evidence_id text, upi text, url text, source_category smallint, risk_category smallint, captured_at_ms bigint, screenshot boolean) ON COMMIT DROP',
    );
    const copy = client.query(copyStreams.from('COPY incoming FROM STDIN (FORMAT csv)'));
    async function* rows(): AsyncGenerator<string> {
      let pending = '';
      for await (const { number, record } of check.lines(input)) {
        // An input known bad sends nothing more; its lines are still checked, to report every one.
        if (check.invalidLines > 0) continue;
        pending += csvRow(number, record);
        if (pending.length >= 1 << 16) {
          yield pending;
          pending = '';
        }
      }
      if (pending.length > 0) yield pending;
    }
    await pipeline(Readable.from(rows()), copy);
    const { validLines, invalidLines, errors } = check;
    if (invalidLines > 0 || validLines === 0) {
      await client.query('ROLLBACK');
      return { source, accepted: invalidLines === 0, validLines, invalidLines, errors, added: 0, duplicates: 0, position: await head(client) };
    }
    const before = Number((await client.query<{ position: string }>('SELECT position FROM log_head FOR UPDATE')).rows[0]!.position);
    const inserted = await client.query(
      `INSERT INTO evidence (position, evidence_id, upi, url, source_category, risk_category, captured_at_ms, screenshot)
       SELECT $1::bigint + row_number() OVER (ORDER BY line), evidence_id, upi, url, source_category, risk_category, captured_at_ms, screenshot
       FROM (
         SELECT DISTINCT ON (evidence_id) * FROM incoming i
         WHERE NOT EXISTS (SELECT 1 FROM evidence e WHERE e.evidence_id = i.evidence_id)
         ORDER BY evidence_id, line
       ) fresh`,
      [before],
    );
    const added = inserted.rowCount ?? 0;
    const position = before + added;
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

/** The channel on which an ingest announces the log's new head. */
export function evidenceChannel(location: StoreLocation): string {
  return `${location.schema}_evidence`;
}

async function head(client: pg.ClientBase): Promise<number> {
  return Number((await client.query<{ position: string }>('SELECT position FROM log_head')).rows[0]!.position);
}

/** Why a valid record cannot be stored in PostgreSQL, or null: text there cannot hold a NUL character. */
function storableReason(record: EvidenceRecord): string | null {
  return record.evidenceId.includes('\0') || record.url.includes('\0') ? 'evidence_id or url holds a NUL character, which the store cannot keep' : null;
}

function csvRow(line: number, r: EvidenceRecord): string {
  return `${line},${csvText(r.evidenceId)},${csvText(r.upi)},${csvText(r.url)},${r.sourceCategory},${r.riskCategory},${r.capturedAt},${r.screenshot ? 't' : 'f'}\n`;
}

/** A field for COPY's CSV format: quoted, with quotes doubled (so commas, quotes and line breaks are kept as they are). */
function csvText(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}
