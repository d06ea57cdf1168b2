import { NOT_FOUND } from '../common/brand.js';
import type { ByteScratch } from '../common/byte-scratch.js';
import type { Intelligence } from '../engine/intelligence.js';
import { clearedVerdictBytes, verdictJson } from './answer-json.js';

/**
 * The JSON of the verdict for one syntactically valid VPA, from `intel`.
 * Most payees screened are unknown, and a CLEARED verdict is a constant
 * around the VPA: it is written as bytes into `out` (valid until `out` is
 * written again), without building the verdict object or a string. A
 * FLAGGED verdict is built and written as text.
 */
export function answerSingle(intel: Intelligence, upi: string, out: ByteScratch): string | Uint8Array {
  const id = intel.lookup(upi);
  return id === NOT_FOUND ? clearedVerdictBytes(out, upi) : verdictJson(intel.flaggedVerdict(id, upi));
}
