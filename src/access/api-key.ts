import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API key material. A key is `upirisk_` + 43 base64url characters (256 random
 * bits): the prefix makes leaked keys easy to recognise (secret scanners,
 * logs). Only the SHA-256 of a key is ever stored.
 */
export const KEY_PREFIX = 'upirisk_';
const KEY_PATTERN = /^upirisk_[A-Za-z0-9_-]{43}$/;

export function generateApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export function isApiKeyShape(text: string): boolean {
  return KEY_PATTERN.test(text);
}

/** Hex SHA-256 of a presented key: the only form in which keys are stored or looked up. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * Compare two key hashes in constant time. Lookups go by hash (a map keyed
 * by SHA-256 output reveals nothing about how close a guess was); this
 * confirms the match without an early-exit comparison.
 */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Short public id of a key record (not secret): `key_` + 12 hex characters. */
export function generateKeyId(): string {
  return `key_${randomBytes(6).toString('hex')}`;
}
