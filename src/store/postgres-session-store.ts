import type pg from 'pg';
import type { ConsoleSession, SessionStore } from '../access/console-sessions.js';
import { ErrorCode, StoreError } from '../common/errors.js';
import { storeError, type StoreLocation } from './postgres.js';

interface SessionRow {
  token_hash: string;
  key_id: string;
  key_hash: string;
  csrf_token: string;
  created_at: Date;
  expires_at: Date;
}

/** Console sessions in the fleet's store: a session opened on one replica works on all of them. */
export class PostgresSessionStore implements SessionStore {
  readonly #pool: pg.Pool;
  readonly #location: StoreLocation;

  constructor(pool: pg.Pool, location: StoreLocation) {
    this.#pool = pool;
    this.#location = location;
  }

  async save(session: ConsoleSession): Promise<void> {
    await this.#query('DELETE FROM console_sessions WHERE expires_at <= $1', [new Date(session.createdAt)]);
    await this.#query(
      'INSERT INTO console_sessions (token_hash, key_id, key_hash, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [session.tokenHash, session.keyId, session.keyHash, session.csrfToken, new Date(session.createdAt), new Date(session.expiresAt)],
    );
  }

  async find(tokenHash: string, now: number): Promise<ConsoleSession | null> {
    const rows = await this.#query<SessionRow>('SELECT * FROM console_sessions WHERE token_hash = $1 AND expires_at > $2', [tokenHash, new Date(now)]);
    const row = rows[0];
    if (row === undefined) return null;
    const session: ConsoleSession = {
      tokenHash: row.token_hash,
      keyId: row.key_id,
      keyHash: row.key_hash,
      csrfToken: row.csrf_token,
      createdAt: row.created_at.getTime(),
      expiresAt: row.expires_at.getTime(),
    };
    if (!/^[0-9a-f]{64}$/.test(session.keyHash) || !/^[A-Za-z0-9_-]{43}$/.test(session.csrfToken) || !(session.createdAt < session.expiresAt)) {
      throw new StoreError(ErrorCode.STORE_DATA, 'a console session row is not one this service writes');
    }
    return session;
  }

  async remove(tokenHash: string): Promise<void> {
    await this.#query('DELETE FROM console_sessions WHERE token_hash = $1', [tokenHash]);
  }

  async #query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    try {
      return (await this.#pool.query<R>(text, values)).rows;
    } catch (error) {
      throw storeError(this.#location, error);
    }
  }
}
