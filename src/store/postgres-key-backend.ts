import type pg from 'pg';
import { KeyFileError, UpiRiskError } from '../common/errors.js';
import { byCreation, readKeyRecords, type KeyBackend, type KeyRecord } from '../access/key-record.js';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * Key records in the fleet's PostgreSQL store: table `api_keys` (one row per
 * key, the record as JSON, hashes only) and `keys_version`, a token every
 * change replaces (a token, as with Redis, so a restored database cannot
 * count back to a version a server saw before). A change runs in one
 * transaction holding the row lock of `keys_version`, so writers take turns,
 * and announces itself on the schema's keys channel when it commits.
 */
export class PostgresKeyBackend implements KeyBackend {
  readonly #pool: pg.Pool;
  readonly #location: StoreLocation;

  /** On a pool (storePool), so a server reloading keys gets over a database restart by itself. */
  constructor(pool: pg.Pool, location: StoreLocation) {
    this.#pool = pool;
    this.#location = location;
  }

  get description(): string {
    return `postgres schema ${this.#location.schema}`;
  }

  async read(): Promise<KeyRecord[]> {
    try {
      return this.#parse((await this.#pool.query<{ record: unknown }>('SELECT record FROM api_keys')).rows);
    } catch (error) {
      throw this.#failure(error);
    }
  }

  async update<T>(change: (keys: KeyRecord[]) => { keys: KeyRecord[]; result: T }): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw this.#failure(error);
    }
    try {
      await client.query('BEGIN');
      await client.query('SELECT version FROM keys_version FOR UPDATE');
      const outcome = change(this.#parse((await client.query<{ record: unknown }>('SELECT record FROM api_keys')).rows));
      await client.query('DELETE FROM api_keys');
      if (outcome.keys.length > 0) {
        await client.query('INSERT INTO api_keys (id, record) SELECT * FROM unnest($1::text[], $2::jsonb[])', [
          outcome.keys.map((k) => k.id),
          outcome.keys.map((k) => JSON.stringify(k)),
        ]);
      }
      await client.query('UPDATE keys_version SET version = gen_random_uuid()::text');
      await client.query('SELECT pg_notify($1, $2)', [keysChannel(this.#location), 'changed']);
      await client.query('COMMIT');
      return outcome.result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw this.#failure(error);
    } finally {
      client.release();
    }
  }

  async version(): Promise<string> {
    try {
      return (await this.#pool.query<{ version: string }>('SELECT version FROM keys_version')).rows[0]?.version ?? '0';
    } catch (error) {
      throw this.#failure(error);
    }
  }

  #parse(rows: readonly { record: unknown }[]): KeyRecord[] {
    return readKeyRecords(rows.map((r) => r.record), (why) => new KeyFileError(`${this.description}: ${why}`)).sort(byCreation);
  }

  /** Errors of the change itself (an unknown key id, a bad stored record) pass as they are; the database's become ERR_STORE. */
  #failure(error: unknown): Error {
    return error instanceof UpiRiskError ? error : storeError(this.#location, error);
  }
}

/** The channel on which a key change announces itself. */
export function keysChannel(location: StoreLocation): string {
  return `${location.schema}_keys`;
}
