import type { ActiveClearance, CorrectionSource, CorrectionState } from '../src/evidence/corrections.js';
import { countsUnderClearance } from '../src/evidence/corrections.js';
import type { EvidenceInput } from './helpers.js';

/**
 * Corrections kept in memory, as a desk records them: a CorrectionSource
 * for an engine under test, and the model of which evidence counts that
 * the engine's answers are compared with (a full build of `counting()`).
 */
export class MemoryCorrections implements CorrectionSource {
  #state: CorrectionState = { sequence: 0, retracted: new Set(), clearances: new Map() };
  readonly #log: (readonly string[])[] = [];
  /** Every item stored, by id, as the first ingest of that id had it (later ones are duplicates). */
  readonly #stored = new Map<string, EvidenceInput>();

  state(): CorrectionState {
    return this.#state;
  }

  vpasSince(sequence: number): readonly string[] {
    return [...new Set(this.#log.slice(sequence).flat())];
  }

  /** Items stored, in the order they were ingested: the first of each id. */
  stored(items: readonly EvidenceInput[]): void {
    for (const item of items) if (!this.#stored.has(item.evidence_id)) this.#stored.set(item.evidence_id, item);
  }

  /** Record a retraction of the `ids` the engine located (id → VPA); returns the VPAs named. */
  retract(located: ReadonlyMap<string, string>): string[] {
    const retracted = new Set(this.#state.retracted);
    for (const id of located.keys()) retracted.add(id);
    return this.#record({ ...this.#state, retracted }, [...new Set(located.values())]);
  }

  /** Record a clearance of `upi` made at `createdAt`: its sources then are those of its counting evidence. */
  clear(upi: string, createdAt: number): string[] {
    const urls = new Set(this.counting().filter((item) => item.upi === upi).map((item) => item.url));
    const clearances = new Map(this.#state.clearances);
    clearances.set(upi, { createdAt, urls } satisfies ActiveClearance);
    return this.#record({ ...this.#state, clearances }, [upi]);
  }

  endClearance(upi: string): string[] {
    const clearances = new Map(this.#state.clearances);
    clearances.delete(upi);
    return this.#record({ ...this.#state, clearances }, [upi]);
  }

  /** The stored items that count under the corrections in force. */
  counting(): EvidenceInput[] {
    return [...this.#stored.values()].filter(
      (item) => !this.#state.retracted.has(item.evidence_id) && countsUnderClearance(this.#state.clearances.get(item.upi), Date.parse(item.captured_at), item.url),
    );
  }

  /**
   * The urls on which corrections since the last compaction (`compacted`)
   * took or gave back evidence: their category, which spans VPAs, waits for
   * the next compaction (docs/design.md, "Corrections in the engine").
   */
  urlsCorrected(): Set<string> {
    const upis = new Set(this.#log.slice(this.#compactedAt).flat());
    return new Set([...this.#stored.values()].filter((item) => upis.has(item.upi)).map((item) => item.url));
  }

  /** A compaction has folded every correction recorded so far in. */
  compacted(): void {
    this.#compactedAt = this.#log.length;
  }

  #compactedAt = 0;

  #record(next: Omit<CorrectionState, 'sequence'>, upis: string[]): string[] {
    this.#log.push(upis);
    this.#state = { ...next, sequence: this.#log.length };
    return upis;
  }
}
