/**
 * What counts under corrections (docs/api.md, "Corrections"): a retraction
 * of evidence items and a clearance of a VPA are, with expiry, the only ways
 * an answer goes backwards. Builds, merges and the fleet's followers all
 * read the same CorrectionState.
 */

/** The corrections in force: what every build and merge reads to decide which evidence counts. */
export interface CorrectionState {
  /**
   * How many corrections were ever recorded (the desk's journal length):
   * a snapshot built under this state records it, and a server serving
   * that snapshot applies again only the corrections recorded after it.
   */
  readonly sequence: number;
  /** Retracted evidence ids: never count again, and stay duplicates when sent again. */
  readonly retracted: ReadonlySet<string>;
  /** Active clearances by canonical (lower-cased) VPA. */
  readonly clearances: ReadonlyMap<string, ActiveClearance>;
}

/** What a clearance in force suppresses of its VPA's evidence (counts). */
export interface ActiveClearance {
  /** When it was made, epoch ms: evidence captured at or before it does not count. */
  readonly createdAt: number;
  /** The VPA's source urls when it was made: their evidence does not count, whenever captured. */
  readonly urls: ReadonlySet<string>;
}

export const NO_CORRECTIONS: CorrectionState = { sequence: 0, retracted: new Set(), clearances: new Map() };

/**
 * Whether an evidence item of a VPA counts under the VPA's clearance
 * (undefined: none). Retraction is by id, and expiry by capture time; both
 * are checked where the id and the clock are at hand.
 */
export function countsUnderClearance(clearance: ActiveClearance | undefined, capturedAt: number, url: string): boolean {
  if (clearance === undefined) return true;
  return capturedAt > clearance.createdAt && !clearance.urls.has(url);
}


/**
 * Where a server reads the corrections from (the desk that records them):
 * the state in force, and which VPAs the corrections recorded after a
 * given sequence name, so that a snapshot built under an earlier state is
 * served with the later ones applied over it.
 */
export interface CorrectionSource {
  state(): CorrectionState;
  /** Canonical VPAs named by corrections recorded after `sequence` (a retraction names the VPAs of its items). */
  vpasSince(sequence: number): readonly string[];
}
