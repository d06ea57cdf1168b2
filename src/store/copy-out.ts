import type pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * Run `sql`, a `COPY ... TO STDOUT`, on `client` and hand each piece of its
 * output to `onPiece` as it arrives; when `onPiece` returns a promise, the
 * next pieces wait for it. A failure of `onPiece` ends the call with it
 * once the rest of the output is read and dropped: a COPY cut off midway
 * would leave the connection unusable. A failure of the COPY is ERR_STORE.
 */
export async function readCopyOut(client: pg.ClientBase, location: StoreLocation, sql: string, onPiece: (piece: Buffer) => Promise<void> | undefined): Promise<void> {
  let failed: { readonly error: unknown } | null = null;
  try {
    for await (const piece of client.query(copyStreams.to(sql)) as AsyncIterable<Buffer>) {
      if (failed !== null) continue;
      try {
        const waiting = onPiece(piece);
        if (waiting !== undefined) await waiting;
      } catch (error) {
        failed = { error };
      }
    }
  } catch (error) {
    throw storeError(location, error);
  }
  if (failed !== null) throw failed.error;
}

/** A connection of `pool` for `work`, released when it is done, and closed rather than reused when `work` failed. */
export async function withPoolClient<T>(pool: pg.Pool, location: StoreLocation, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw storeError(location, error);
  }
  let ok = false;
  try {
    const result = await work(client);
    ok = true;
    return result;
  } finally {
    client.release(!ok);
  }
}
