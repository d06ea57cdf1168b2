import { readFile, stat, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { ConfigError, UpiRiskError } from '../common/errors.js';
import { generateApiKey, generateKeyId, hashApiKey } from './api-key.js';
import { ActiveKeys } from './active-keys.js';

/**
 * API key records. The key file (`<data-dir>/keys.json`, mode 0600) holds
 * hashes, never keys. The CLI edits it atomically; a running server polls it
 * and sees created, rotated and revoked keys within a second.
 */
export interface KeyLimits {
  /** Requests allowed in a short burst window (per second). */
  readonly burst: number;
  /** Requests allowed per sustained window. */
  readonly sustained: number;
  /** Sustained window length, seconds. */
  readonly windowSeconds: number;
}

export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  readonly plan: string;
  readonly limits: KeyLimits | null;
  readonly created_at: string;
  readonly rotated_at: string | null;
  readonly revoked_at: string | null;
  readonly hash: string;
}

/** What `keys list --json` prints per key: no hash. */
export type PublicKeyRecord = Omit<KeyRecord, 'hash'>;

interface KeyFile {
  readonly version: 1;
  readonly keys: KeyRecord[];
}

export const KEY_FILE_NAME = 'keys.json';
export const KEY_FILE_VERSION = 1;

export function keyFilePath(dir: DataDir): string {
  return join(dir.root, KEY_FILE_NAME);
}

export class KeyFileError extends UpiRiskError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_KEY_FILE', message, options);
    this.name = 'KeyFileError';
  }
}

/** Read and validate the key file; a missing file is an empty store. */
export async function readKeyFile(path: string): Promise<KeyRecord[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new KeyFileError(`cannot read key file ${path}: ${(error as Error).message}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new KeyFileError(`key file ${path} is not valid JSON`, { cause: error });
  }
  return validateKeyFile(parsed, path).keys;
}

function validateKeyFile(value: unknown, path: string): KeyFile {
  const fail = (why: string) => new KeyFileError(`key file ${path}: ${why}`);
  if (typeof value !== 'object' || value === null) throw fail('not an object');
  const file = value as Record<string, unknown>;
  if (file.version !== KEY_FILE_VERSION) throw fail(`unsupported version ${JSON.stringify(file.version)} (this build reads ${KEY_FILE_VERSION})`);
  if (!Array.isArray(file.keys)) throw fail('"keys" is not an array');
  validateKeyRecords(file.keys, fail);
  return file as unknown as KeyFile;
}

/** Check stored key records wherever they come from (file or Redis); throws what `fail` makes. */
export function validateKeyRecords(records: readonly unknown[], fail: (why: string) => Error): asserts records is KeyRecord[] {
  const ids = new Set<string>();
  for (const [i, k] of records.entries()) {
    const r = k as Record<string, unknown>;
    const where = `keys[${i}]`;
    if (typeof r !== 'object' || r === null) throw fail(`${where} is not an object`);
    if (typeof r.id !== 'string' || !/^key_[0-9a-f]{12}$/.test(r.id)) throw fail(`${where}.id is not a key id`);
    if (ids.has(r.id)) throw fail(`${where}.id ${r.id} is repeated`);
    ids.add(r.id);
    if (typeof r.hash !== 'string' || !/^[0-9a-f]{64}$/.test(r.hash)) throw fail(`${where}.hash is not a SHA-256 hex digest`);
    if (typeof r.name !== 'string' || typeof r.plan !== 'string') throw fail(`${where} needs string name and plan`);
    if (typeof r.created_at !== 'string') throw fail(`${where}.created_at is missing`);
    for (const field of ['rotated_at', 'revoked_at'] as const) {
      if (r[field] !== null && typeof r[field] !== 'string') throw fail(`${where}.${field} must be a string or null`);
    }
    if (r.limits !== null) {
      const l = r.limits as Record<string, unknown>;
      if (typeof l !== 'object' || l === null || !isPositiveInt(l.burst) || !isPositiveInt(l.sustained) || !isPositiveInt(l.windowSeconds)) {
        throw fail(`${where}.limits must be null or {burst, sustained, windowSeconds} positive integers`);
      }
    }
  }
}

function isPositiveInt(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

async function writeKeyFile(path: string, keys: readonly KeyRecord[]): Promise<void> {
  const file: KeyFile = { version: KEY_FILE_VERSION, keys: [...keys] };
  await writeFileAtomic(path, Buffer.from(JSON.stringify(file, null, 2) + '\n'), 0o600);
  // The mode given at creation is subject to the umask; make sure.
  await chmod(path, 0o600);
}

/**
 * Where key records live: the key file (one process or host) or Redis
 * (several replicas). The registry polls `version` and reloads on change.
 */
export interface KeyBackend {
  readonly description: string;
  read(): Promise<KeyRecord[]>;
  /** Read, change and write back as one step with respect to other writers. */
  update<T>(change: (keys: KeyRecord[]) => { keys: KeyRecord[]; result: T }): Promise<T>;
  /** A token that changes whenever the keys change; cheap to ask. */
  version(): Promise<string>;
}

export class FileKeyBackend implements KeyBackend {
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  get description(): string {
    return this.#path;
  }

  read(): Promise<KeyRecord[]> {
    return readKeyFile(this.#path);
  }

  async update<T>(change: (keys: KeyRecord[]) => { keys: KeyRecord[]; result: T }): Promise<T> {
    const { keys, result } = change(await readKeyFile(this.#path));
    await writeKeyFile(this.#path, keys);
    return result;
  }

  version(): Promise<string> {
    return stat(this.#path).then(
      (s) => `${s.size}:${s.mtimeMs}:${s.ino}`,
      () => 'missing',
    );
  }
}

export interface CreateKeyOptions {
  readonly name?: string;
  readonly plan?: string;
  readonly limits?: KeyLimits | null;
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

/**
 * The server's view of the keys: the active keys (ActiveKeys), replaced
 * whole when the backend's version changes.
 */
export class KeyRegistry {
  readonly #active = new ActiveKeys();
  readonly #backend: KeyBackend;
  #signature = '';
  #timer: NodeJS.Timeout | null = null;
  #onError: (error: Error) => void;
  readonly #listeners: ((records: readonly KeyRecord[]) => void)[] = [];

  constructor(backend: KeyBackend, onError: (error: Error) => void = () => {}) {
    this.#backend = backend;
    this.#onError = onError;
  }

  /** Called with the active records after every reload that changed them (worker threads get them this way). */
  onChange(listener: (records: readonly KeyRecord[]) => void): void {
    this.#listeners.push(listener);
  }

  /** The active records now. */
  records(): KeyRecord[] {
    return this.#active.records();
  }

  get size(): number {
    return this.#active.size;
  }

  /** The active (not revoked) key record for a presented key, or null. */
  verify(presentedKey: string): KeyRecord | null {
    return this.#active.verify(presentedKey);
  }

  /** Load the file now; later changes are picked up by `watch`. Throws on an invalid file at start-up. */
  async load(): Promise<void> {
    await this.#reload(true);
  }

  /** Re-read the file whenever its size or modification time changes; `intervalMs` bounds the delay. */
  watch(intervalMs = 250): void {
    const tick = () => {
      this.#reload(false)
        .catch((error: Error) => this.#onError(error))
        .finally(() => {
          if (this.#timer !== null) this.#timer = setTimeout(tick, intervalMs).unref();
        });
    };
    this.#timer = setTimeout(tick, intervalMs).unref();
  }

  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  async #reload(force: boolean): Promise<void> {
    const signature = await this.#backend.version();
    if (!force && signature === this.#signature) return;
    // A bad file (edited by hand, say) or an unreachable store keeps the previous keys in force rather than locking everyone out.
    this.#active.replace(await this.#backend.read());
    this.#signature = signature;
    const active = this.#active.records();
    for (const listener of this.#listeners) listener(active);
  }
}
