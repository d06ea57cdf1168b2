/**
 * API key records, wherever they are kept (the key file, Redis), and the
 * interface of a place that keeps them. Records hold hashes, never keys.
 */
export interface KeyLimits {
  /** Requests allowed in a short burst window (per second). */
  readonly burst: number;
  /** Requests allowed per sustained window. */
  readonly sustained: number;
  /** Sustained window length, seconds. */
  readonly windowSeconds: number;
}

/**
 * The largest limits a key or a plan may set, wherever they come from (the
 * CLI, the admin API, a key record, the plans file): far above any caller's
 * need, and small enough that the windows' counts and reset times stay
 * exact whole numbers.
 */
export const MAX_KEY_LIMITS: KeyLimits = { burst: 10_000_000, sustained: 1_000_000_000, windowSeconds: 31 * 86_400 };

/** Why `raw` is not KeyLimits of whole numbers from 1 to MAX_KEY_LIMITS, or null when it is. */
export function keyLimitsProblem(raw: unknown): string | null {
  if (typeof raw !== 'object' || raw === null) return 'must be an object {burst, sustained, windowSeconds}';
  const r = raw as Record<string, unknown>;
  for (const field of ['burst', 'sustained', 'windowSeconds'] as const) {
    const value = r[field];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_KEY_LIMITS[field]) return `${field} must be a whole number from 1 to ${MAX_KEY_LIMITS[field]}`;
  }
  return null;
}

/**
 * What a key may do: `screen` the spec's lookups (single, batch, cluster),
 * watchlists, disputes and reports; `ingest` send evidence; `admin` manage
 * keys, read the figures and review disputes and reports.
 */
export const KEY_SCOPES = ['screen', 'ingest', 'admin'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];
/** A key created without scopes, or stored before keys had them, screens. */
export const DEFAULT_SCOPES: readonly KeyScope[] = ['screen'];

/** Scopes from a comma-separated list (`keys create --scopes`), each once, in KEY_SCOPES order; throws what `fail` makes. */
export function parseScopes(text: string, fail: (why: string) => Error): KeyScope[] {
  const named = text.split(',').map((s) => s.trim());
  const unknown = named.filter((s) => !(KEY_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0 || named.length === 0) {
    throw fail(`unknown scope ${JSON.stringify(unknown[0] ?? text)}: scopes are ${KEY_SCOPES.join(', ')}, comma-separated`);
  }
  return KEY_SCOPES.filter((s) => named.includes(s));
}

export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  readonly plan: string;
  /** What the key may do (at least one scope; records stored without scopes read as DEFAULT_SCOPES). */
  readonly scopes: readonly KeyScope[];
  readonly limits: KeyLimits | null;
  readonly created_at: string;
  readonly rotated_at: string | null;
  readonly revoked_at: string | null;
  readonly hash: string;
}

/** What `keys list --json` prints per key: no hash. */
export type PublicKeyRecord = Omit<KeyRecord, 'hash'>;

/**
 * Check stored key records wherever they come from (file or Redis), and
 * give records stored before keys had scopes the default ones; throws what
 * `fail` makes.
 */
export function readKeyRecords(records: readonly unknown[], fail: (why: string) => Error): KeyRecord[] {
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
    const limitsProblem = r.limits === null ? null : keyLimitsProblem(r.limits);
    if (limitsProblem !== null) throw fail(`${where}.limits must be null, or its ${limitsProblem}`);
    if (r.scopes !== undefined) {
      const scopes = r.scopes;
      if (!Array.isArray(scopes) || scopes.length === 0 || scopes.some((s) => !(KEY_SCOPES as readonly unknown[]).includes(s)) || new Set(scopes).size !== scopes.length) {
        throw fail(`${where}.scopes must be a list of distinct scopes from ${KEY_SCOPES.join(', ')}`);
      }
    }
  }
  return (records as (Omit<KeyRecord, 'scopes'> & { scopes?: readonly KeyScope[] })[]).map((r) => (r.scopes === undefined ? { ...r, scopes: DEFAULT_SCOPES } : (r as KeyRecord)));
}

/** Creation order, then id: how a store without an order of its own lists keys, so listings are stable. */
export function byCreation(a: KeyRecord, b: KeyRecord): number {
  return a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
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
