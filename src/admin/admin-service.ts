import type { AuditActor, AuditLog } from '../access/audit-log.js';
import { CLEARED_SESSION_COOKIE, openSession, sessionCookie, sessionHolds, SESSION_TTL_MS, type SessionStore } from '../access/console-sessions.js';
import { KeyAdmin, MAX_KEY_NAME_LENGTH } from '../access/key-admin.js';
import { KEY_SCOPES, type KeyRecord, type KeyScope, type PublicKeyRecord } from '../access/key-record.js';
import type { KeyRegistry } from '../access/key-registry.js';
import type { KeyUsage, UsageEntry, UsageLedger } from '../access/key-usage.js';
import type { PlansConfig } from '../access/plans.js';
import { answerAlways, sessionJson, type AdminAnswer, type KeyAdminRequest } from '../api/admin-requests.js';
import { badRequest, notFound, validationError } from '../api/http-error.js';
import { ConfigError, UnknownKeyError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { IntelligenceStats } from './intelligence-stats.js';

export interface AdminServiceOptions {
  /** The keys in force: sessions are checked against them, and reloaded after every change. */
  readonly registry: KeyRegistry;
  readonly keyAdmin: KeyAdmin;
  readonly audit: AuditLog;
  readonly sessions: SessionStore;
  readonly usage: UsageLedger;
  readonly plans: PlansConfig;
  readonly stats: IntelligenceStats;
  /**
   * Start a compaction (POST /v1/admin/compaction): whether one started
   * (false: one was running already) and the snapshot it folds. Null where
   * this server builds nothing (a fleet follower).
   */
  readonly compact: ((why: string) => { readonly started: boolean; readonly snapshot: string }) | null;
  readonly logger: Logger;
  readonly now?: () => number;
}

/** A key as the admin API shows it: the record without its hash, and its use over the last day. */
export interface KeyWithUsage extends PublicKeyRecord {
  readonly last_used_at: string | null;
  readonly requests_24h: number;
  readonly rate_limited_24h: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const CREATE_FIELDS = new Set(['name', 'plan', 'scopes']);
const UPDATE_FIELDS = new Set(['plan']);

/**
 * The main thread's side of the admin API (docs/console.md): serving
 * threads authenticate, charge quotas and check scopes, then hand the
 * operation here, where the keys, the sessions, the audit log, key usage
 * and the figures are. An answer is always given: a refusal as the spec's
 * error body, a failure of a store as 503.
 */
export class AdminService {
  readonly #o: AdminServiceOptions;
  readonly #now: () => number;

  constructor(options: AdminServiceOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  handle(request: KeyAdminRequest): Promise<AdminAnswer> {
    return answerAlways(
      () => this.#answer(request),
      (error) => this.#o.logger.error({ op: request.op, err: error.message }, 'admin request failed'),
    );
  }

  /** Key usage handed over by a serving thread. */
  recordUsage(entries: readonly UsageEntry[]): void {
    this.#o.stats.countRequests(entries);
    this.#o.usage.add(entries, this.#now()).catch((error: Error) => this.#o.logger.error({ err: error.message }, 'key usage not recorded'));
  }

  async close(): Promise<void> {
    await this.#o.usage.flush().catch((error: Error) => this.#o.logger.error({ err: error.message }, 'key usage not written'));
  }

  async #answer(request: KeyAdminRequest): Promise<AdminAnswer> {
    switch (request.op) {
      case 'session.find':
        return { status: 200, body: '', session: await this.#findSession(request.tokenHash) };
      case 'session.open': {
        const now = this.#now();
        const { token, session } = openSession(request.key, now);
        await this.#o.sessions.save(session);
        await this.#o.audit.append({ actor: actorOf(request.key), action: 'session.signed_in', target: request.key.id, details: {} }, new Date(now));
        return {
          status: 200,
          body: sessionJson({ key: request.key, csrfToken: session.csrfToken, expiresAt: session.expiresAt }),
          cookie: sessionCookie(token, SESSION_TTL_MS / 1000),
        };
      }
      case 'session.close':
        await this.#o.sessions.remove(request.tokenHash);
        await this.#o.audit.append({ actor: actorOf(request.key), action: 'session.signed_out', target: request.key.id, details: {} }, new Date(this.#now()));
        return { status: 200, body: JSON.stringify({ signed_out: true }), cookie: CLEARED_SESSION_COOKIE };
      case 'keys.list': {
        const keys = await this.#withUsage(await this.#o.keyAdmin.list());
        return ok({ keys, plans: [...this.#o.plans.plans.keys()] });
      }
      case 'keys.create': {
        const { name, plan, scopes } = this.#creation(request.body);
        const created = await this.#o.keyAdmin.create({ name, plan, scopes, actor: actorOf(request.key), now: new Date(this.#now()) });
        await this.#o.registry.check();
        return { status: 201, body: JSON.stringify({ key: created.key, record: (await this.#withUsage([created.record]))[0] }) };
      }
      case 'keys.rotate': {
        const rotated = await this.#change(() => this.#o.keyAdmin.rotate(request.id, { actor: actorOf(request.key), now: new Date(this.#now()) }));
        return ok({ key: rotated.key, record: (await this.#withUsage([rotated.record]))[0] });
      }
      case 'keys.revoke': {
        const record = await this.#change(() => this.#o.keyAdmin.revoke(request.id, { actor: actorOf(request.key), now: new Date(this.#now()) }));
        return ok({ record: (await this.#withUsage([record]))[0] });
      }
      case 'keys.update': {
        const plan = this.#planUpdate(request.body);
        const record = await this.#change(() => this.#o.keyAdmin.changePlan(request.id, plan, { actor: actorOf(request.key), now: new Date(this.#now()) }));
        return ok({ record: (await this.#withUsage([record]))[0] });
      }
      case 'audit.list':
        return ok({ records: await this.#o.audit.recent(request.limit) });
      case 'stats':
        return { status: 200, body: await this.#o.stats.json(this.#now()) };
      case 'compaction.start': {
        if (this.#o.compact === null) {
          throw badRequest('a fleet follower builds nothing: the active builder publishes (SIGUSR2 to upi-risk builder)');
        }
        const actor = actorOf(request.key);
        const { started, snapshot } = this.#o.compact(`requested by ${actor.name}`);
        await this.#o.audit.append({ actor, action: 'compaction.requested', target: snapshot, details: { started } }, new Date(this.#now()));
        return { status: 202, body: JSON.stringify({ started, snapshot }) };
      }
    }
  }

  /** The session of a token hash if it still stands for its key; one that no longer does is removed. */
  async #findSession(tokenHash: string): Promise<{ key: KeyRecord; csrfToken: string; expiresAt: number } | null> {
    const now = this.#now();
    const session = await this.#o.sessions.find(tokenHash, now);
    if (session === null) return null;
    const key = this.#o.registry.records().find((k) => k.id === session.keyId);
    if (!sessionHolds(session, key, now)) {
      await this.#o.sessions.remove(tokenHash);
      return null;
    }
    return { key, csrfToken: session.csrfToken, expiresAt: session.expiresAt };
  }

  /** Run a key change, then reload the keys so that every serving thread has them before the answer goes out. */
  async #change<T>(change: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await change();
    } catch (error) {
      if (error instanceof UnknownKeyError) throw notFound(`no key ${JSON.stringify(error.keyId)}`);
      // A change the key's state refuses (a revoked key rotated, say).
      if (error instanceof ConfigError) throw validationError(error.message);
      throw error;
    }
    await this.#o.registry.check();
    return result;
  }

  #creation(body: unknown): { name: string; plan: string; scopes: KeyScope[] } {
    const b = objectBody(body, CREATE_FIELDS);
    if (typeof b.name !== 'string' || b.name.trim() === '' || b.name.length > MAX_KEY_NAME_LENGTH) {
      throw validationError(`"name" must be a string of 1 to ${MAX_KEY_NAME_LENGTH} characters`);
    }
    const plan = b.plan === undefined ? 'default' : this.#knownPlan(b.plan);
    let scopes: KeyScope[] = ['screen'];
    if (b.scopes !== undefined) {
      const s = b.scopes;
      if (!Array.isArray(s) || s.length === 0 || s.some((x) => !(KEY_SCOPES as readonly unknown[]).includes(x)) || new Set(s).size !== s.length) {
        throw validationError(`"scopes" must be a list of distinct scopes from ${KEY_SCOPES.join(', ')}`);
      }
      scopes = KEY_SCOPES.filter((k) => s.includes(k));
    }
    return { name: b.name.trim(), plan, scopes };
  }

  #planUpdate(body: unknown): string {
    const b = objectBody(body, UPDATE_FIELDS);
    if (b.plan === undefined) throw validationError('"plan" is required');
    return this.#knownPlan(b.plan);
  }

  #knownPlan(plan: unknown): string {
    if (typeof plan !== 'string' || !this.#o.plans.plans.has(plan)) {
      throw validationError(`"plan" must be one of ${[...this.#o.plans.plans.keys()].join(', ')}`);
    }
    return plan;
  }

  async #withUsage(records: readonly PublicKeyRecord[]): Promise<KeyWithUsage[]> {
    let usage: Map<string, KeyUsage>;
    try {
      usage = await this.#o.usage.since(this.#now() - DAY_MS);
    } catch (error) {
      // The keys are still worth showing without their counts.
      this.#o.logger.error({ err: (error as Error).message }, 'key usage unavailable');
      usage = new Map();
    }
    return records.map((record) => {
      const u = usage.get(record.id);
      return {
        ...record,
        last_used_at: u?.lastUsedAt == null ? null : new Date(u.lastUsedAt).toISOString(),
        requests_24h: u?.requests ?? 0,
        rate_limited_24h: u?.limited ?? 0,
      };
    });
  }
}

function ok(value: unknown): AdminAnswer {
  return { status: 200, body: JSON.stringify(value) };
}

function actorOf(key: KeyRecord): AuditActor {
  return { key_id: key.id, name: key.name };
}

/** A body's fields, refusing any but `allowed` (a misspelt field would otherwise be ignored in silence). */
function objectBody(body: unknown, allowed: ReadonlySet<string>): Record<string, unknown> {
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !allowed.has(k));
  if (unknown.length > 0) throw validationError(`unknown field ${JSON.stringify(unknown[0])}; the fields are ${[...allowed].join(', ')}`);
  return b;
}
