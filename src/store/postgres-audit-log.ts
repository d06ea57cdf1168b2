import type pg from 'pg';
import type { AuditAction } from '../access/audit-actions.js';
import { auditRecord, readAuditRecord, type AuditEntry, type AuditLog, type AuditRecord } from '../access/audit-log.js';
import { StoreError, ErrorCode } from '../common/errors.js';
import { storeError, type StoreLocation } from './postgres.js';

/** The fleet's audit log: table `audit_records`, in the order records were appended. */
export class PostgresAuditLog implements AuditLog {
  readonly #pool: pg.Pool;
  readonly #location: StoreLocation;

  constructor(pool: pg.Pool, location: StoreLocation) {
    this.#pool = pool;
    this.#location = location;
  }

  async append(entry: AuditEntry, now = new Date()): Promise<AuditRecord> {
    const record = auditRecord(entry, now);
    try {
      await this.#pool.query('INSERT INTO audit_records (record) VALUES ($1)', [JSON.stringify(record)]);
    } catch (error) {
      throw storeError(this.#location, error);
    }
    return record;
  }

  async recent(limit: number): Promise<AuditRecord[]> {
    let rows: { position: string; record: unknown }[];
    try {
      rows = (await this.#pool.query<{ position: string; record: unknown }>('SELECT position, record FROM audit_records ORDER BY position DESC LIMIT $1', [limit])).rows;
    } catch (error) {
      throw storeError(this.#location, error);
    }
    return rows.map((row) => readAuditRecord(row.record, (why) => new StoreError(ErrorCode.STORE_DATA, `audit record ${row.position}: ${why}`)));
  }

  async holds(action: AuditAction, target: string): Promise<boolean> {
    try {
      const { rows } = await this.#pool.query("SELECT 1 FROM audit_records WHERE record->>'action' = $1 AND record->>'target' = $2 LIMIT 1", [action, target]);
      return rows.length > 0;
    } catch (error) {
      throw storeError(this.#location, error);
    }
  }
}
