import { NOT_FOUND } from '../common/brand.js';
import type { ByteScratch } from '../common/byte-scratch.js';
import type { ServingView } from '../engine/serving-view.js';
import { clearedVerdictBytes, verdictJson } from './answer-json.js';
import { flaggedVerdictBytes } from './flagged-verdict-bytes.js';

/**
 * The JSON of the verdict for one syntactically valid VPA, from `view`,
 * written as bytes into `out` (valid until `out` is written again) without
 * building the verdict object or a string: a CLEARED verdict is a constant
 * around the VPA, a FLAGGED one is read off the arrays of the snapshot or,
 * for a VPA in the live delta, of the delta. Only a flagged answer too long
 * for `out` is built and written as text.
 */
export function answerSingle(view: ServingView, upi: string, out: ByteScratch): string | Uint8Array {
  const id = view.locate(upi);
  if (id === NOT_FOUND) return clearedVerdictBytes(out, upi);
  const found = view.located;
  return flaggedVerdictBytes(out, found, id, upi) ?? verdictJson(found.flaggedVerdict(id, upi));
}
