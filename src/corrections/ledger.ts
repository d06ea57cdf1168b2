import type { AuditActor, AuditLog } from '../access/audit-log.js';
import { ClearanceConflictError } from '../common/errors.js';
import { silentLogger, type Logger } from '../common/logger.js';
import type { ClearanceRecord, RetractionOutcome } from '../service/corrections.js';
import { CorrectionBook } from './book.js';
import { CorrectionJournal, type JournalEntry } from './journal.js';
import { CLI_BY, newClearanceId, newRetractionId, type CorrectionRecord } from './records.js';

/** What a retraction changed, but the data version (the engine names it). */
export type RetractionTally = Omit<RetractionOutcome, 'data_version'>;

export interface LedgerOptions {
  /** The journal's path (journal.ts, correctionJournalPath). */
  readonly path: string;
  /** Where each correction is recorded with who made it, when and why. */
  readonly audit: AuditLog;
  readonly logger?: Logger;
  readonly now?: () => number;
}

/**
 * The corrections of a data directory: the journal, the book of what is in
 * force it makes, and the audit log. Each change is decided under the
 * journal's lock against every record before it, written and fsynced, then
 * audited: what `serve` and `upi-risk retract` both record corrections
 * with. What other processes appended is applied when read (catchUp, or
 * before an append); the VPAs any record changed wait in takeChanged() for
 * the engine.
 */
export class CorrectionLedger {
  readonly book = new CorrectionBook();
  readonly #journal: CorrectionJournal;
  readonly #audit: AuditLog;
  readonly #now: () => number;
  readonly #changed = new Set<string>();

  private constructor(journal: CorrectionJournal, options: LedgerOptions) {
    this.#journal = journal;
    this.#audit = options.audit;
    this.#now = options.now ?? Date.now;
  }

  /** Open the journal and apply every record in it. */
  static async open(options: LedgerOptions): Promise<CorrectionLedger> {
    const { journal, entries } = await CorrectionJournal.open(options.path, options.logger ?? silentLogger);
    const ledger = new CorrectionLedger(journal, options);
    ledger.#absorb(entries);
    ledger.#changed.clear();
    return ledger;
  }

  /** Apply what other processes appended since the last read. */
  async catchUp(): Promise<void> {
    this.#absorb(await this.#journal.readNew());
  }

  /** The VPAs whose counting evidence changed since the last call, by any process's record. */
  takeChanged(): string[] {
    const upis = [...this.#changed];
    this.#changed.clear();
    return upis;
  }

  /** Whether a record changed any VPA since the last takeChanged(). */
  hasChanged(): boolean {
    return this.#changed.size > 0;
  }

  /** Whether a record changed `upi` (canonical) since the last takeChanged(). */
  isChanged(upi: string): boolean {
    return this.#changed.has(upi);
  }

  /** Put back VPAs taken by takeChanged that the engine did not serve. */
  markChanged(upis: readonly string[]): void {
    for (const upi of upis) this.#changed.add(upi);
  }

  /**
   * Retract the `wanted` evidence ids; `located` maps those that name stored
   * evidence to their VPA. Ids retracted before count as such whatever
   * `located` says; the rest it lacks are unknown, and nothing is stored of
   * them. A call that retracts nothing writes nothing.
   */
  async retract(wanted: readonly string[], located: ReadonlyMap<string, string>, reason: string, actor: AuditActor): Promise<RetractionTally> {
    const ids = [...new Set(wanted)];
    const { written, result } = await this.#journal.append(
      (newer) => this.#absorb(newer),
      () => {
        const unknown: string[] = [];
        const evidence: { id: string; upi: string }[] = [];
        let already = 0;
        for (const id of ids) {
          const upi = located.get(id);
          if (this.book.isRetracted(id)) already++;
          else if (upi === undefined) unknown.push(id);
          else evidence.push({ id, upi });
        }
        const tally: RetractionTally = { retracted: evidence.length, unknown, already_retracted: already };
        const record: CorrectionRecord | null =
          evidence.length === 0 ? null : { type: 'retraction', id: newRetractionId(), evidence, reason, by: byOf(actor), at: this.#at() };
        return { record, result: tally };
      },
    );
    if (written?.type === 'retraction') {
      this.#applyOwn(written);
      const upis = [...new Set(written.evidence.map((e) => e.upi))];
      const details = { reason, evidence_ids: written.evidence.map((e) => e.id), upis, already_retracted: result.already_retracted, unknown: result.unknown.length };
      await this.#audit.append({ actor, action: 'evidence.retracted', target: written.id, details }, new Date(written.at));
    }
    return result;
  }

  /**
   * Clear a canonical VPA, suppressing its evidence captured until now and
   * any from `urls` (its sources now); throws ClearanceConflictError when it
   * has a clearance in force.
   */
  async clear(input: { readonly upi: string; readonly reason: string; readonly reference: string | null; readonly urls: readonly string[] }, actor: AuditActor): Promise<ClearanceRecord> {
    const { upi, reason, reference, urls } = input;
    const { written } = await this.#journal.append(
      (newer) => this.#absorb(newer),
      () => {
        const standing = this.book.active(upi);
        if (standing !== null) throw new ClearanceConflictError(upi, standing.id);
        const record: CorrectionRecord = { type: 'clearance', id: newClearanceId(), upi, reason, reference, urls: [...new Set(urls)], by: byOf(actor), at: this.#at() };
        return { record, result: null };
      },
    );
    const made = written as CorrectionRecord & { type: 'clearance' };
    this.#applyOwn(made);
    await this.#audit.append({ actor, action: 'clearance.created', target: made.id, details: { upi, reason, reference, urls: made.urls.length } }, new Date(made.at));
    return this.book.clearance(made.id)!;
  }

  /** End a clearance in force; an ended one is returned unchanged, and an unknown id gives null. */
  async end(id: string, reason: string | null, actor: AuditActor): Promise<ClearanceRecord | null> {
    const { written } = await this.#journal.append(
      (newer) => this.#absorb(newer),
      () => {
        const found = this.book.clearance(id);
        const record: CorrectionRecord | null = found === null || found.ended_at !== null ? null : { type: 'clearance_end', id, reason, by: byOf(actor), at: this.#at() };
        return { record, result: null };
      },
    );
    if (written !== null) {
      this.#applyOwn(written);
      const ended = this.book.clearance(id)!;
      await this.#audit.append({ actor, action: 'clearance.ended', target: id, details: { upi: ended.upi, reason } }, new Date(written.at));
    }
    return this.book.clearance(id);
  }

  #absorb(entries: readonly JournalEntry[]): void {
    for (const { record, line } of entries) {
      for (const upi of this.book.apply(record, `${this.#journal.path}, line ${line}`)) this.#changed.add(upi);
    }
  }

  #applyOwn(record: CorrectionRecord): void {
    for (const upi of this.book.apply(record, `${this.#journal.path}, the line just written`)) this.#changed.add(upi);
  }

  #at(): string {
    return new Date(this.#now()).toISOString();
  }
}

function byOf(actor: AuditActor): string {
  return actor.key_id ?? CLI_BY;
}
