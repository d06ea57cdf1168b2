import type pg from 'pg';
import type { AuditActor, AuditLog } from '../access/audit-log.js';
import { ClearanceConflictError, ErrorCode, StoreError } from '../common/errors.js';
import { formatIso } from '../common/time.js';
import { countsFrom } from '../builder/scoring.js';
import { countsUnderClearance } from '../evidence/corrections.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../vpa/categories.js';
import { normalizeVpa } from '../vpa/vpa.js';
import type { ClearanceRecord, CorrectionDesk, EvidenceItemView, RetractionOutcome } from '../service/corrections.js';
import {
  clearanceById,
  clearanceInForce,
  evidenceIdsOfVpa,
  evidenceOfVpas,
  listClearances,
  logClearance,
  logClearanceEnd,
  logRetraction,
  type StoredClearance,
} from '../store/correction-log.js';
import { HEAD_WAIT_MS } from '../store/log-head.js';
import type { StoreLocation } from '../store/postgres.js';
import type { ClearancePage, ClearanceQuery } from './book.js';
import type { ClearanceChange } from './desk.js';
import { newClearanceId } from './records.js';

/** What the desk needs of the follower serving this process: FollowerService. */
export interface FollowedLog {
  /** Resolves once the log up to `position` is served, or with false after `timeoutMs`. */
  served(position: number, timeoutMs: number): Promise<boolean>;
  readonly view: { readonly version: string };
  readonly current: { readonly meta: { readonly scoredAt: number; readonly evidenceMaxAgeMs: number } };
  /** The log position served. */
  readonly position: number;
}

export interface StoreDeskOptions {
  readonly pool: pg.Pool;
  readonly location: StoreLocation;
  readonly follower: FollowedLog;
  readonly audit: AuditLog;
  /** The name of the key with this id, for the audit log; the id itself when unknown. */
  readonly nameOf?: (keyId: string) => string | undefined;
  /** How long an answer waits for this follower to serve what it logged, ms (default 10 s). */
  readonly servedTimeoutMs?: number;
  readonly now?: () => number;
}

/**
 * The corrections desk of a fleet follower: a correction is one
 * transaction of the store's log (correction-log.ts), audited once stored,
 * and answered once this follower serves its position; every other follower
 * serves it from the log within moments, in the same order.
 */
export class StoreDesk implements CorrectionDesk {
  readonly #options: StoreDeskOptions;

  constructor(options: StoreDeskOptions) {
    this.#options = options;
  }

  async retract(ids: readonly string[], reason: string, by: string): Promise<RetractionOutcome> {
    const logged = await this.#withClient((client) => logRetraction(client, this.#options.location, ids, reason, by, HEAD_WAIT_MS));
    if (logged.position !== null) {
      // Audited once stored, before the wait to serve it: a wait that times out (503) or a process that dies
      // then leaves no correction unaudited, and a retry finds it done.
      const details = { reason, evidence_ids: [...new Set(ids)].filter((id) => !logged.unknown.includes(id)), upis: logged.upis, already_retracted: logged.alreadyRetracted, unknown: logged.unknown.length };
      await this.#options.audit.append({ actor: this.#actor(by), action: 'evidence.retracted', target: `position-${logged.position}`, details });
    }
    // Answered once this follower serves every retraction of these ids, earlier ones made on another follower included:
    // the data_version of the answer holds them all.
    const servedFrom = Math.max(logged.position ?? 0, logged.earlierPosition ?? 0);
    if (servedFrom > 0) await this.#servedAt(servedFrom);
    return { retracted: logged.retracted, unknown: logged.unknown, already_retracted: logged.alreadyRetracted, data_version: this.#options.follower.view.version };
  }

  async clear(input: { readonly upi: string; readonly reason: string; readonly reference: string | null }, by: string): Promise<ClearanceChange> {
    const upi = normalizeVpa(input.upi);
    const meta = this.#options.follower.current.meta;
    const outcome = await this.#withClient((client) =>
      logClearance(client, this.#options.location, {
        id: newClearanceId(),
        upi,
        reason: input.reason,
        reference: input.reference,
        createdAt: this.#now(),
        createdBy: by,
        countsFrom: countsFrom(meta.scoredAt, meta.evidenceMaxAgeMs),
      }, HEAD_WAIT_MS),
    );
    if ('conflict' in outcome) throw new ClearanceConflictError(upi, outcome.conflict.id);
    const made = outcome.stored;
    await this.#options.audit.append(
      { actor: this.#actor(by), action: 'clearance.created', target: made.id, details: { upi, reason: made.reason, reference: made.reference, urls: made.urls.length } },
      new Date(made.createdAt),
    );
    await this.#servedAt(made.position);
    return { ...recordOf(made), data_version: this.#options.follower.view.version };
  }

  async endClearance(id: string, by: string, reason: string | null = null): Promise<ClearanceChange | null> {
    const ended = await this.#withClient((client) => logClearanceEnd(client, this.#options.location, id, by, this.#now(), HEAD_WAIT_MS));
    if (ended === null) return null;
    if (ended.position !== null) {
      await this.#options.audit.append({ actor: this.#actor(by), action: 'clearance.ended', target: id, details: { upi: ended.clearance.upi, reason } }, new Date(ended.clearance.endedAt!));
    }
    // Ended before, perhaps on another follower: answered once this one serves that end too.
    const endedAt = ended.position ?? ended.clearance.endedPosition;
    if (endedAt !== null) await this.#servedAt(endedAt);
    return { ...recordOf(ended.clearance), data_version: this.#options.follower.view.version };
  }

  async clearance(id: string): Promise<ClearanceRecord | null> {
    const found = await clearanceById(this.#options.pool, this.#options.location, id);
    return found === null ? null : recordOf(found);
  }

  async activeClearance(upi: string): Promise<ClearanceChange | null> {
    const found = await clearanceInForce(this.#options.pool, this.#options.location, normalizeVpa(upi));
    if (found === null) return null;
    // Perhaps made on another follower: answered once this one serves it.
    await this.#servedAt(found.position);
    return { ...recordOf(found), data_version: this.#options.follower.view.version };
  }

  /** Clearances in the order made, in force and ended, a page at a time; the cursor is the last clearance's id. */
  async listClearances(query: ClearanceQuery): Promise<ClearancePage> {
    let after: number | null = null;
    if (query.cursor !== null) {
      const last = await clearanceById(this.#options.pool, this.#options.location, query.cursor);
      if (last === null || (query.upi !== null && last.upi !== query.upi)) return 'bad-cursor';
      after = last.position;
    }
    const rows = await listClearances(this.#options.pool, this.#options.location, { upi: query.upi, after, limit: query.limit + 1 });
    const page = rows.slice(0, query.limit);
    return { clearances: page.map(recordOf), nextCursor: rows.length > query.limit ? page.at(-1)!.id : null };
  }

  evidenceIdsOf(upi: string, ids: readonly string[]): Promise<ReadonlySet<string>> {
    return evidenceIdsOfVpa(this.#options.pool, this.#options.location, normalizeVpa(upi), ids);
  }

  /** The VPA's items in the log up to the position served, retracted ones left out; `counts` under expiry and its clearance. */
  async evidenceOf(upi: string): Promise<readonly EvidenceItemView[]> {
    const { pool, location, follower } = this.#options;
    const canonical = normalizeVpa(upi);
    const [items, clearance] = await Promise.all([evidenceOfVpas(pool, location, [canonical], follower.position), clearanceInForce(pool, location, canonical)]);
    const meta = follower.current.meta;
    const from = countsFrom(meta.scoredAt, meta.evidenceMaxAgeMs);
    const active = clearance === null ? undefined : { createdAt: clearance.createdAt, urls: new Set(clearance.urls) };
    return items
      .map(({ record }) => ({
        evidence_id: record.evidenceId,
        url: record.url,
        source_category: SOURCE_CATEGORIES[record.sourceCategory]!,
        risk_category: RISK_CATEGORIES[record.riskCategory]!,
        captured_at: formatIso(record.capturedAt),
        screenshot: record.screenshot,
        counts: record.capturedAt >= from && countsUnderClearance(active, record.capturedAt, record.url),
        at: record.capturedAt,
      }))
      .sort((a, b) => a.at - b.at || a.evidence_id.localeCompare(b.evidence_id))
      .map(({ at: _at, ...view }) => view);
  }

  async #withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#options.pool.connect().catch((error: unknown) => {
      throw new StoreError(ErrorCode.STORE, `the store cannot be reached: ${(error as Error).message}`, { cause: error });
    });
    try {
      return await work(client);
    } finally {
      client.release();
    }
  }

  /** Wait until this follower serves the log up to `position`; a correction stored but not yet served here is an error to the caller (503), though every follower serves it. */
  async #servedAt(position: number): Promise<void> {
    const served = await this.#options.follower.served(position, this.#options.servedTimeoutMs ?? 10_000);
    if (!served) throw new StoreError(ErrorCode.STORE, `the correction at log position ${position} is stored, but this server does not serve it yet; every server will within moments`);
  }

  #actor(by: string): AuditActor {
    return { key_id: by, name: this.#options.nameOf?.(by) ?? by };
  }

  #now(): number {
    return this.#options.now?.() ?? Date.now();
  }
}

function recordOf(c: StoredClearance): ClearanceRecord {
  return {
    id: c.id,
    upi: c.upi,
    reason: c.reason,
    reference: c.reference,
    created_at: new Date(c.createdAt).toISOString(),
    created_by: c.createdBy,
    ended_at: c.endedAt === null ? null : new Date(c.endedAt).toISOString(),
    ended_by: c.endedBy,
  };
}
