import type pg from 'pg';
import { ErrorCode, StoreError } from '../common/errors.js';
import type { ActiveClearance } from '../evidence/corrections.js';
import { evidenceChannel } from './evidence-log.js';
import { logColumns, loggedEvidenceOf, type LoggedEvidence, type LogRow } from './log-reader.js';
import { lockLogHead } from './log-head.js';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * Corrections in the fleet's store (migrations/0006_corrections.sql): each
 * takes the next position of the evidence log under log_head's row lock, so
 * that followers apply corrections and evidence in the one order they
 * committed in, and a builder builds a snapshot under the corrections up
 * to the position it covers.
 */

/** A correction as a follower applies it, at its position. */
export interface LoggedCorrection {
  readonly position: number;
  readonly kind: 'retraction' | 'clearance' | 'clearance_ended';
  /** The VPAs whose answers it changes. */
  readonly upis: readonly string[];
  /** For a clearance, what it suppresses; for its end, the VPA it no longer covers. */
  readonly clearance: ({ readonly upi: string } & ActiveClearance) | null;
}

/** A clearance row, as the API shows it (service/corrections.ts, ClearanceRecord, in epoch ms). */
export interface StoredClearance {
  readonly id: string;
  readonly upi: string;
  readonly reason: string;
  readonly reference: string | null;
  readonly createdAt: number;
  readonly createdBy: string;
  readonly urls: readonly string[];
  readonly position: number;
  readonly endedAt: number | null;
  readonly endedBy: string | null;
  /** The log position of its end, once ended. */
  readonly endedPosition: number | null;
}

async function run<T extends pg.QueryResultRow>(client: pg.ClientBase | pg.Pool, location: StoreLocation, sql: string, values: unknown[] = []): Promise<pg.QueryResult<T>> {
  try {
    return await client.query<T>(sql, values);
  } catch (error) {
    throw storeError(location, error);
  }
}

function bad(location: StoreLocation, what: string): StoreError {
  return new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: ${what}`);
}

function whole(location: StoreLocation, value: string | number | null, what: string): number {
  const n = Number(value);
  if (value === null || !Number.isSafeInteger(n) || n < 0) throw bad(location, `${what} is not a whole number`);
  return n;
}

/** The log's head: every position up to it has committed (evidence-log.ts). */
export async function logHead(client: pg.ClientBase | pg.Pool, location: StoreLocation): Promise<number> {
  const row = (await run<{ position: string }>(client, location, 'SELECT position FROM log_head')).rows[0];
  if (row === undefined) throw bad(location, 'log_head has no row');
  return whole(location, row.position, 'the log head');
}

interface CorrectionRow {
  readonly position: string;
  readonly kind: string;
  readonly upis: string[];
  readonly clearance_upi: string | null;
  readonly created_at_ms: string | null;
  readonly urls: string[] | null;
}

/** Corrections at positions in (after, upTo], in order. */
export async function readCorrections(client: pg.ClientBase | pg.Pool, location: StoreLocation, after: number, upTo: number): Promise<LoggedCorrection[]> {
  const result = await run<CorrectionRow>(
    client,
    location,
    `SELECT c.position, c.kind, c.upis, k.upi AS clearance_upi, k.created_at_ms, k.urls
     FROM corrections c LEFT JOIN clearances k ON k.id = c.clearance_id
     WHERE c.position > $1 AND c.position <= $2 ORDER BY c.position`,
    [after, upTo],
  );
  return result.rows.map((row) => {
    const position = whole(location, row.position, 'a correction position');
    if (row.kind !== 'retraction' && row.kind !== 'clearance' && row.kind !== 'clearance_ended') throw bad(location, `correction at ${position} is of unknown kind`);
    if (!Array.isArray(row.upis) || row.upis.some((u) => typeof u !== 'string')) throw bad(location, `correction at ${position} names no VPAs`);
    let clearance: LoggedCorrection['clearance'] = null;
    if (row.kind !== 'retraction') {
      if (row.clearance_upi === null || row.urls === null) throw bad(location, `correction at ${position} names no clearance`);
      clearance = { upi: row.clearance_upi, createdAt: whole(location, row.created_at_ms, 'a clearance time'), urls: new Set(row.urls) };
    }
    return { position, kind: row.kind, upis: row.upis, clearance };
  });
}

/** The clearances in force once the log up to `position` is applied, by VPA. */
export async function clearancesAsOf(client: pg.ClientBase | pg.Pool, location: StoreLocation, position: number): Promise<Map<string, ActiveClearance>> {
  const result = await run<{ upi: string; created_at_ms: string; urls: string[] }>(
    client,
    location,
    'SELECT upi, created_at_ms, urls FROM clearances WHERE position <= $1 AND (ended_position IS NULL OR ended_position > $1)',
    [position],
  );
  return new Map(result.rows.map((row) => [row.upi, { createdAt: whole(location, row.created_at_ms, 'a clearance time'), urls: new Set(row.urls) }]));
}

/** The evidence ids retracted by positions up to `position`. */
export async function retractedAsOf(client: pg.ClientBase | pg.Pool, location: StoreLocation, position: number): Promise<Set<string>> {
  const result = await run<{ evidence_id: string }>(client, location, 'SELECT evidence_id FROM retracted_evidence WHERE position <= $1 ORDER BY position, evidence_id', [position]);
  return new Set(result.rows.map((row) => row.evidence_id));
}

/** Every item logged for `upis` at positions up to `position` and not retracted by then, in position order. */
export async function evidenceOfVpas(client: pg.ClientBase | pg.Pool, location: StoreLocation, upis: readonly string[], position: number): Promise<LoggedEvidence[]> {
  const result = await run<LogRow>(
    client,
    location,
    `SELECT ${logColumns('e')}
     FROM evidence e
     WHERE e.upi = ANY($1) AND e.position <= $2
       AND NOT EXISTS (SELECT 1 FROM retracted_evidence r WHERE r.evidence_id = e.evidence_id AND r.position <= $2)
     ORDER BY e.position`,
    [upis, position],
  );
  return result.rows.map((row) => loggedEvidenceOf(row, location));
}

/** Which of `ids` name logged evidence of `upi` (canonical), retracted or not. */
export async function evidenceIdsOfVpa(client: pg.ClientBase | pg.Pool, location: StoreLocation, upi: string, ids: readonly string[]): Promise<Set<string>> {
  const result = await run<{ evidence_id: string }>(client, location, 'SELECT evidence_id FROM evidence WHERE evidence_id = ANY($1) AND upi = $2', [[...new Set(ids)], upi]);
  return new Set(result.rows.map((row) => row.evidence_id));
}

/** What a retraction did (logRetraction). */
export interface LoggedRetraction {
  /** Its position, or null when it retracted nothing (then nothing was logged). */
  readonly position: number | null;
  /** The highest position of the retractions before it of the ids it names, or null: a caller's answer waits for it to be served too. */
  readonly earlierPosition: number | null;
  readonly retracted: number;
  readonly unknown: readonly string[];
  readonly alreadyRetracted: number;
  readonly upis: readonly string[];
}

/**
 * Lock log_head until the transaction ends (no evidence and no other
 * correction can commit meanwhile; log-head.ts) and return the position a
 * correction takes, once it calls `take`.
 */
async function lockHead(client: pg.ClientBase, location: StoreLocation, waitMs: number | null): Promise<{ readonly next: number; take(): Promise<number> }> {
  const next = (await lockLogHead(client, location, waitMs)) + 1;
  return {
    next,
    take: async () => {
      await run(client, location, 'UPDATE log_head SET position = $1', [next]);
      return next;
    },
  };
}

/** Commit, telling followers the log moved on; roll back on any failure. */
async function inTransaction<T>(client: pg.ClientBase, location: StoreLocation, work: () => Promise<{ value: T; position: number | null }>): Promise<T> {
  try {
    await run(client, location, 'BEGIN');
    const { value, position } = await work();
    if (position !== null) await run(client, location, 'SELECT pg_notify($1, $2)', [evidenceChannel(location), String(position)]);
    await run(client, location, 'COMMIT');
    return value;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/**
 * Retract the stored items among `ids` not retracted before, as one
 * correction. `headWaitMs` bounds the wait for the log's head (log-head.ts):
 * null, as long as it takes. So below.
 */
export function logRetraction(client: pg.ClientBase, location: StoreLocation, ids: readonly string[], reason: string, actor: string, headWaitMs: number | null = null): Promise<LoggedRetraction> {
  return inTransaction<LoggedRetraction>(client, location, async () => {
    const head = await lockHead(client, location, headWaitMs);
    const distinct = [...new Set(ids)];
    const found = await run<{ evidence_id: string; upi: string; retracted_at: string | null }>(
      client,
      location,
      `SELECT e.evidence_id, e.upi, (SELECT r.position FROM retracted_evidence r WHERE r.evidence_id = e.evidence_id) AS retracted_at
       FROM evidence e WHERE e.evidence_id = ANY($1)`,
      [distinct],
    );
    const known = new Map(found.rows.map((row) => [row.evidence_id, row]));
    const unknown = distinct.filter((id) => !known.has(id));
    const fresh = found.rows.filter((row) => row.retracted_at === null);
    const alreadyRetracted = found.rows.length - fresh.length;
    let earlierPosition: number | null = null;
    for (const row of found.rows) {
      if (row.retracted_at !== null) earlierPosition = Math.max(earlierPosition ?? 0, whole(location, row.retracted_at, 'a retraction position'));
    }
    if (fresh.length === 0) return { value: { position: null, earlierPosition, retracted: 0, unknown, alreadyRetracted, upis: [] }, position: null };
    const position = await head.take();
    const upis = [...new Set(fresh.map((row) => row.upi))].sort();
    await run(client, location, 'INSERT INTO corrections (position, kind, upis, actor, reason) VALUES ($1, $2, $3, $4, $5)', [position, 'retraction', upis, actor, reason]);
    await run(client, location, 'INSERT INTO retracted_evidence (evidence_id, position) SELECT unnest($1::text[]), $2', [fresh.map((row) => row.evidence_id), position]);
    return { value: { position, earlierPosition, retracted: fresh.length, unknown, alreadyRetracted, upis }, position };
  });
}

/** A clearance to record; its urls are read from the log under the same lock. */
export interface NewClearance {
  readonly id: string;
  readonly upi: string;
  readonly reason: string;
  readonly reference: string | null;
  readonly createdAt: number;
  readonly createdBy: string;
  /** Evidence captured before this does not count (expiry): its url is no source of the VPA. */
  readonly countsFrom: number;
}

/** What logClearance did: stored the clearance, or found one in force for the VPA. */
export type ClearanceOutcome = { readonly stored: StoredClearance } | { readonly conflict: StoredClearance };

/** Record a clearance, or find the one in force for the VPA (then nothing is recorded). */
export function logClearance(client: pg.ClientBase, location: StoreLocation, clearance: NewClearance, headWaitMs: number | null = null): Promise<ClearanceOutcome> {
  return inTransaction<ClearanceOutcome>(client, location, async () => {
    // Held from here: no clearance of the VPA and no evidence can commit between the check and the insert.
    const head = await lockHead(client, location, headWaitMs);
    const active = await clearanceInForce(client, location, clearance.upi);
    if (active !== null) return { value: { conflict: active }, position: null };
    const position = await head.take();
    const urls = (
      await run<{ url: string }>(
        client,
        location,
        `SELECT DISTINCT e.url FROM evidence e
         WHERE e.upi = $1 AND e.captured_at_ms >= $2
           AND NOT EXISTS (SELECT 1 FROM retracted_evidence r WHERE r.evidence_id = e.evidence_id)
         ORDER BY e.url`,
        [clearance.upi, Math.max(0, Math.ceil(clearance.countsFrom))],
      )
    ).rows.map((row) => row.url);
    await run(
      client,
      location,
      `INSERT INTO clearances (id, upi, reason, reference, created_at_ms, created_by, urls, position) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [clearance.id, clearance.upi, clearance.reason, clearance.reference, clearance.createdAt, clearance.createdBy, urls, position],
    );
    await run(client, location, 'INSERT INTO corrections (position, kind, upis, clearance_id, actor, reason) VALUES ($1, $2, $3, $4, $5, $6)', [
      position,
      'clearance',
      [clearance.upi],
      clearance.id,
      clearance.createdBy,
      clearance.reason,
    ]);
    const stored: StoredClearance = { ...clearance, urls, position, endedAt: null, endedBy: null, endedPosition: null };
    return { value: { stored }, position };
  });
}

/** What logClearanceEnd found: the clearance, and whether this call ended it. */
export interface ClearanceEnd {
  readonly clearance: StoredClearance;
  /** The end's position, when this call ended it; null when it was ended before. */
  readonly position: number | null;
}

/** End a clearance in force: the ended one, the one ended before (unchanged), or null when no clearance has the id. */
export function logClearanceEnd(client: pg.ClientBase, location: StoreLocation, id: string, actor: string, at: number, headWaitMs: number | null = null): Promise<ClearanceEnd | null> {
  return inTransaction<ClearanceEnd | null>(client, location, async () => {
    const head = await lockHead(client, location, headWaitMs);
    const current = await clearanceById(client, location, id, true);
    if (current === null || current.endedAt !== null) return { value: current === null ? null : { clearance: current, position: null }, position: null };
    const position = await head.take();
    await run(client, location, 'UPDATE clearances SET ended_at_ms = $2, ended_by = $3, ended_position = $4 WHERE id = $1', [id, at, actor, position]);
    await run(client, location, 'INSERT INTO corrections (position, kind, upis, clearance_id, actor) VALUES ($1, $2, $3, $4, $5)', [position, 'clearance_ended', [current.upi], id, actor]);
    return { value: { clearance: { ...current, endedAt: at, endedBy: actor, endedPosition: position }, position }, position };
  });
}

interface ClearanceRow {
  readonly id: string;
  readonly upi: string;
  readonly reason: string;
  readonly reference: string | null;
  readonly created_at_ms: string;
  readonly created_by: string;
  readonly urls: string[];
  readonly position: string;
  readonly ended_at_ms: string | null;
  readonly ended_by: string | null;
  readonly ended_position: string | null;
}

const CLEARANCE_COLUMNS = 'id, upi, reason, reference, created_at_ms, created_by, urls, position, ended_at_ms, ended_by, ended_position';

function clearanceOf(location: StoreLocation, row: ClearanceRow): StoredClearance {
  return {
    id: row.id,
    upi: row.upi,
    reason: row.reason,
    reference: row.reference,
    createdAt: whole(location, row.created_at_ms, 'a clearance time'),
    createdBy: row.created_by,
    urls: row.urls,
    position: whole(location, row.position, 'a clearance position'),
    endedAt: row.ended_at_ms === null ? null : whole(location, row.ended_at_ms, 'a clearance end'),
    endedBy: row.ended_by,
    endedPosition: row.ended_position === null ? null : whole(location, row.ended_position, 'a clearance end position'),
  };
}

export async function clearanceById(client: pg.ClientBase | pg.Pool, location: StoreLocation, id: string, forUpdate = false): Promise<StoredClearance | null> {
  const row = (await run<ClearanceRow>(client, location, `SELECT ${CLEARANCE_COLUMNS} FROM clearances WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [id])).rows[0];
  return row === undefined ? null : clearanceOf(location, row);
}

export async function clearanceInForce(client: pg.ClientBase | pg.Pool, location: StoreLocation, upi: string): Promise<StoredClearance | null> {
  const row = (await run<ClearanceRow>(client, location, `SELECT ${CLEARANCE_COLUMNS} FROM clearances WHERE upi = $1 AND ended_position IS NULL`, [upi])).rows[0];
  return row === undefined ? null : clearanceOf(location, row);
}

/** Clearances in the order made (by position), of one VPA when `upi` is given, after position `after` when given. */
export async function listClearances(
  client: pg.ClientBase | pg.Pool,
  location: StoreLocation,
  query: { readonly upi: string | null; readonly after: number | null; readonly limit: number },
): Promise<StoredClearance[]> {
  const result = await run<ClearanceRow>(
    client,
    location,
    `SELECT ${CLEARANCE_COLUMNS} FROM clearances
     WHERE ($1::text IS NULL OR upi = $1) AND ($2::bigint IS NULL OR position > $2)
     ORDER BY position LIMIT $3`,
    [query.upi, query.after, query.limit],
  );
  return result.rows.map((row) => clearanceOf(location, row));
}
