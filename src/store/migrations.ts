import { readdir, readFile } from 'node:fs/promises';
import type pg from 'pg';
import { ErrorCode, StoreError } from '../common/errors.js';
import { connectStore, schemaIdentifier, storeError, type StoreLocation } from './postgres.js';

/**
 * The store's schema, as numbered plain SQL files in `migrations/`
 * (`0001_<name>.sql`, ...), applied in order, each once, each in a
 * transaction of its own, by `upi-risk migrate`. The table
 * `schema_migrations` records which ran. Every role checks the schema
 * before it uses the store (checkSchema): one newer than this release knows
 * is refused, so an old binary never writes to a schema it does not
 * understand; upgrades run the new release's migrate first.
 */
export const MIGRATIONS_DIR = new URL('../../../migrations/', import.meta.url);

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** The migrations this release carries, in order; their numbers run 1, 2, 3, ... without a gap. */
export async function knownMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  const names = (await readdir(dir)).filter((name) => name.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const [i, name] of names.entries()) {
    const match = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(name);
    if (match === null || Number(match[1]) !== i + 1) throw new Error(`migration file ${name} is not numbered ${String(i + 1).padStart(4, '0')}_<name>.sql`);
    migrations.push({ version: i + 1, name: match[2]!, sql: await readFile(new URL(name, dir), 'utf8') });
  }
  return migrations;
}

export interface MigrationReport {
  /** Versions applied now. */
  readonly applied: readonly number[];
  /** The schema's version afterwards. */
  readonly version: number;
}

/**
 * Create the schema if need be and apply every migration it lacks. Safe to
 * run again, and from several processes at once (they take turns).
 */
export async function migrate(location: StoreLocation, migrations?: readonly Migration[]): Promise<MigrationReport> {
  const known = migrations ?? (await knownMigrations());
  const client = await connectStore(location);
  try {
    const applied: number[] = [];
    await client.query('BEGIN');
    // One migrate at a time per schema, whoever runs it.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`upi-risk migrate ${location.schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schemaIdentifier(location)}`);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    const current = await schemaVersion(client);
    refuseNewer(location, current, known.length);
    await client.query('COMMIT');
    for (const migration of known.filter((m) => m.version > current)) {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`upi-risk migrate ${location.schema}`]);
      // Another migrate may have applied it while this one waited for the lock.
      if ((await schemaVersion(client)) >= migration.version) {
        await client.query('COMMIT');
        continue;
      }
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      await client.query('COMMIT');
      applied.push(migration.version);
    }
    return { applied, version: await schemaVersion(client) };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw storeError(location, error);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Refuse a store whose schema this release cannot use: missing or behind
 * (run `upi-risk migrate`), or ahead (a newer release migrated it). Resolves
 * with the version otherwise.
 */
export async function checkSchema(client: pg.ClientBase | pg.Pool, location: StoreLocation, knownVersion?: number): Promise<number> {
  const known = knownVersion ?? (await knownMigrations()).length;
  let current: number;
  try {
    current = await schemaVersion(client);
  } catch (error) {
    throw storeError(location, error);
  }
  refuseNewer(location, current, known);
  if (current < known) {
    throw new StoreError(ErrorCode.STORE_SCHEMA, `store schema ${location.schema} is at version ${current} of ${known}: run upi-risk migrate --store ... --store-schema ${location.schema}`);
  }
  return current;
}

async function schemaVersion(client: pg.ClientBase | pg.Pool): Promise<number> {
  const exists = await client.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
  if (exists.rows[0]?.present !== true) return 0;
  const result = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
  return result.rows[0]?.version ?? 0;
}

function refuseNewer(location: StoreLocation, current: number, known: number): void {
  if (current > known) {
    throw new StoreError(
      ErrorCode.STORE_SCHEMA,
      `store schema ${location.schema} is at version ${current}, newer than this release knows (${known}): run a release that knows it`,
    );
  }
}
