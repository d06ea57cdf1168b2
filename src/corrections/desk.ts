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
 * processes append (polled), are handed to the engine one at a time, in
 * journal order.
 */
export class JournalDesk implements CorrectionDesk {
  readonly #ledger: CorrectionLedger;
  readonly #logger: Logger;
  readonly #pollMs: number;
  readonly #nameOf: (keyId: string) => string | undefined;
  readonly #listeners: ((upis: readonly string[]) => void)[] = [];
  #engine: CorrectionEngine | null = null;
  /** Changes and polls, one at a time. */
  #queue: Promise<unknown> = Promise.resolve();
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

  retract(ids: readonly string[], reason: string, by: string): Promise<RetractionOutcome> {
    return this.#inTurn(async () => {
      const engine = this.#engineOrFail();
      await this.#ledger.catchUp();
      const located = await engine.locate([...new Set(ids)]);
      const tally = await this.#ledger.retract(ids, located, reason, this.#actor(by));
      return { ...tally, data_version: await this.#serve(engine) };
    });
  }

  clear(input: { readonly upi: string; readonly reason: string; readonly reference: string | null }, by: string): Promise<ClearanceChange> {
    const upi = normalizeVpa(input.upi);
    return this.#inTurn(async () => {
      await this.#ledger.catchUp();
      // Refused before the engine is asked; the ledger checks again under the journal's lock.
      const standing = this.#ledger.book.active(upi);
      if (standing !== null) throw new ClearanceConflictError(upi, standing.id);
      const engine = this.#engineOrFail();
      const urls = engine.sourceUrls(upi);
      const record = await this.#ledger.clear({ upi, reason: input.reason, reference: input.reference, urls }, this.#actor(by));
      return { ...record, data_version: await this.#serve(engine) };
    });
  }

  /** `reason`, when given, goes to the audit log with the end. */
  endClearance(id: string, by: string, reason: string | null = null): Promise<ClearanceChange | null> {
    return this.#inTurn(async () => {
      await this.#ledger.catchUp();
      if (this.#ledger.book.clearance(id) === null) return null;
      const engine = this.#engineOrFail();
      const record = await this.#ledger.end(id, reason, this.#actor(by));
      return record === null ? null : { ...record, data_version: await this.#serve(engine) };
    });
  }

  clearance(id: string): Promise<ClearanceRecord | null> {
    return Promise.resolve(this.#ledger.book.clearance(id));
  }

  activeClearance(upi: string): Promise<ClearanceRecord | null> {
    return Promise.resolve(this.#ledger.book.active(normalizeVpa(upi)));
  }

  /** Clearances in the order made, in force and ended, a page at a time. */
  listClearances(query: ClearanceQuery): Promise<ClearancePage> {
    return Promise.resolve(this.#ledger.book.list(query));
  }

  async evidenceOf(upi: string): Promise<readonly EvidenceItemView[]> {
    return this.#engineOrFail().evidenceOf(normalizeVpa(upi));
  }

  /** Stop looking for other processes' records, once the change in hand is served. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#queue.catch(() => {});
  }

  /** Have the engine serve the corrections in force, for `upis` (by default the VPAs changed since it last did). */
  async #serve(engine: CorrectionEngine, upis: readonly string[] = this.#ledger.takeChanged()): Promise<string> {
    let version: string;
    try {
      version = await engine.apply(this.#ledger.book.state, upis);
    } catch (error) {
      // Recorded, not yet served: the next change or poll serves them.
      this.#ledger.markChanged(upis);
      throw error;
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
      this.#inTurn(async () => {
        await this.#ledger.catchUp();
        const upis = this.#ledger.takeChanged();
        if (upis.length === 0) return;
        const version = await this.#serve(this.#engineOrFail(), upis);
        this.#logger.info({ vpas: upis.length, data_version: version }, 'corrections another process recorded are served');
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
