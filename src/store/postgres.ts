import pg from 'pg';
import { ConfigError, ErrorCode, messageOf, StoreError } from '../common/errors.js';

/**
 * Where the fleet keeps its shared state: a PostgreSQL database (`--store
 * URL`) and a schema in it (`--store-schema NAME`), so that deployments and
 * tests can share one database.
 */
export interface StoreLocation {
  readonly url: string;
  readonly schema: string;
}

export const DEFAULT_STORE_SCHEMA = 'upi_risk';

/**
 * A schema name the store accepts: lower-case letters, digits and `_`, not
 * starting with a digit, at most 53 characters, so that its channels
 * (`<schema>_snapshots`, the longest suffix) stay within PostgreSQL's 63.
 */
export function checkSchemaName(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,52}$/.test(name)) {
    throw new ConfigError(`--store-schema must be 1 to 53 lower-case letters, digits or "_", not starting with a digit; got ${JSON.stringify(name)}`);
  }
  return name;
}

/** A URL the store accepts: postgres:// or postgresql://. */
export function checkStoreUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`--store must be a URL such as postgres://user@host:5432/db; got ${JSON.stringify(redactStoreUrl(url))}`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new ConfigError(`--store must be a postgres:// URL; got ${JSON.stringify(parsed.protocol)}`);
  }
  return url;
}

/** The URL without its password, for logs and messages. */
export function redactStoreUrl(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}

/** The schema's name quoted as an identifier (it is checked, so quoting is all it needs). */
export function schemaIdentifier(location: StoreLocation): string {
  return `"${checkSchemaName(location.schema)}"`;
}

/**
 * Memory a session may use for its temporary tables (an ingest's input is
 * one) before they spill to disk: taken as needed, up to this. PostgreSQL's
 * 8 MB default put most of a large file's rows on disk twice.
 */
const TEMP_BUFFERS = '256MB';

/**
 * A client connected to the store with the location's schema first on its
 * search path, so statements name tables without a schema. Fails with
 * ERR_STORE when the database cannot be reached.
 */
export async function connectStore(location: StoreLocation): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: location.url, connectionTimeoutMillis: 5_000, application_name: 'upi-risk', ...KEEP_ALIVE });
  try {
    await client.connect();
    await client.query(`SET search_path TO ${schemaIdentifier(location)}`);
    await client.query(`SET temp_buffers = '${TEMP_BUFFERS}'`);
    return client;
  } catch (error) {
    await client.end().catch(() => {});
    throw storeError(location, error);
  }
}

/**
 * A pool of connections to the store, each with the location's schema on
 * its search path, for long-running roles: a connection the server dropped
 * is replaced at the next query, so they recover from an outage by
 * themselves. Transactions take a client of their own (`pool.connect()`).
 */
export function storePool(location: StoreLocation, max = 4, idleInTransactionMs?: number, answerWithinMs?: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: location.url,
    max,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    application_name: 'upi-risk',
    ...KEEP_ALIVE,
    // A statement left unanswered `answerWithinMs` (a connection gone half open) fails instead of waiting on the kernel's
    // timeouts; one merely slow is cancelled by the server a little before, so that it does not go on beyond its caller.
    ...(answerWithinMs === undefined ? {} : { query_timeout: answerWithinMs }),
    // A transaction left idle longer than `idleInTransactionMs` (its client gone quiet, with the locks it holds) is ended by the server.
    options: `-c search_path=${checkSchemaName(location.schema)} -c temp_buffers=${TEMP_BUFFERS}${idleInTransactionMs === undefined ? '' : ` -c idle_in_transaction_session_timeout=${Math.round(idleInTransactionMs)}`}${answerWithinMs === undefined ? '' : ` -c statement_timeout=${serverLimit(answerWithinMs)}`}`,
  });
  // An idle connection that breaks is dropped from the pool; the next query opens another.
  pool.on('error', () => {});
  return pool;
}

/**
 * Close a connection at once, from under whatever waits on it: a query or
 * COPY in flight fails as on a connection the server ended. For one the
 * server stopped answering on (half open), which ending politely would
 * wait on for ever.
 */
export function dropConnection(client: pg.ClientBase): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** The server's `statement_timeout` for statements awaited at most `answerWithinMs`: a tenth sooner, for a slow statement to be cancelled before it is given up on. */
export function serverLimit(answerWithinMs: number): number {
  return Math.max(1, Math.floor(0.9 * answerWithinMs));
}

/**
 * `text` with `values` as a query whose answer is awaited at most `ms`
 * (storePool's `answerWithinMs` is for a pool's other statements):
 * node-postgres reads `query_timeout` from a query's config as from a
 * pool's, though its types do not name it.
 */
export function answeredWithin(text: string, values: readonly unknown[], ms: number): pg.QueryConfig {
  return { text, values: [...values], query_timeout: ms } as pg.QueryConfig;
}

/** TCP keepalive on every connection: an idle connection whose peer is gone is found (after the kernel's probes, about 11 minutes by default) instead of never. */
export const KEEP_ALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 } as const;

/** An error of the store as an ERR_STORE, naming where (without the password). */
export function storeError(location: StoreLocation, error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = messageOf(error);
  return new StoreError(ErrorCode.STORE, `store ${redactStoreUrl(location.url)} (schema ${location.schema}): ${message}`, { cause: error });
}

/** A bigint column's text, as the driver gives it, as a non-negative safe integer; ERR_STORE_DATA naming `what` otherwise. */
export function storeWholeNumber(location: StoreLocation, text: string, what: string): number {
  const value = Number(text);
  if (!/^[0-9]{1,16}$/.test(text) || !Number.isSafeInteger(value)) throw new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: ${what} holds ${JSON.stringify(text)}, not a whole number`);
  return value;
}

/**
 * Whether the connection of backend `pid` (default: the one asking) holds
 * the session advisory lock pg_try_advisory_lock(hashtext(name)) takes: a
 * single bigint key, which pg_locks splits into classid (its high half) and
 * objid (its low half), objsubid 1.
 */
export async function holdsAdvisoryLock(client: pg.ClientBase, name: string, pid?: number): Promise<boolean> {
  const result = await client.query<{ held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = COALESCE($2, pg_backend_pid()) AND objsubid = 1
       AND classid::bigint = ((hashtext($1)::bigint >> 32) & 4294967295) AND objid::bigint = (hashtext($1)::bigint & 4294967295)) AS held`,
    [name, pid ?? null],
  );
  return result.rows[0]?.held === true;
}
