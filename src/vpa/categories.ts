/**
 * The spec's enumerations, with the small integer codes the snapshot stores
 * them as. Codes are part of the snapshot format: append, never renumber.
 */
export const RISK_CATEGORIES = ['mule', 'gambling', 'phishing', 'scam', 'nbfc_impersonation'] as const;
export type RiskCategory = (typeof RISK_CATEGORIES)[number];

export const SOURCE_CATEGORIES = ['gambling', 'phishing', 'scam', 'telegram'] as const;
export type SourceCategory = (typeof SOURCE_CATEGORIES)[number];

export function riskCategoryCode(name: string): number {
  return (RISK_CATEGORIES as readonly string[]).indexOf(name);
}

export function sourceCategoryCode(name: string): number {
  return (SOURCE_CATEGORIES as readonly string[]).indexOf(name);
}

/** Risk category assumed for evidence that names none, by source category code. */
export const DEFAULT_RISK_BY_SOURCE: readonly number[] = [
  riskCategoryCode('gambling'), // gambling page
  riskCategoryCode('phishing'), // phishing page
  riskCategoryCode('scam'), // scam page
  riskCategoryCode('scam'), // telegram channel
];

/**
 * Tie-break for "the category with most evidence": the more harmful reading
 * wins, so a tie between mule and gambling is reported as mule. Listed as
 * codes, most preferred first.
 */
export const RISK_TIE_ORDER: readonly number[] = ['mule', 'nbfc_impersonation', 'phishing', 'scam', 'gambling'].map(
  riskCategoryCode,
);

/** Tie-break for a url seen under several source categories; most preferred first. */
export const SOURCE_TIE_ORDER: readonly number[] = ['phishing', 'scam', 'gambling', 'telegram'].map(sourceCategoryCode);

/** Rank of each code in a tie order (lower wins); built once so tie-breaks are a table read. */
export function rankTable(order: readonly number[]): Uint8Array {
  const rank = new Uint8Array(order.length);
  order.forEach((code, position) => {
    rank[code] = position;
  });
  return rank;
}

export const RISK_RANK = rankTable(RISK_TIE_ORDER);
export const SOURCE_RANK = rankTable(SOURCE_TIE_ORDER);

/**
 * The category with the highest of `length` counts from `offset`; ties go
 * to the lower rank (RISK_RANK, SOURCE_RANK). The build picks each
 * "category with most evidence" with it, and a snapshot loader checks
 * stored counts against stored categories with it.
 */
export function dominant(counts: ArrayLike<number>, offset: number, length: number, rank: Uint8Array): number {
  let best = 0;
  for (let c = 1; c < length; c++) {
    const count = counts[offset + c]!;
    const bestCount = counts[offset + best]!;
    if (count > bestCount || (count === bestCount && rank[c]! < rank[best]!)) best = c;
  }
  return best;
}
