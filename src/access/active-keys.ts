import { hashApiKey, sameHash } from './api-key.js';
import type { KeyRecord } from './key-record.js';

/** Verified keys remembered at most; past this the memory is dropped and rebuilt (only by real keys). */
const MAX_REMEMBERED = 10_000;

/**
 * The active (not revoked) keys and the one way to check a presented key.
 * The server's registry keeps one, refreshed from the store; the serving
 * threads of `serve --threads N` keep one each, refreshed by the main thread.
 *
 * A key is found by its SHA-256, then confirmed in constant time. A key that
 * verified is remembered by its text, so the hash runs once per key, not on
 * every request: only keys that verified are remembered (guesses cannot fill
 * it), and the memory is dropped whenever the key set changes, so a revoked
 * or rotated key stops working at once.
 */
export class ActiveKeys {
  #byHash = new Map<string, KeyRecord>();
  #verified = new Map<string, KeyRecord>();
  #ids = new Set<string>();

  replace(records: readonly KeyRecord[]): void {
    this.#byHash = new Map(records.filter((r) => r.revoked_at === null).map((r) => [r.hash, r]));
    this.#ids = new Set([...this.#byHash.values()].map((r) => r.id));
    this.#verified = new Map();
  }

  /** Whether the key with this id is active (rotation keeps a key's id). */
  hasId(id: string): boolean {
    return this.#ids.has(id);
  }

  verify(presentedKey: string): KeyRecord | null {
    const known = this.#verified.get(presentedKey);
    if (known !== undefined) return known;
    const hash = hashApiKey(presentedKey);
    const record = this.#byHash.get(hash);
    if (record === undefined || !sameHash(record.hash, hash)) return null;
    if (this.#verified.size >= MAX_REMEMBERED) this.#verified.clear();
    this.#verified.set(presentedKey, record);
    return record;
  }

  records(): KeyRecord[] {
    return [...this.#byHash.values()];
  }

  get size(): number {
    return this.#byHash.size;
  }
}
