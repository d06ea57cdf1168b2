import { ConfigError, UnknownKeyError } from '../common/errors.js';
import { generateApiKey, generateKeyId, hashApiKey } from './api-key.js';
import { CLI_ACTOR, type AuditActor, type AuditLog } from './audit-log.js';
import { DEFAULT_SCOPES, type KeyBackend, type KeyLimits, type KeyRecord, type KeyScope, type PublicKeyRecord } from './key-record.js';

export interface CreateKeyOptions {
  readonly name?: string;
  readonly plan?: string;
  readonly limits?: KeyLimits | null;
  /** What the key may do (default DEFAULT_SCOPES). */
  readonly scopes?: readonly KeyScope[];
  readonly now?: Date;
}

/** Who asks for a change, and when: the audit record's actor and time. */
export interface ChangeContext {
  readonly actor?: AuditActor;
  readonly now?: Date;
}

/** A key name: what `keys create --name` and the console accept. */
export const MAX_KEY_NAME_LENGTH = 200;
/** A plan name: letters, digits, ".", "_" or "-". */
export const PLAN_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Administrative operations on the keys, used by the CLI and the admin API.
 * Every change is written to the audit log, when there is one, once it is
 * stored. A change whose audit entry cannot be written is undone and the
 * failure thrown (nothing changed, nothing to audit), except a revocation:
 * a key revoked stays revoked, and the failure is thrown for the caller's
 * log. Revoking it again then writes the entry that is missing.
 */
export class KeyAdmin {
  readonly #backend: KeyBackend;
  readonly #audit: AuditLog | null;

  constructor(backend: KeyBackend, audit: AuditLog | null = null) {
    this.#backend = backend;
    this.#audit = audit;
  }

  async list(): Promise<PublicKeyRecord[]> {
    return (await this.#backend.read()).map(visible);
  }

  /** Create a key; returns the key itself, which is not stored anywhere. */
  async create(options: CreateKeyOptions & ChangeContext = {}): Promise<{ key: string; record: PublicKeyRecord }> {
    const key = generateApiKey();
    const now = options.now ?? new Date();
    const record: KeyRecord = {
      id: generateKeyId(),
      name: options.name ?? '',
      plan: options.plan ?? 'default',
      scopes: options.scopes ?? DEFAULT_SCOPES,
      limits: options.limits ?? null,
      created_at: now.toISOString(),
      rotated_at: null,
      revoked_at: null,
      hash: hashApiKey(key),
    };
    await this.#backend.update((keys) => ({ keys: [...keys, record], result: undefined }));
    // Undone: an active key whose secret nobody was given, and no record of it.
    await this.#recordOrUndo(options, 'key.created', record.id, { name: record.name, plan: record.plan, scopes: record.scopes }, now, () =>
      this.#backend.update((keys) => ({ keys: keys.filter((k) => k.id !== record.id), result: undefined })),
    );
    return { key, record: visible(record) };
  }

  /** Replace a key's secret; the old key stops working at once. */
  async rotate(id: string, context: ChangeContext = {}): Promise<{ key: string; record: PublicKeyRecord }> {
    const key = generateApiKey();
    const now = context.now ?? new Date();
    let before: KeyRecord | null = null;
    const updated = await this.#change(id, (current) => {
      if (current.revoked_at !== null) throw new ConfigError(`key ${id} is revoked and cannot be rotated`);
      before = current;
      return { ...current, hash: hashApiKey(key), rotated_at: now.toISOString() };
    });
    // Undone: the holder keeps the secret that works, rather than losing it for one nobody was given.
    await this.#recordOrUndo(context, 'key.rotated', id, {}, now, () => this.#restore(updated, before!));
    return { key, record: visible(updated) };
  }

  async revoke(id: string, context: ChangeContext = {}): Promise<PublicKeyRecord> {
    const now = context.now ?? new Date();
    let changed = false;
    const updated = await this.#change(id, (current) => {
      changed = current.revoked_at === null;
      return changed ? { ...current, revoked_at: now.toISOString() } : current;
    });
    if (changed) await this.#record(context, 'key.revoked', id, {}, now);
    // A revocation whose entry the audit log could not take: recorded now, with when it took effect.
    else if (updated.revoked_at !== null && this.#audit !== null && !(await this.#audit.holds('key.revoked', id))) {
      await this.#record(context, 'key.revoked', id, { revoked_at: updated.revoked_at, recorded_late: true }, now);
    }
    return visible(updated);
  }

  /** Put a key on another plan; its quotas follow at once. */
  async changePlan(id: string, plan: string, context: ChangeContext = {}): Promise<PublicKeyRecord> {
    if (!PLAN_NAME_PATTERN.test(plan)) throw new ConfigError('a plan name is 1 to 64 letters, digits, ".", "_" or "-"');
    let before: KeyRecord | null = null;
    const updated = await this.#change(id, (current) => {
      if (current.revoked_at !== null) throw new ConfigError(`key ${id} is revoked; its plan cannot change`);
      before = current;
      return { ...current, plan };
    });
    const from = before!.plan;
    if (from !== plan) await this.#recordOrUndo(context, 'key.plan_changed', id, { plan: { from, to: plan } }, context.now ?? new Date(), () => this.#restore(updated, before!));
    return visible(updated);
  }

  async #change(id: string, change: (current: KeyRecord) => KeyRecord): Promise<KeyRecord> {
    return this.#backend.update((keys) => {
      const index = keys.findIndex((k) => k.id === id);
      if (index < 0) throw new UnknownKeyError(id);
      const next = change(keys[index]!);
      keys[index] = next;
      return { keys, result: next };
    });
  }

  async #record(context: ChangeContext, action: KeyAction, target: string, details: Record<string, unknown>, now: Date): Promise<void> {
    await this.#audit?.append({ actor: context.actor ?? CLI_ACTOR, action, target, details }, now);
  }

  /** Audit a change stored already; when the audit log cannot take it, `undo` the change (best effort) and throw the audit's failure. */
  async #recordOrUndo(context: ChangeContext, action: KeyAction, target: string, details: Record<string, unknown>, now: Date, undo: () => Promise<unknown>): Promise<void> {
    try {
      await this.#record(context, action, target, details, now);
    } catch (error) {
      await undo().catch(() => {});
      throw error;
    }
  }

  /** Put `before` back in place of `changed`, unless another change came in between (then that one stands). */
  #restore(changed: KeyRecord, before: KeyRecord): Promise<void> {
    return this.#backend.update((keys) => {
      const index = keys.findIndex((k) => k.id === changed.id);
      if (index >= 0 && sameRecord(keys[index]!, changed)) keys[index] = before;
      return { keys, result: undefined };
    });
  }
}

type KeyAction = 'key.created' | 'key.rotated' | 'key.revoked' | 'key.plan_changed';

function sameRecord(a: KeyRecord, b: KeyRecord): boolean {
  return a.hash === b.hash && a.plan === b.plan && a.rotated_at === b.rotated_at && a.revoked_at === b.revoked_at && a.name === b.name;
}

function visible({ hash: _hash, ...rest }: KeyRecord): PublicKeyRecord {
  return rest;
}
