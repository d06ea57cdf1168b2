import type pg from 'pg';
import { ErrorCode, StoreError } from '../common/errors.js';
import { storeError, storePool, type StoreLocation } from '../store/postgres.js';
import { readDispute, readReport, type Dispute, type OwnedRecord, type Report } from './dispute-records.js';
import type { DisputeStore, RecordFilter, RecordPage } from './dispute-store.js';

/** Connections of the store's own: a change holds one while its work (a clearance, an ingest) runs elsewhere. */
const POOL_SIZE = 4;
/** Tries of an open that finds an open dispute gone (resolved) between its insert and its read. */
const OPEN_TRIES = 3;

/** One of the two tables (migrations/0006_disputes.sql), with how its rows are read back. */
interface Table<R extends OwnedRecord> {
  readonly name: 'disputes' | 'reports';
  readonly read: (value: unknown, fail: (why: string) => Error) => R;
}
const DISPUTES: Table<Dispute> = { name: 'disputes', read: readDispute };
const REPORTS: Table<Report> = { name: 'reports', read: readReport };

/**
 * The fleet's disputes and reports: tables `disputes` and `reports` of the
 * store, which every follower reads and writes, so any follower answers
 * any request. A partial unique index keeps one open dispute per key and
 * VPA; a change holds its row (SELECT ... FOR UPDATE) while it runs, so
 * two followers never decide the same dispute or report.
 */
export class PostgresDisputeStore implements DisputeStore {
  readonly #pool: pg.Pool;
  readonly #location: StoreLocation;

  constructor(location: StoreLocation) {
    this.#location = location;
    this.#pool = storePool(location, POOL_SIZE);
  }

  async openDispute(dispute: Dispute): Promise<Dispute> {
    for (let tries = 0; tries < OPEN_TRIES; tries++) {
      const inserted = await this.#query(
        "INSERT INTO disputes (id, owner, upi, status, record) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (owner, upi) WHERE status = 'OPEN' DO NOTHING",
        [dispute.id, dispute.owner, dispute.upi, dispute.status, JSON.stringify(dispute)],
      );
      if (inserted.rowCount === 1) return dispute;
      const open = await this.#query<{ id: string; record: unknown }>("SELECT id, record FROM disputes WHERE owner = $1 AND upi = $2 AND status = 'OPEN'", [dispute.owner, dispute.upi]);
      const row = open.rows[0];
      if (row !== undefined) return this.#read(DISPUTES, row);
    }
    throw storeError(this.#location, new Error(`the open dispute of ${dispute.upi} kept changing`));
  }

  dispute(id: string): Promise<Dispute | null> {
    return this.#get(DISPUTES, id);
  }

  disputes(filter: RecordFilter, cursor: string | null, limit: number): Promise<RecordPage<Dispute>> {
    return this.#page(DISPUTES, filter, cursor, limit);
  }

  changeDispute(id: string, change: (current: Dispute) => Promise<Dispute>): Promise<Dispute | null> {
    return this.#change(DISPUTES, id, change);
  }

  async addReport(report: Report, idempotencyKey: string | null = null): Promise<Report> {
    const inserted = await this.#query(
      'INSERT INTO reports (id, owner, upi, status, record, idempotency_key) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING',
      [report.id, report.owner, report.upi, report.status, JSON.stringify(report), idempotencyKey],
    );
    if (inserted.rowCount === 1) return report;
    // Only a report with the same Idempotency-Key stops the insert, and reports are never removed: it is there.
    const stored = await this.reportByIdempotencyKey(report.owner, idempotencyKey!);
    if (stored === null) throw storeError(this.#location, new Error(`the report of Idempotency-Key ${JSON.stringify(idempotencyKey)} was not found after its insert was refused`));
    return stored;
  }

  async reportByIdempotencyKey(owner: string, idempotencyKey: string): Promise<Report | null> {
    const rows = (await this.#query<{ id: string; record: unknown }>('SELECT id, record FROM reports WHERE owner = $1 AND idempotency_key = $2', [owner, idempotencyKey])).rows;
    return rows[0] === undefined ? null : this.#read(REPORTS, rows[0]);
  }

  report(id: string): Promise<Report | null> {
    return this.#get(REPORTS, id);
  }

  reports(filter: RecordFilter, cursor: string | null, limit: number): Promise<RecordPage<Report>> {
    return this.#page(REPORTS, filter, cursor, limit);
  }

  changeReport(id: string, change: (current: Report) => Promise<Report>): Promise<Report | null> {
    return this.#change(REPORTS, id, change);
  }

  async close(): Promise<void> {
    await this.#pool.end().catch(() => {});
  }

  async #get<R extends OwnedRecord>(table: Table<R>, id: string): Promise<R | null> {
    const rows = (await this.#query<{ id: string; record: unknown }>(`SELECT id, record FROM ${table.name} WHERE id = $1`, [id])).rows;
    return rows[0] === undefined ? null : this.#read(table, rows[0]);
  }

  async #page<R extends OwnedRecord>(table: Table<R>, filter: RecordFilter, cursor: string | null, limit: number): Promise<RecordPage<R>> {
    const rows = (
      await this.#query<{ id: string; record: unknown }>(
        `SELECT id, record FROM ${table.name} WHERE ($1::text IS NULL OR owner = $1) AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR id < $3) ORDER BY id DESC LIMIT $4`,
        [filter.owner, filter.status, cursor, limit + 1],
      )
    ).rows;
    const items = rows.slice(0, limit).map((row) => this.#read(table, row));
    return { items, next: rows.length > limit ? items.at(-1)!.id : null };
  }

  /** In one transaction holding the row: read it, run `change`, write what it gives. What `change` throws is thrown as it is. */
  async #change<R extends OwnedRecord>(table: Table<R>, id: string, change: (current: R) => Promise<R>): Promise<R | null> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw storeError(this.#location, error);
    }
    const query = async <Row extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<Row>> => {
      try {
        return await client.query<Row>(text, values);
      } catch (error) {
        throw storeError(this.#location, error);
      }
    };
    try {
      await query('BEGIN');
      const rows = (await query<{ id: string; record: unknown }>(`SELECT id, record FROM ${table.name} WHERE id = $1 FOR UPDATE`, [id])).rows;
      if (rows[0] === undefined) {
        await query('ROLLBACK');
        return null;
      }
      const current = this.#read(table, rows[0]);
      const next = await change(current);
      if (next.id !== id || next.owner !== current.owner) throw new Error(`a change of ${id} gave another record`);
      await query(`UPDATE ${table.name} SET status = $2, record = $3 WHERE id = $1`, [id, next.status, JSON.stringify(next)]);
      await query('COMMIT');
      return next;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  #read<R extends OwnedRecord>(table: Table<R>, row: { id: string; record: unknown }): R {
    return table.read(row.record, (why) => new StoreError(ErrorCode.STORE_DATA, `${table.name} row ${row.id}: ${why}`));
  }

  async #query<Row extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<Row>> {
    try {
      return await this.#pool.query<Row>(text, values);
    } catch (error) {
      throw storeError(this.#location, error);
    }
  }
}
