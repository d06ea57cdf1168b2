import type pg from 'pg';
import { HistoryError, StoreError } from '../common/errors.js';
import type { ChangeEntry } from '../api/history-paths.js';
import type { AnswerReader } from '../history/answer-changes.js';
import { changeEntries, decodeStoredRecord, pastAnswerOf, storedRecordRow, type ChangeLog, type CommittedState, type DecodedStoredRecord, type PastAnswer } from '../history/change-log.js';
import { NO_SCORE, SCORE_BLOCK_VALUES } from '../history/score-columns.js';
import { CONFIDENCE_SCALE } from '../engine/snapshot-data.js';
import type { ServedAt } from '../history/served-versions.js';
import { withPoolClient } from './copy-out.js';
import { answeredWithin, dropConnection, holdsAdvisoryLock, serverLimit, storeError, storeWholeNumber, type StoreLocation } from './postgres.js';

/**
 * The fleet's history of answers in the store (migration 0012): the change
 * log's records and columns as the recording follower wrote them in its
 * own data directory (fleet/history-recorder.ts), with the states it
 * recorded and the stretches of time it recorded them in. Any follower
 * reads a past answer from here with one query, as the embedded server
 * reads it from its file.
 */

/** How often the recorder says it is still recording, ms: an instant is told once a word after it is in. */
export const RECORDER_ALIVE_EVERY_MS = 1_000;
/** The history lease a recorder holds: its advisory lock, held by backend `pid`. */
export interface HistoryLease {
  readonly lockName: string;
  readonly pid: number;
}

/** How long a take-over waits for a copy under way to end, ms. */
const TAKE_OVER_WAIT_MS = 60_000;
/**
 * How long the recorder awaits the answer to one of its statements, ms:
 * past the take-over's wait, far past a copy's statement (a few thousand
 * rows); one never answered (a connection gone half open) fails the copy
 * within this, not after the kernel's timeouts with the follower's states
 * waiting behind it.
 */
export const RECORDER_ANSWER_WITHIN_MS = 2 * TAKE_OVER_WAIT_MS;
/** The same for each of a prune's passes. */
const PRUNE_PASS_WITHIN_MS = 60 * 60_000;

/** Records written per statement, and newest records read per page when a recorder takes over. */
const ROWS_PER_STATEMENT = 5_000;

/** The history in the store as the main thread reads it (history-requests.ts). */
export class StoreAnswerHistory implements AnswerReader {
  readonly #pool: pg.Pool;
  readonly #location: StoreLocation;
  readonly #keepMs: number;
  readonly unavailable = null;
  /** The history is the store's: none of it is in the data directory. */
  readonly bytes = 0;
  readonly #recorder: { readonly indexBytes: number } | null;

  /** Reads from the store at `location`; `recorder`, the follower's recorder of the history, if it has one (its memory is the history's in this process). */
  constructor(pool: pg.Pool, location: StoreLocation, keepMs: number, recorder: { readonly indexBytes: number } | null = null) {
    this.#pool = pool;
    this.#location = location;
    this.#keepMs = keepMs;
    this.#recorder = recorder;
  }

  /** The recorder's index while it records; a follower that does not record holds none. */
  get indexBytes(): number {
    return this.#recorder?.indexBytes ?? 0;
  }

  async answerAt(key: string, at: number): Promise<PastAnswer> {
    return (await this.answersAt([key], at))[0]!;
  }

  /** The answers to `keys` at `at`: one query, each key's newest record then with the newest column's confidence after it. */
  async answersAt(keys: readonly string[], at: number): Promise<PastAnswer[]> {
    const rows = await this.#query<{ key: string; at_ms: string | null; number: number | null; record: Buffer | null; column_at: string | null; score: Buffer | null }>(
      `SELECT k.key, c.at_ms, c.number, c.record, s.at_ms AS column_at,
              substring(b.scores FROM (c.number % ${SCORE_BLOCK_VALUES}) * 2 + 1 FOR 2) AS score
         FROM unnest($1::text[]) WITH ORDINALITY AS k (key, i)
         LEFT JOIN LATERAL (SELECT at_ms, number, record FROM answer_changes WHERE vpa = k.key AND at_ms <= $2 ORDER BY at_ms DESC LIMIT 1) c ON true
         LEFT JOIN LATERAL (SELECT at_ms FROM answer_score_columns WHERE at_ms <= $2 ORDER BY at_ms DESC LIMIT 1) s ON s.at_ms > c.at_ms
         LEFT JOIN answer_score_blocks b ON b.at_ms = s.at_ms AND b.block = c.number / ${SCORE_BLOCK_VALUES}
        ORDER BY k.i`,
      [keys, Math.floor(at)],
    );
    if (rows.length !== keys.length) throw new HistoryError(`${this.#where}: ${rows.length} answers to ${keys.length} VPAs`);
    return Promise.all(
      rows.map((row) => {
        const record = row.record === null || row.at_ms === null || row.number === null ? null : checkedRecord(this.#location, { vpa: row.key, at_ms: row.at_ms, number: row.number, record: row.record }).record;
        return pastAnswerOf(record, this.#where, () => {
          if (row.column_at === null) return Promise.resolve(null);
          const score = row.score;
          const value = score !== null && score.length === 2 ? score.readUInt16LE(0) : NO_SCORE;
          // The store keeps no CRC of a column's blocks: a value no confidence has is refused.
          if (value > CONFIDENCE_SCALE) return Promise.reject(new HistoryError(`${this.#where}: the column of ${row.column_at} holds no confidence for the FLAGGED VPA numbered ${row.number}`));
          return Promise.resolve(value);
        });
      }),
    );
  }

  async changesOf(key: string, now = Date.now()): Promise<ChangeEntry[]> {
    const since = now - this.#keepMs;
    // Its records within the history kept, and the one before, which they are told against.
    const rows = await this.#query<{ at_ms: string; number: number; record: Buffer }>(
      `SELECT at_ms, number, record FROM answer_changes
        WHERE vpa = $1 AND at_ms >= COALESCE((SELECT max(at_ms) FROM answer_changes WHERE vpa = $1 AND at_ms < $2), 0)
        ORDER BY at_ms DESC`,
      [key, Math.floor(since)],
    );
    return changeEntries(
      rows.map((row) => checkedRecord(this.#location, { ...row, vpa: key }).record),
      since,
    );
  }

  /** The retention's start: the states recorded tell the rest (StoreServedVersions.firstAt). */
  earliestAt(now = Date.now()): number | null {
    return this.#keepMs > 0 ? now - this.#keepMs : 0;
  }

  get #where(): string {
    return historyWhere(this.#location);
  }


  async #query<R extends pg.QueryResultRow>(sql: string, values: unknown[]): Promise<R[]> {
    try {
      return (await this.#pool.query<R>(sql, values)).rows;
    } catch (error) {
      throw storeError(this.#location, error);
    }
  }
}

/** The last state recorded: what a recorder taking over continues from. */
export interface LastRecordedState {
  readonly at: number;
  readonly logBytes: number;
  /** When the first state kept began. */
  readonly firstAt: number;
}

/**
 * The state recorded as served at `at` (epoch ms), null before the first;
 * its answers count as recorded up to the last word of the recorder that
 * recorded it (RECORDER_ALIVE_EVERY_MS): after it, that recorder may have
 * stopped, and a state another follower served is not in the history.
 */
export async function recordedStateAt(pool: pg.Pool, location: StoreLocation, at: number): Promise<ServedAt | null> {
  let rows: { at_ms: string; snapshot: string; position: string; data_as_of_ms: string; alive_ms: string }[];
  try {
    ({ rows } = await pool.query(
      `SELECT s.at_ms, s.snapshot, s.position, s.data_as_of_ms, r.alive_ms
         FROM answer_states s JOIN answer_recorders r ON r.term = s.term
        WHERE s.at_ms <= $1 ORDER BY s.at_ms DESC LIMIT 1`,
      [Math.floor(at)],
    ));
  } catch (error) {
    throw storeError(location, error);
  }
  const row = rows[0];
  if (row === undefined) return null;
  return {
    state: { snapshot: row.snapshot, position: storeWholeNumber(location, row.position, 'answer_states.position') },
    from: storeWholeNumber(location, row.at_ms, 'answer_states.at_ms'),
    dataAsOf: storeWholeNumber(location, row.data_as_of_ms, 'answer_states.data_as_of_ms'),
    answersRecorded: at <= storeWholeNumber(location, row.alive_ms, 'answer_recorders.alive_ms'),
  };
}

/** When the first state kept began, null with none. */
export async function firstRecordedAt(pool: pg.Pool, location: StoreLocation): Promise<number | null> {
  try {
    const { rows } = await pool.query<{ at_ms: string | null }>('SELECT min(at_ms) AS at_ms FROM answer_states');
    const text = rows[0]?.at_ms ?? null;
    return text === null ? null : storeWholeNumber(location, text, 'answer_states.at_ms');
  } catch (error) {
    throw error instanceof StoreError ? error : storeError(location, error);
  }
}

export async function lastRecordedState(pool: pg.Pool, location: StoreLocation): Promise<LastRecordedState | null> {
  try {
    const { rows } = await pool.query<{ at_ms: string; log_bytes: string; first_ms: string }>(
      'SELECT at_ms, log_bytes, (SELECT min(at_ms) FROM answer_states) AS first_ms FROM answer_states ORDER BY at_ms DESC LIMIT 1',
    );
    const row = rows[0];
    if (row === undefined) return null;
    return { at: storeWholeNumber(location, row.at_ms, 'answer_states.at_ms'), logBytes: storeWholeNumber(location, row.log_bytes, 'answer_states.log_bytes'), firstAt: storeWholeNumber(location, row.first_ms, 'answer_states.at_ms') };
  } catch (error) {
    throw error instanceof StoreError ? error : storeError(location, error);
  }
}

/**
 * Begin a stretch of recording at `now`; resolves to its term. The newest
 * term is the only one whose copies are taken (writeRecordedState), and
 * this waits for a copy of the one before still under way: once it
 * resolves, the last state in the store stays the last until this term
 * writes one.
 */
export async function beginRecording(pool: pg.Pool, location: StoreLocation, lease: HistoryLease, now: number): Promise<number> {
  return withPoolClient(pool, location, async (client) => {
    try {
      await client.query('BEGIN');
      // A copy that does not end (its connection stalled) holds the lock: the take-over fails, and is tried again.
      await client.query(`SET LOCAL lock_timeout = ${TAKE_OVER_WAIT_MS}`);
      await client.query('LOCK TABLE answer_recorders IN EXCLUSIVE MODE');
      // A take-over whose lease went while it waited begins no term: the one holding it now would be fenced off.
      if (!(await holdsAdvisoryLock(client, lease.lockName, lease.pid))) throw new HistoryError('the history lease was lost while taking the history over');
      const { rows } = await client.query<{ term: string }>('INSERT INTO answer_recorders (began_ms, alive_ms) VALUES ($1, $1) RETURNING term', [Math.floor(now)]);
      await client.query('COMMIT');
      return storeWholeNumber(location, rows[0]!.term, 'answer_recorders.term');
    } catch (error) {
      // Dropped, not rolled back: the server ends the transaction, and a connection that stopped answering is not waited on.
      dropConnection(client);
      throw error instanceof StoreError || error instanceof HistoryError ? error : storeError(location, error);
    }
  });
}

/** Say that `term` still records at `now`, or (`ended`) that it stopped then. */
export async function recordingAlive(pool: pg.Pool, location: StoreLocation, term: number, now: number, ended = false): Promise<void> {
  try {
    await pool.query('UPDATE answer_recorders SET alive_ms = GREATEST(alive_ms, $2), ended = ended OR $3 WHERE term = $1', [term, Math.floor(now), ended]);
  } catch (error) {
    throw storeError(location, error);
  }
}

/** What the recorder names a state by, beside the changes it wrote. */
export interface RecordedState {
  readonly term: number;
  readonly snapshot: string;
  readonly position: number;
  readonly dataAsOf: number;
}

/**
 * Write the state `committed` (its records read from `log`, its column)
 * in one transaction, refused (HistoryError) unless `state.term` is the
 * newest term and the backend `lease.pid` still holds the history lease
 * `lease.lockName`: two recorders never write, and a take-over waits for
 * a copy under way (beginRecording).
 */
export async function writeRecordedState(
  pool: pg.Pool,
  location: StoreLocation,
  lease: HistoryLease,
  state: RecordedState,
  committed: CommittedState,
  log: ChangeLog,
): Promise<void> {
  await withPoolClient(pool, location, async (client) => {
    try {
      await client.query('BEGIN');
      // Held to the commit: a take-over (beginRecording) waits for it, and a copy after one is refused.
      const newest = await client.query('SELECT 1 FROM answer_recorders WHERE term = $1 AND term = (SELECT max(term) FROM answer_recorders) FOR KEY SHARE', [state.term]);
      if (newest.rows.length === 0 || !(await holdsAdvisoryLock(client, lease.lockName, lease.pid))) throw new HistoryError('the history lease was lost; another follower records the history of answers');
      await client.query('INSERT INTO answer_states (at_ms, term, snapshot, position, data_as_of_ms, log_bytes) VALUES ($1, $2, $3, $4, $5, $6)', [
        committed.at,
        state.term,
        state.snapshot,
        state.position,
        Math.floor(state.dataAsOf),
        committed.end,
      ]);
      await log.recordRuns(committed.start, committed.end, async (run) => {
        for (let i = 0; i < run.length; i += ROWS_PER_STATEMENT) await insertChanges(client, run.slice(i, i + ROWS_PER_STATEMENT), log.path);
      });
      if (committed.column !== null) await insertScoreColumn(client, committed.at, committed.column.scoredAt, committed.column.values);
      await client.query('COMMIT');
    } catch (error) {
      // Dropped, not rolled back: the server ends the transaction, and a connection that stopped answering is not waited on.
      dropConnection(client);
      throw error instanceof HistoryError ? error : storeError(location, error);
    }
  });
}

/**
 * Insert the change records `records` (the change log's bytes, from
 * `where`), each a row by its VPA and time, checked but not decoded
 * further. A VPA changed twice in one state answers with its last change:
 * the one kept (the other was never served).
 */
export async function insertChanges(db: pg.ClientBase | pg.Pool, records: readonly Buffer[], where: string): Promise<void> {
  const rows = new Map<string, { readonly row: ReturnType<typeof storedRecordRow>; readonly bytes: Buffer }>();
  for (const bytes of records) {
    const row = storedRecordRow(bytes, where);
    const id = `${row.key} ${row.at}`;
    rows.delete(id);
    rows.set(id, { row, bytes });
  }
  const list = [...rows.values()];
  await db.query(
    `INSERT INTO answer_changes (vpa, at_ms, number, record) SELECT * FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::bytea[])
     ON CONFLICT (vpa, at_ms) DO UPDATE SET number = EXCLUDED.number, record = EXCLUDED.record`,
    [list.map((r) => r.row.key), list.map((r) => r.row.at), list.map((r) => r.row.number), list.map((r) => r.bytes)],
  );
}

/** Insert the column of confidences `values` of the state at `at`, of the scoring day `scoredAt`: its row, and its blocks in one statement. */
export async function insertScoreColumn(db: pg.ClientBase | pg.Pool, at: number, scoredAt: number, values: Uint16Array): Promise<void> {
  await db.query('INSERT INTO answer_score_columns (at_ms, scored_at_ms, vpas) VALUES ($1, $2, $3)', [at, scoredAt, values.length]);
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const blocks: Buffer[] = [];
  for (let from = 0; from < bytes.length; from += 2 * SCORE_BLOCK_VALUES) blocks.push(bytes.subarray(from, from + 2 * SCORE_BLOCK_VALUES));
  await db.query('INSERT INTO answer_score_blocks (at_ms, block, scores) SELECT $1, b - 1, s FROM unnest($2::bytea[]) WITH ORDINALITY AS u (s, b)', [at, blocks]);
}

/**
 * Each VPA's newest record, a page at a time, checked against its row:
 * what a recorder taking over compares with. Stops (HistoryError) once
 * `going()` is false.
 */
export async function* newestRecords(pool: pg.Pool, location: StoreLocation, going: () => boolean = () => true): AsyncGenerator<DecodedStoredRecord[]> {
  let after = '';
  for (;;) {
    if (!going()) throw new HistoryError('the history lease went while the history was being made from the store');
    let rows: { vpa: string; at_ms: string; number: number; record: Buffer }[];
    try {
      ({ rows } = await pool.query(
        `SELECT DISTINCT ON (vpa) vpa, at_ms, number, record FROM answer_changes WHERE vpa > $1 ORDER BY vpa, at_ms DESC LIMIT ${ROWS_PER_STATEMENT}`,
        [after],
      ));
    } catch (error) {
      throw storeError(location, error);
    }
    if (rows.length === 0) return;
    yield rows.map((row) => checkedRecord(location, row));
    after = rows[rows.length - 1]!.vpa;
  }
}

/** The newest column of confidences, whole, or null with none. */
export async function newestColumn(pool: pg.Pool, location: StoreLocation): Promise<{ at: number; scoredAt: number; values: Uint16Array } | null> {
  const where = historyWhere(location);
  try {
    const { rows } = await pool.query<{ at_ms: string; scored_at_ms: string; vpas: number }>('SELECT at_ms, scored_at_ms, vpas FROM answer_score_columns ORDER BY at_ms DESC LIMIT 1');
    const column = rows[0];
    if (column === undefined) return null;
    const values = new Uint16Array(column.vpas);
    const bytes = Buffer.from(values.buffer);
    const blocks = await pool.query<{ block: number; scores: Buffer }>('SELECT block, scores FROM answer_score_blocks WHERE at_ms = $1 ORDER BY block', [column.at_ms]);
    let filled = 0;
    for (const { block, scores } of blocks.rows) {
      const at = block * 2 * SCORE_BLOCK_VALUES;
      if (at !== filled || at + scores.length > bytes.length) throw new HistoryError(`${where}: the column of ${column.at_ms} has blocks that do not make its ${column.vpas} values`);
      scores.copy(bytes, at);
      filled += scores.length;
    }
    if (filled !== bytes.length) throw new HistoryError(`${where}: the column of ${column.at_ms} holds ${filled / 2} of its ${column.vpas} values`);
    if (values.some((value) => value > CONFIDENCE_SCALE && value !== NO_SCORE)) throw new HistoryError(`${where}: the column of ${column.at_ms} holds a value no confidence has`);
    return { at: storeWholeNumber(location, column.at_ms, 'answer_score_columns.at_ms'), scoredAt: storeWholeNumber(location, column.scored_at_ms, 'answer_score_columns.scored_at_ms'), values };
  } catch (error) {
    throw error instanceof StoreError || error instanceof HistoryError ? error : storeError(location, error);
  }
}

/** When the history in the store was last pruned (epoch ms), by any recorder; null if never. */
export async function lastPrunedAt(pool: pg.Pool, location: StoreLocation): Promise<number | null> {
  try {
    const { rows } = await pool.query<{ at_ms: string | null }>('SELECT max(at_ms) AS at_ms FROM answer_prunes');
    const at = rows[0]?.at_ms ?? null;
    return at === null ? null : storeWholeNumber(location, at, 'answer_prunes.at_ms');
  } catch (error) {
    throw error instanceof StoreError ? error : storeError(location, error);
  }
}

/**
 * Drop what no answer at or after `cutoff` (epoch ms) is told from: each
 * VPA's records before its newest before the cutoff, the columns and
 * states before the newest of each before it, and the stretches of
 * recording that ended before it, and records that it was pruned at
 * `now` (lastPrunedAt). Resolves to the records dropped, or null when
 * another prune of the store is under way (nothing done). Each
 * pass is a transaction of its own; once `signal` aborts (the recorder
 * closing), the connection is dropped and the pass under way rolled back.
 */
export async function pruneRecordedHistory(pool: pg.Pool, location: StoreLocation, cutoff: number, signal?: AbortSignal, now = Date.now()): Promise<number | null> {
  const at = Math.floor(cutoff);
  return withPoolClient(pool, location, async (client) => {
    const drop = () => dropConnection(client);
    signal?.addEventListener('abort', drop, { once: true });
    // A pass over a table: minutes at 10M VPAs, longer than the recorder's pool allows a statement.
    const pass = async (text: string, values: readonly number[] = [at]): Promise<number> => {
      await client.query('BEGIN');
      await client.query(`SET LOCAL statement_timeout = ${serverLimit(PRUNE_PASS_WITHIN_MS)}`);
      const { rowCount } = await client.query(answeredWithin(text, values, PRUNE_PASS_WITHIN_MS));
      await client.query('COMMIT');
      return rowCount ?? 0;
    };
    // The passes, once the prune holds the lock.
    const prune = async (): Promise<number> => {
      // Each VPA has at most one record before the cutoff of the last prune that ended: only those with a record
      // since then can have more than one before this cutoff, all but the newest of which go.
      const { rows } = await client.query<{ cutoff_ms: string }>('SELECT cutoff_ms FROM answer_prunes ORDER BY at_ms DESC LIMIT 1');
      const since = rows[0] === undefined ? 0 : storeWholeNumber(location, rows[0].cutoff_ms, 'answer_prunes.cutoff_ms');
      const dropped = await pass(
        `DELETE FROM answer_changes a USING (SELECT vpa, max(at_ms) AS newest FROM answer_changes WHERE at_ms >= $2 AND at_ms < $1 GROUP BY vpa) w
          WHERE a.vpa = w.vpa AND a.at_ms < w.newest`,
        [at, since],
      );
      await pass('DELETE FROM answer_score_columns WHERE at_ms < (SELECT max(at_ms) FROM answer_score_columns WHERE at_ms < $1)');
      await pass('DELETE FROM answer_states WHERE at_ms < (SELECT max(at_ms) FROM answer_states WHERE at_ms < $1)');
      await pass('DELETE FROM answer_recorders r WHERE r.alive_ms < $1 AND NOT EXISTS (SELECT 1 FROM answer_states s WHERE s.term = r.term)');
      await pass('DELETE FROM answer_prunes WHERE at_ms < $1');
      await client.query('INSERT INTO answer_prunes (at_ms, cutoff_ms, dropped) VALUES ($1, $2, $3) ON CONFLICT (at_ms) DO NOTHING', [Math.floor(now), at, dropped]);
      return dropped;
    };
    try {
      if (signal?.aborted === true) throw new Error('the prune was stopped');
      // One prune at a time, whichever follower runs it (a holder whose lease moved may not have seen its stop yet).
      // A prune that fails drops its connection, and the lock with it.
      const lock = `upi-risk answer prune ${location.schema}`;
      const { rows: locked } = await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS got', [lock]);
      if (locked[0]?.got !== true) return null;
      const dropped = await prune();
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lock]);
      return dropped;
    } catch (error) {
      drop();
      throw storeError(location, error);
    } finally {
      signal?.removeEventListener('abort', drop);
    }
  });
}

/**
 * The record of a row, checked whole and against the row's VPA, time and
 * number. A damaged record is the history's (HistoryError: answered 503
 * naming it), as a damaged file is.
 */
function checkedRecord(location: StoreLocation, row: { vpa: string; at_ms: string; number: number; record: Buffer }): DecodedStoredRecord {
  const where = historyWhere(location);
  const record = decodeStoredRecord(row.record, where);
  if (record.key !== row.vpa || record.number !== row.number || record.at !== Number(row.at_ms)) {
    throw new HistoryError(`${where}: the row of ${JSON.stringify(row.vpa)} at ${row.at_ms} holds a record of another VPA, time or number`);
  }
  return { bytes: row.record, record };
}

/** How a damaged row of the history names where it is. */
function historyWhere(location: StoreLocation): string {
  return `the answer history of store schema ${location.schema}`;
}
