import { hashApiKey, sameHash } from './api-key.js';
import type { KeyRecord } from './key-store.js';

/**
 * Keys handed over by another thread: the serving threads of `serve
 * --threads N` get the active records from the main thread's registry
 * whenever they change, instead of each watching the store.
 */
export class StaticKeys {
  #byHash = new Map<string, KeyRecord>();

  replace(records: readonly KeyRecord[]): void {
    this.#byHash = new Map(records.map((r) => [r.hash, r]));
  }

  verify(presentedKey: string): KeyRecord | null {
    const hash = hashApiKey(presentedKey);
    const record = this.#byHash.get(hash);
    return record !== undefined && sameHash(record.hash, hash) ? record : null;
  }
}
