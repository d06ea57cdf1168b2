import { randomBytes, timingSafeEqual } from 'node:crypto';
import { hashApiKey } from './api-key.js';
import type { KeyRecord } from './key-record.js';

/**
 * Console sessions: an `admin` key presented once at sign-in is exchanged
 * for a random token carried in a cookie. The server keeps the token's
 * SHA-256 and a CSRF token the console sends back on every change. A
 * session holds the hash of the key it was opened with, so rotating,
 * revoking or narrowing that key ends it.
 */
export interface ConsoleSession {
  /** SHA-256 hex of the cookie's token: the only form the token is kept in. */
  readonly tokenHash: string;
  readonly keyId: string;
  /** The key's hash when the session was opened. */
  readonly keyHash: string;
  readonly csrfToken: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** Where sessions live: this process (MemorySessionStore) or the fleet's store (every replica sees them). */
export interface SessionStore {
  save(session: ConsoleSession): Promise<void>;
  /** The unexpired session with this token hash, or null. */
  find(tokenHash: string, now: number): Promise<ConsoleSession | null>;
  remove(tokenHash: string): Promise<void>;
}

/** `__Host-`: the browser keeps it only if Secure, for this host, with Path=/ (RFC 6265bis). */
export const SESSION_COOKIE = '__Host-upi_risk_session';
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;
/** 256 random bits, base64url: 43 characters. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function openSession(key: KeyRecord, now: number): { token: string; session: ConsoleSession } {
  const token = randomBytes(32).toString('base64url');
  return {
    token,
    session: {
      tokenHash: hashApiKey(token),
      keyId: key.id,
      keyHash: key.hash,
      csrfToken: randomBytes(32).toString('base64url'),
      createdAt: now,
      expiresAt: now + SESSION_TTL_MS,
    },
  };
}

/** Whether a session still stands for its key: the key active, unchanged since sign-in and still `admin`. */
export function sessionHolds(session: ConsoleSession, key: KeyRecord | undefined, now: number): key is KeyRecord {
  return key !== undefined && now < session.expiresAt && key.revoked_at === null && key.hash === session.keyHash && key.scopes.includes('admin');
}

/** The session token in a Cookie header, or null when there is none of the right shape. */
export function sessionTokenOf(cookieHeader: string): string | null {
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    return TOKEN_PATTERN.test(value) ? value : null;
  }
  return null;
}

/** The Set-Cookie value that hands a session to the browser. */
export function sessionCookie(token: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; Secure; SameSite=Strict`;
}

/** The Set-Cookie value that makes the browser forget the session. */
export const CLEARED_SESSION_COOKIE = `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict`;

/** Compare a presented CSRF token with the session's in constant time. */
export function sameCsrfToken(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Sessions of this process: they end with it (a single server; a fleet keeps them in the store). */
export class MemorySessionStore implements SessionStore {
  readonly #sessions = new Map<string, ConsoleSession>();

  async save(session: ConsoleSession): Promise<void> {
    for (const [hash, s] of this.#sessions) if (s.expiresAt <= session.createdAt) this.#sessions.delete(hash);
    this.#sessions.set(session.tokenHash, session);
  }

  async find(tokenHash: string, now: number): Promise<ConsoleSession | null> {
    const session = this.#sessions.get(tokenHash);
    return session !== undefined && now < session.expiresAt ? session : null;
  }

  async remove(tokenHash: string): Promise<void> {
    this.#sessions.delete(tokenHash);
  }
}
