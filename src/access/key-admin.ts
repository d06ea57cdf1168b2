import { ConfigError } from '../common/errors.js';
import { generateApiKey, generateKeyId, hashApiKey } from './api-key.js';
import { DEFAULT_SCOPES, type KeyBackend, type KeyLimits, type KeyRecord, type KeyScope, type PublicKeyRecord } from './key-record.js';

export interface CreateKeyOptions {
  readonly name?: string;
  readonly plan?: string;
  readonly limits?: KeyLimits | null;
  /** What the key may do (default DEFAULT_SCOPES). */
  readonly scopes?: readonly KeyScope[];
  readonly now?: Date;
}

/** Administrative operations on the keys, used by the CLI. */
export class KeyAdmin {
  readonly #backend: KeyBackend;

  constructor(backend: KeyBackend) {
    this.#backend = backend;
  }

  async list(): Promise<PublicKeyRecord[]> {
    return (await this.#backend.read()).map(({ hash: _hash, ...rest }) => rest);
  }

  /** Create a key; returns the key itself, which is not stored anywhere. */
  async create(options: CreateKeyOptions = {}): Promise<{ key: string; record: PublicKeyRecord }> {
    const key = generateApiKey();
    const record: KeyRecord = {
      id: generateKeyId(),
      name: options.name ?? '',
      plan: options.plan ?? 'default',
      scopes: options.scopes ?? DEFAULT_SCOPES,
      limits: options.limits ?? null,
      created_at: (options.now ?? new Date()).toISOString(),
      rotated_at: null,
      revoked_at: null,
      hash: hashApiKey(key),
    };
    await this.#backend.update((keys) => ({ keys: [...keys, record], result: undefined }));
    const { hash: _hash, ...visible } = record;
    return { key, record: visible };
  }

  /** Replace a key's secret; the old key stops working at once. */
  async rotate(id: string, now = new Date()): Promise<{ key: string; record: PublicKeyRecord }> {
    const key = generateApiKey();
    const updated = await this.#backend.update((keys) => {
      const index = this.#find(keys, id);
      const current = keys[index]!;
      if (current.revoked_at !== null) throw new ConfigError(`key ${id} is revoked and cannot be rotated`);
      const next: KeyRecord = { ...current, hash: hashApiKey(key), rotated_at: now.toISOString() };
      keys[index] = next;
      return { keys, result: next };
    });
    const { hash: _hash, ...visible } = updated;
    return { key, record: visible };
  }

  async revoke(id: string, now = new Date()): Promise<PublicKeyRecord> {
    const updated = await this.#backend.update((keys) => {
      const index = this.#find(keys, id);
      const current = keys[index]!;
      const next: KeyRecord = current.revoked_at === null ? { ...current, revoked_at: now.toISOString() } : current;
      keys[index] = next;
      return { keys, result: next };
    });
    const { hash: _hash, ...visible } = updated;
    return visible;
  }

  #find(keys: readonly KeyRecord[], id: string): number {
    const index = keys.findIndex((k) => k.id === id);
    if (index < 0) throw new ConfigError(`no key with id ${JSON.stringify(id)}`);
    return index;
  }
}
