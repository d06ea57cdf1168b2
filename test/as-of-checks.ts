import assert from 'node:assert/strict';
import { answerBatchBody } from '../src/api/batch-answer.js';
import { verdictJson } from '../src/api/answer-json.js';
import { answerSingle } from '../src/api/single-answer.js';
import { ByteScratch } from '../src/common/byte-scratch.js';
import type { ServingView } from '../src/engine/serving-view.js';
import type { AnswerHistory } from '../src/history/answer-changes.js';
import { pastBatchJson, pastVerdict } from '../src/history/past-verdicts.js';
import { ASKED } from './delta-fixtures.js';

const scratch = new ByteScratch(1 << 16);

/**
 * As of the instant each state of `states` (when it began, and the view it
 * served, in order) began, and of the last instant before the next, the
 * history tells every answer to ASKED as that view served it, byte for
 * byte, alone and in a batch.
 */
export async function assertToldAsOf(history: AnswerHistory, states: readonly (readonly [number, ServingView])[]): Promise<void> {
  for (const [i, [from, served]] of states.entries()) {
    const until = states[i + 1]?.[0] ?? from + 1;
    for (const instant of new Set([from, until - 1])) {
      const past = await Promise.all(ASKED.map((upi) => history.answerAt(upi, instant)));
      for (const [k, upi] of ASKED.entries()) {
        assert.equal(verdictJson(pastVerdict(upi, past[k]!)), Buffer.from(answerSingle(served, upi, scratch)).toString('utf8'), `${upi} as of ${instant}`);
      }
      const batch = answerBatchBody(served, Buffer.from(JSON.stringify({ upis: ASKED })), scratch);
      assert.ok(batch instanceof Uint8Array);
      assert.equal(pastBatchJson(ASKED, past), Buffer.from(batch).toString('utf8'), `the batch as of ${instant}`);
    }
  }
}
