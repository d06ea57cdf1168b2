import type pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { dropConnection, storeError, type StoreLocation } from './postgres.js';

/** How long a COPY may send nothing before its connection is taken for dead. */
export const STORE_SILENCE_MS = 60_000;

/**
 * Run `sql`, a `COPY ... TO STDOUT`, on `client` and hand each piece of its
 * output to `onPiece` as it arrives; when `onPiece` returns a promise, the
 * next pieces wait for it. A failure of `onPiece` ends the call with it
 * once the rest of the output is read and dropped: a COPY cut off midway
 * would leave the connection unusable. A failure of the COPY is ERR_STORE.
 *
 * A server that sends nothing for `silenceMs` while a piece is awaited (a
 * connection a failover or a firewall left half open, which the kernel
 * takes many minutes to notice) has the connection dropped, and the call
 * fails: the caller's next try opens another.
 */
export async function readCopyOut(
  client: pg.ClientBase,
  location: StoreLocation,
  sql: string,
  onPiece: (piece: Buffer) => Promise<void> | undefined,
  silenceMs = STORE_SILENCE_MS,
): Promise<void> {
  let failed: { readonly error: unknown } | null = null;
  let silent = false;
  try {
    const pieces = (client.query(copyStreams.to(sql)) as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    for (;;) {
      const silence = setTimeout(() => {
        silent = true;
        dropConnection(client);
      }, silenceMs);
      let next: IteratorResult<Buffer>;
      try {
        next = await pieces.next();
      } finally {
        clearTimeout(silence);
      }
      if (next.done === true) break;
      const piece = next.value;
      if (failed !== null) continue;
      try {
        const waiting = onPiece(piece);
        if (waiting !== undefined) await waiting;
      } catch (error) {
        failed = { error };
      }
    }
  } catch (error) {
    throw storeError(location, silent ? new Error(`the store sent nothing for ${silenceMs / 1000} s; the connection is taken for dead`, { cause: error }) : error);
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
  // A connection lost while in use fails what runs on it; the client's own error event must not end the process.
  const lost = () => {};
  client.on('error', lost);
  try {
    const result = await work(client);
    ok = true;
    return result;
  } finally {
    client.off('error', lost);
    client.release(!ok);
  }
}
