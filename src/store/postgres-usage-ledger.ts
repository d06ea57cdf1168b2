import type pg from 'pg';
import { HOUR_MS, KEPT_HOURS, type KeyUsage, type UsageEntry, type UsageLedger } from '../access/key-usage.js';
import { ErrorCode, StoreError } from '../common/errors.js';
import { storeError, type StoreLocation } from './postgres.js';

/** A row of the usage query: sums arrive as text, null when no hour is in range. */
interface UsageRow {
  readonly key_id: string;
  readonly requests: string | null;
  readonly limited: string | null;
  readonly last_used_at: Date | null;
}

/** Key usage in the fleet's store: every replica adds its counts to the same hourly rows. */
export class PostgresUsageLedger implements UsageLedger {
  readonly #pool: pg.Pool;
  readonly #location: StoreLocation;

  constructor(pool: pg.Pool, location: StoreLocation) {
    this.#pool = pool;
    this.#location = location;
  }

  async add(entries: readonly UsageEntry[], at: number): Promise<void> {
    if (entries.length === 0) return;
    const hour = new Date(at - (at % HOUR_MS));
    try {
      await this.#pool.query(
        `INSERT INTO key_usage (key_id, hour, requests, limited, last_used_at)
           SELECT id, $4, r, l, CASE WHEN r > 0 THEN $5::timestamptz END FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(id, r, l)
         ON CONFLICT (key_id, hour) DO UPDATE SET
           requests = key_usage.requests + EXCLUDED.requests,
           limited = key_usage.limited + EXCLUDED.limited,
           last_used_at = GREATEST(key_usage.last_used_at, EXCLUDED.last_used_at)`,
        [entries.map((e) => e[0]), entries.map((e) => e[1]), entries.map((e) => e[2]), hour, new Date(at)],
      );
      await this.#pool.query('DELETE FROM key_usage WHERE hour <= $1', [new Date(hour.getTime() - KEPT_HOURS * HOUR_MS)]);
    } catch (error) {
      throw storeError(this.#location, error);
    }
  }

  async since(from: number): Promise<Map<string, KeyUsage>> {
    let rows: UsageRow[];
    try {
      rows = (
        await this.#pool.query<UsageRow>(
          `SELECT key_id,
                  sum(requests) FILTER (WHERE hour >= $1) AS requests,
                  sum(limited) FILTER (WHERE hour >= $1) AS limited,
                  max(last_used_at) AS last_used_at
             FROM key_usage GROUP BY key_id`,
          [new Date(from - (from % HOUR_MS))],
        )
      ).rows;
    } catch (error) {
      throw storeError(this.#location, error);
    }
    const out = new Map<string, KeyUsage>();
    for (const row of rows) {
      const requests = Number(row.requests ?? 0);
      const limited = Number(row.limited ?? 0);
      if (!Number.isSafeInteger(requests) || !Number.isSafeInteger(limited) || limited > requests) {
        throw new StoreError(ErrorCode.STORE_DATA, `key usage of ${row.key_id} is not counts this service writes`);
      }
      out.set(row.key_id, { requests, limited, lastUsedAt: row.last_used_at === null ? null : row.last_used_at.getTime() });
    }
    return out;
  }

  async flush(): Promise<void> {}
}
