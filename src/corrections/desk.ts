import { CLI_ACTOR, type AuditActor, type AuditLog } from '../access/audit-log.js';
import { ClearanceConflictError } from '../common/errors.js';
import { subscribe } from '../common/listeners.js';
import { silentLogger, type Logger } from '../common/logger.js';
import type { ClearanceRecord, CorrectionDesk, CorrectionEngine, CorrectionState, EvidenceItemView, RetractionOutcome } from '../service/corrections.js';
import type { CorrectionSource } from '../evidence/corrections.js';
import { normalizeVpa } from '../vpa/vpa.js';
import type { ClearancePage, ClearanceQuery } from './book.js';
import { CorrectionLedger } from './ledger.js';
import { CLI_BY } from './records.js';

export interface JournalDeskOptions {
  /** The journal's path (journal.ts, correctionJournalPath). */
  readonly path: string;
  readonly audit: AuditLog;
  readonly logger?: Logger;
  /** How often to look for records another process appended (`upi-risk retract`), ms; 0 never looks. */
  readonly pollMs?: number;
  /** The name of the key with this id, for the audit log; the id itself when unknown. */
  readonly nameOf?: (keyId: string) => string | undefined;
  readonly now?: () => number;
}

/** A clearance change as the desk answers it. */
export type ClearanceChange = ClearanceRecord & { readonly data_version: string };

/**
 * The corrections desk of a data directory (embedded mode): records
 * corrections in the journal, durably, before it acknowledges them, audits
 * them, and has the engine serve them before it answers. Opened before the
 * engine starts, so the engine starts with the corrections in force
 * (`state`); attached to it once it runs. Changes, and the records other
 * processes append (polled), are recorded one at a time, in journal order;
 * the engine serves them one serve at a time, and a serve takes every change
 * recorded before it starts, so that changes made together (a caller
 * clearing many VPAs at once) are served together rather than queueing for
 * a serve each.
 */
export class JournalDesk implements CorrectionDesk {
  readonly #ledger: CorrectionLedger;
  readonly #logger: Logger;
  readonly #pollMs: number;
  readonly #nameOf: (keyId: string) => string | undefined;
  readonly #listeners: ((upis: readonly string[]) => void)[] = [];
  #engine: CorrectionEngine | null = null;
  /** Records and polls, one at a time. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Serves, one at a time. */
  #serving: Promise<unknown> = Promise.resolve();
  /** The serve that has not started yet: it takes every change recorded until it starts. */
  #nextServe: Promise<string> | null = null;
  /** The VPAs of the serve under way. */
  #beingServed: ReadonlySet<string> = new Set();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  private constructor(ledger: CorrectionLedger, options: JournalDeskOptions) {
    this.#ledger = ledger;
    this.#logger = options.logger ?? silentLogger;
    this.#pollMs = options.pollMs ?? 250;
    this.#nameOf = options.nameOf ?? (() => undefined);
  }

  /** Read the journal: `state` holds the corrections in force from then on. */
  static async open(options: JournalDeskOptions): Promise<JournalDesk> {
    return new JournalDesk(await CorrectionLedger.open(options), options);
  }

  /** The corrections in force: what the engine's builds and merges read (SnapshotServiceOptions.corrections). */
  get state(): CorrectionState {
    return this.#ledger.book.state;
  }

  /** The corrections as the engine reads them (SnapshotServiceOptions.corrections). */
  get source(): CorrectionSource {
    return { state: () => this.state, vpasSince: (sequence) => this.#ledger.book.vpasSince(sequence) };
  }

  /** Serve corrections with `engine` from now on, and look for other processes' records. */
  attach(engine: CorrectionEngine): void {
    this.#engine = engine;
    if (this.#pollMs > 0) this.#poll();
  }

  /** Called with the VPAs of every change the engine has served (this desk's, or another process's); the function returned stops that. */
  onApplied(listener: (upis: readonly string[]) => void): () => void {
    return subscribe(this.#listeners, listener);
  }

  async retract(ids: readonly string[], reason: string, by: string): Promise<RetractionOutcome> {
    const engine = this.#engineOrFail();
    const tally = await this.#inTurn(async () => {
      await this.#ledger.catchUp();
      const located = await engine.locate([...new Set(ids)]);
      return this.#ledger.retract(ids, located, reason, this.#actor(by));
    });
    return { ...tally, data_version: await this.#served(engine) };
  }

  async clear(input: { readonly upi: string; readonly reason: string; readonly reference: string | null }, by: string): Promise<ClearanceChange> {
    const upi = normalizeVpa(input.upi);
    const engine = this.#engineOrFail();
    const record = await this.#inTurn(async () => {
      await this.#ledger.catchUp();
      // Refused before the engine is asked; the ledger checks again under the journal's lock.
      const standing = this.#ledger.book.active(upi);
      if (standing !== null) throw new ClearanceConflictError(upi, standing.id);
      // The sources a clearance suppresses are those of every change recorded before it.
      while (this.#ledger.isChanged(upi) || this.#beingServed.has(upi)) await this.#served(engine);
      const urls = engine.sourceUrls(upi);
      return this.#ledger.clear({ upi, reason: input.reason, reference: input.reference, urls }, this.#actor(by));
    });
    return { ...record, data_version: await this.#served(engine) };
  }

  /** `reason`, when given, goes to the audit log with the end. */
  async endClearance(id: string, by: string, reason: string | null = null): Promise<ClearanceChange | null> {
    const engine = this.#engineOrFail();
    const record = await this.#inTurn(async () => {
      await this.#ledger.catchUp();
      if (this.#ledger.book.clearance(id) === null) return null;
      return this.#ledger.end(id, reason, this.#actor(by));
    });
    return record === null ? null : { ...record, data_version: await this.#served(engine) };
  }

  clearance(id: string): Promise<ClearanceRecord | null> {
    return Promise.resolve(this.#ledger.book.clearance(id));
  }

  async activeClearance(upi: string): Promise<ClearanceChange | null> {
    const canonical = normalizeVpa(upi);
    const found = this.#ledger.book.active(canonical);
    if (found === null) return null;
    const engine = this.#engineOrFail();
    // Recorded and not yet served (another process's, caught up): waited for. Served already: what is served holds it.
    const unserved = this.#ledger.isChanged(canonical) || this.#beingServed.has(canonical);
    return { ...found, data_version: unserved ? await this.#served(engine) : engine.view.version };
  }

  /** Clearances in the order made, in force and ended, a page at a time. */
  listClearances(query: ClearanceQuery): Promise<ClearancePage> {
    return Promise.resolve(this.#ledger.book.list(query));
  }

  async evidenceOf(upi: string): Promise<readonly EvidenceItemView[]> {
    return this.#engineOrFail().evidenceOf(normalizeVpa(upi));
  }

  async evidenceIdsOf(upi: string, ids: readonly string[]): Promise<ReadonlySet<string>> {
    const canonical = normalizeVpa(upi);
    const located = await this.#engineOrFail().locate([...new Set(ids)]);
    return new Set([...located].filter(([, named]) => named === canonical).map(([id]) => id));
  }

  /** Stop looking for other processes' records, once the change in hand is served. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#queue.catch(() => {});
    await this.#serving.catch(() => {});
  }

  /**
   * Resolves with the data version once every change recorded so far is
   * served: joins the serve that has not started yet, or starts one after
   * the serve under way.
   */
  #served(engine: CorrectionEngine): Promise<string> {
    if (this.#nextServe === null) {
      const next = this.#serving.then(() => {
        this.#nextServe = null;
        return this.#serve(engine);
      });
      this.#nextServe = next;
      this.#serving = next.catch(() => {});
    }
    return this.#nextServe;
  }

  /** Have the engine serve the corrections in force, for the VPAs changed since it last did. */
  async #serve(engine: CorrectionEngine): Promise<string> {
    const upis = this.#ledger.takeChanged();
    let version: string;
    this.#beingServed = new Set(upis);
    try {
      version = await engine.apply(this.#ledger.book.state, upis);
    } catch (error) {
      // Recorded, not yet served: the next change or poll serves them.
      this.#ledger.markChanged(upis);
      throw error;
    } finally {
      this.#beingServed = new Set();
    }
    if (upis.length > 0) {
      for (const listener of this.#listeners) {
        try {
          listener(upis);
        } catch (error) {
          this.#logger.error({ err: (error as Error).message }, 'a listener of served corrections failed');
        }
      }
    }
    return version;
  }

  /** Look for records other processes appended, and serve them. */
  #poll(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      if (this.#closed) return;
      this.#inTurn(() => this.#ledger.catchUp())
        .then(async () => {
          if (!this.#ledger.hasChanged()) return;
          const version = await this.#served(this.#engineOrFail());
          this.#logger.info({ data_version: version }, 'corrections another process recorded are served');
        })
        .catch((error: unknown) => this.#logger.error({ err: (error as Error).message }, 'corrections another process recorded are not served yet; retrying at the next poll'))
        .finally(() => this.#poll());
    }, this.#pollMs);
    this.#timer.unref();
  }

  #inTurn<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work);
    this.#queue = run.catch(() => {});
    return run;
  }

  #engineOrFail(): CorrectionEngine {
    if (this.#engine === null) throw new Error('the corrections desk has no engine to serve corrections with');
    return this.#engine;
  }

  #actor(by: string): AuditActor {
    return by === CLI_BY ? CLI_ACTOR : { key_id: by, name: this.#nameOf(by) ?? by };
  }
}
