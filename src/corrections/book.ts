import { CorrectionJournalError } from '../common/errors.js';
import { lowerBound } from '../common/lower-bound.js';
import type { ActiveClearance, ClearanceRecord, CorrectionState } from '../service/corrections.js';
import type { CorrectionRecord } from './records.js';

/** A page of clearances: a cursor this book did not hand out gives `bad-cursor`. */
export type ClearancePage = { readonly clearances: readonly ClearanceRecord[]; readonly nextCursor: string | null } | 'bad-cursor';

export interface ClearanceQuery {
  /** Only this (canonical) VPA's clearances; null for all. */
  readonly upi: string | null;
  /** The id of the last clearance of the page before; null for the first page. */
  readonly cursor: string | null;
  readonly limit: number;
}

interface Clearance {
  record: ClearanceRecord;
  readonly createdAt: number;
  readonly urls: ReadonlySet<string>;
}

/**
 * The corrections in force, as the journal's records make them, applied in
 * journal order: the retracted evidence ids, and every clearance made, in
 * force or ended. A record that contradicts those before it (an end of a
 * clearance never made, a second clearance of a VPA with one in force) is
 * refused: records are decided under the journal's lock, after every
 * record before them, so no writer of this service makes one.
 */
export class CorrectionBook {
  readonly #retracted = new Set<string>();
  /** The copy of #retracted handed out in `state`, until a retraction changes it: a clearance need not copy 100,000 ids. */
  #retractedCopy: ReadonlySet<string> | null = null;
  /** Every clearance, in the order made (the list's order and its cursors). */
  readonly #clearances: Clearance[] = [];
  readonly #byId = new Map<string, number>();
  /** Positions in #clearances of each VPA's clearances. */
  readonly #byUpi = new Map<string, number[]>();
  /** The clearance in force of each VPA. */
  readonly #active = new Map<string, Clearance>();
  /** The state handed out, until a record changes it: a copy, so that what the engine holds never changes under it. */
  #state: CorrectionState | null = null;
  /** The VPAs each record applied so far changed, in journal order: CorrectionState.sequence is its length. */
  readonly #changed: (readonly string[])[] = [];

  /**
   * Apply one record; returns the VPAs whose counting evidence it changes.
   * `where` names the record in an error.
   */
  apply(record: CorrectionRecord, where: string): string[] {
    const upis = this.#applyRecord(record, where);
    this.#changed.push(upis);
    this.#state = null;
    return upis;
  }

  /** The VPAs changed by the records applied after the first `sequence` (CorrectionSource.vpasSince). */
  vpasSince(sequence: number): string[] {
    return [...new Set(this.#changed.slice(sequence).flat())];
  }

  #applyRecord(record: CorrectionRecord, where: string): string[] {
    const refuse = (why: string) => new CorrectionJournalError(`${where}: ${why}`);
    switch (record.type) {
      case 'retraction': {
        const upis = new Set<string>();
        for (const item of record.evidence) {
          if (this.#retracted.has(item.id)) continue;
          this.#retracted.add(item.id);
          this.#retractedCopy = null;
          upis.add(item.upi);
        }
        if (upis.size > 0) this.#state = null;
        return [...upis];
      }
      case 'clearance': {
        if (this.#byId.has(record.id)) throw refuse(`clearance ${record.id} is made twice`);
        const standing = this.#active.get(record.upi);
        if (standing !== undefined) throw refuse(`clearance ${record.id} of ${record.upi}, which has ${standing.record.id} in force`);
        const clearance: Clearance = {
          record: { id: record.id, upi: record.upi, reason: record.reason, reference: record.reference, created_at: record.at, created_by: record.by, ended_at: null, ended_by: null },
          createdAt: Date.parse(record.at),
          urls: new Set(record.urls),
        };
        this.#byId.set(record.id, this.#clearances.length);
        const positions = this.#byUpi.get(record.upi) ?? [];
        positions.push(this.#clearances.length);
        this.#byUpi.set(record.upi, positions);
        this.#clearances.push(clearance);
        this.#active.set(record.upi, clearance);
        this.#state = null;
        return [record.upi];
      }
      case 'clearance_end': {
        const position = this.#byId.get(record.id);
        if (position === undefined) throw refuse(`the end of clearance ${record.id}, which was never made`);
        const clearance = this.#clearances[position]!;
        if (clearance.record.ended_at !== null) return [];
        clearance.record = { ...clearance.record, ended_at: record.at, ended_by: record.by };
        this.#active.delete(clearance.record.upi);
        this.#state = null;
        return [clearance.record.upi];
      }
    }
  }

  /** The corrections in force, for the engine; the same object until a record changes them. */
  get state(): CorrectionState {
    if (this.#state === null) {
      const clearances = new Map<string, ActiveClearance>();
      for (const [upi, c] of this.#active) clearances.set(upi, { createdAt: c.createdAt, urls: c.urls });
      this.#retractedCopy ??= new Set(this.#retracted);
      this.#state = { sequence: this.#changed.length, retracted: this.#retractedCopy, clearances };
    }
    return this.#state;
  }

  isRetracted(id: string): boolean {
    return this.#retracted.has(id);
  }

  get retractedCount(): number {
    return this.#retracted.size;
  }

  clearance(id: string): ClearanceRecord | null {
    const position = this.#byId.get(id);
    return position === undefined ? null : this.#clearances[position]!.record;
  }

  /** The clearance in force of a canonical VPA, if any. */
  active(upi: string): ClearanceRecord | null {
    return this.#active.get(upi)?.record ?? null;
  }

  /** Clearances in the order made, after the cursor's. */
  list(query: ClearanceQuery): ClearancePage {
    let positions: readonly number[] | null = null;
    if (query.upi !== null) positions = this.#byUpi.get(query.upi) ?? [];
    let from = 0;
    if (query.cursor !== null) {
      const after = this.#byId.get(query.cursor);
      if (after === undefined) return 'bad-cursor';
      const within = positions;
      from = within === null ? after + 1 : lowerBound(within.length, (i) => within[i]! <= after);
    }
    const total = positions === null ? this.#clearances.length : positions.length;
    const to = Math.min(total, from + query.limit);
    const clearances: ClearanceRecord[] = [];
    for (let i = from; i < to; i++) clearances.push(this.#clearances[positions === null ? i : positions[i]!]!.record);
    return { clearances, nextCursor: to < total ? clearances.at(-1)!.id : null };
  }
}

