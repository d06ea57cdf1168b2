/**
 * The spec's recommended client actions (What the service does, 7), read
 * from a verdict. The table itself is the server's (advice-table.ts, a copy
 * of src/api/advice.ts); this adds stable identifiers for the actions, for
 * code to switch on, beside the table's words.
 *
 * | band | status | confidence | payment | onboarding |
 * |---|---|---|---|---|
 * | cleared | CLEARED | null | allow | proceed |
 * | high | FLAGGED | 0.85 to 1.0 | block_and_alert | reject |
 * | medium | FLAGGED | 0.60 to 0.84 | hold_for_review | enhanced_due_diligence |
 * | low | FLAGGED | 0.0 to 0.59 | allow_with_monitoring | approve_with_monitoring |
 */
import { bandAction, confidenceBand as bandOf, type AdviceFlow, type ConfidenceBand } from './advice-table.js';
import type { BatchItem } from './wire.js';

export { BAND_LABELS, CONFIDENCE_BANDS, HIGH_BAND_FLOOR, MEDIUM_BAND_FLOOR, type AdviceFlow, type ConfidenceBand } from './advice-table.js';

export type PaymentAction = 'allow' | 'block_and_alert' | 'hold_for_review' | 'allow_with_monitoring';
export type OnboardingAction = 'proceed' | 'reject' | 'enhanced_due_diligence' | 'approve_with_monitoring';

/** What the advice reads of a verdict (a single, batch or watchlist one). */
export type AdvisedVerdict = Pick<BatchItem, 'status' | 'confidence'>;

const PAYMENT: Readonly<Record<ConfidenceBand, PaymentAction>> = {
  cleared: 'allow',
  high: 'block_and_alert',
  medium: 'hold_for_review',
  low: 'allow_with_monitoring',
};

const ONBOARDING: Readonly<Record<ConfidenceBand, OnboardingAction>> = {
  cleared: 'proceed',
  high: 'reject',
  medium: 'enhanced_due_diligence',
  low: 'approve_with_monitoring',
};

/** The band of a verdict. A FLAGGED one must carry a confidence from 0 to 1 (RangeError otherwise). */
export function confidenceBand(verdict: AdvisedVerdict): ConfidenceBand {
  return bandOf(verdict.status, verdict.confidence);
}

/** The recommended action for `verdict` in a payment flow or merchant onboarding, as an identifier. */
export function recommendedAction(verdict: AdvisedVerdict, flow: 'payment'): PaymentAction;
export function recommendedAction(verdict: AdvisedVerdict, flow: 'onboarding'): OnboardingAction;
export function recommendedAction(verdict: AdvisedVerdict, flow: AdviceFlow): PaymentAction | OnboardingAction;
export function recommendedAction(verdict: AdvisedVerdict, flow: AdviceFlow): PaymentAction | OnboardingAction {
  return actions(flow)[confidenceBand(verdict)];
}

/** The same advice in the table's words ("hold for manual review"), for people. */
export function adviceText(verdict: AdvisedVerdict, flow: AdviceFlow): string {
  actions(flow);
  return bandAction(confidenceBand(verdict), flow);
}

function actions(flow: AdviceFlow): Readonly<Record<ConfidenceBand, PaymentAction | OnboardingAction>> {
  if (flow === 'payment') return PAYMENT;
  if (flow === 'onboarding') return ONBOARDING;
  throw new RangeError(`flow must be payment or onboarding, got ${String(flow)}`);
}
