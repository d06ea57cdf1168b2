import { NOT_FOUND } from '../common/brand.js';
import type { Intelligence } from '../engine/intelligence.js';
import { clearedVerdictJson, verdictJson } from './answer-json.js';

/**
 * The JSON text of the verdict for one syntactically valid VPA, from `intel`.
 * Most payees screened are unknown, and a CLEARED verdict is a constant
 * around the VPA: it is written without building the verdict object.
 */
export function answerSingle(intel: Intelligence, upi: string): string {
  const id = intel.lookup(upi);
  return id === NOT_FOUND ? clearedVerdictJson(upi) : verdictJson(intel.flaggedVerdict(id, upi));
}
