/**
 * A copy of src/api/advice.ts: the spec's advice table.
 * Written by scripts/generate-client-sources.ts; do not edit:
 * `npm run generate:client` rewrites this file.
 */

/**
 * The spec's recommended client actions (What the service does, 7): a
 * verdict's status and confidence give a band, and the band an action for a
 * payment flow and for merchant onboarding. Advice to callers; the service
 * enforces none of it.
 *
 * Pure and free of Node imports: the console imports it, and a client
 * library will.
 */

export type VerdictStatus = 'FLAGGED' | 'CLEARED';
export type AdviceFlow = 'payment' | 'onboarding';

/** The table's rows: three confidence bands of a FLAGGED verdict, and CLEARED. */
export const CONFIDENCE_BANDS = ['high', 'medium', 'low', 'cleared'] as const;
export type ConfidenceBand = (typeof CONFIDENCE_BANDS)[number];

/**
 * Lowest confidence of the high and medium bands. The table writes the bands
 * as 0.85-1.0, 0.60-0.84 and 0.0-0.59; confidences carry four decimals, so a
 * value between two rows (0.8499) belongs to the lower one.
 */
export const HIGH_BAND_FLOOR = 0.85;
export const MEDIUM_BAND_FLOOR = 0.6;

/** How the table writes each band. */
export const BAND_LABELS: Readonly<Record<ConfidenceBand, string>> = {
  high: '0.85–1.0',
  medium: '0.60–0.84',
  low: '0.0–0.59',
  cleared: 'CLEARED',
};

const ACTIONS: Readonly<Record<ConfidenceBand, Readonly<Record<AdviceFlow, string>>>> = {
  cleared: { payment: 'allow', onboarding: 'proceed' },
  high: { payment: 'block, alert fraud team', onboarding: 'reject' },
  medium: { payment: 'hold for manual review', onboarding: 'enhanced due diligence' },
  low: { payment: 'allow with enhanced monitoring', onboarding: 'approve with monitoring and scheduled re-screening' },
};

/**
 * The band of a verdict. A FLAGGED verdict must carry a confidence from 0 to
 * 1; a CLEARED one's confidence is ignored (the spec makes it null).
 */
export function confidenceBand(status: VerdictStatus, confidence: number | null): ConfidenceBand {
  if (status === 'CLEARED') return 'cleared';
  if (status !== 'FLAGGED') throw new RangeError(`status must be FLAGGED or CLEARED, got ${String(status)}`);
  if (confidence === null || !(confidence >= 0 && confidence <= 1)) {
    throw new RangeError(`a FLAGGED verdict's confidence must be from 0 to 1, got ${String(confidence)}`);
  }
  if (confidence >= HIGH_BAND_FLOOR) return 'high';
  if (confidence >= MEDIUM_BAND_FLOOR) return 'medium';
  return 'low';
}

/** The recommended action for a band in a flow. */
export function bandAction(band: ConfidenceBand, flow: AdviceFlow): string {
  return ACTIONS[band][flow];
}

/** The recommended action for a verdict in a flow. */
export function recommendedAction(status: VerdictStatus, confidence: number | null, flow: AdviceFlow): string {
  return bandAction(confidenceBand(status, confidence), flow);
}
