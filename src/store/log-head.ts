import type pg from 'pg';
import { ErrorCode, StoreError } from '../common/errors.js';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * The evidence log's head (log_head, one row): evidence and corrections take
 * their positions under its row lock, held until their transaction commits,
 * so that positions commit in order (evidence-log.ts).
 *
 * A writer answering an HTTP request waits for the lock at most
 * HEAD_WAIT_MS: behind a CLI ingest of millions of lines it would wait
 * minutes, and its caller and a pooled connection with it. The CLI waits
 * as long as it takes.
 */
export const HEAD_WAIT_MS = 5_000;

/** PostgreSQL's lock_not_available, what a lock wait past lock_timeout fails with. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Lock the head until the running transaction ends and return its
 * position. With `waitMs`, waiting longer for the lock is an ERR_STORE that
 * says so (nothing was written); the bound covers this lock alone.
 */
export async function lockLogHead(client: pg.ClientBase, location: StoreLocation, waitMs: number | null): Promise<number> {
  let row: { position: string } | undefined;
  try {
    if (waitMs !== null) await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(waitMs))}`);
    row = (await client.query<{ position: string }>('SELECT position FROM log_head FOR UPDATE')).rows[0];
    if (waitMs !== null) await client.query('SET LOCAL lock_timeout TO DEFAULT');
  } catch (error) {
    if ((error as { code?: unknown }).code === LOCK_NOT_AVAILABLE) {
      throw new StoreError(
        ErrorCode.STORE,
        `the evidence log is being written by another ingest or correction, which held it for over ${waitMs! / 1000} s; nothing was stored, try again`,
        { cause: error },
      );
    }
    throw storeError(location, error);
  }
  const position = Number(row?.position);
  if (row === undefined || !Number.isSafeInteger(position) || position < 0) {
    throw new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: log_head ${row === undefined ? 'has no row' : 'is not a whole number'}`);
  }
  return position;
}
