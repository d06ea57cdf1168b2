import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { batchResponseJson } from '../../src/api/answer-json.js';
import { BATCH_ANSWER_BOUND, answerBatchBody } from '../../src/api/batch-answer.js';
import { HttpError } from '../../src/api/http-error.js';
import { ByteScratch } from '../../src/common/byte-scratch.js';
import { CONFIDENCE_SCALE } from '../../src/engine/snapshot-data.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { VpaIndex } from '../../src/engine/vpa-index.js';
import { MAX_HANDLE_LENGTH, MAX_PROVIDER_LENGTH } from '../../src/vpa/vpa.js';
import { fakeSnapshot } from '../fixtures/fake-snapshot.js';

// A batch answer is written as bytes as it is looked up: it must be, byte
// for byte, batchResponseJson of the items the view gives, and fit in
// BATCH_ANSWER_BOUND whatever the VPAs and fields.

const VPAS = 60;
const base = fakeSnapshot(VPAS, { seed: 11 });
const index = new VpaIndex(base);
const known = Array.from({ length: VPAS }, (_, id) => index.keyOf(id));
// The largest numbers a snapshot can hold, on some VPAs.
const view = new ServingView(
  new SnapshotView({
    ...base,
    evidenceCount: base.evidenceCount.map((n, i) => (i % 3 === 0 ? 0xffffffff : n)),
    clusterNumber: base.clusterNumber.map((_, c) => 0xffffffff - c),
    confidence: base.confidence.map((_, i) => (i * 977) % (CONFIDENCE_SCALE + 1)),
  }),
);

const handleChar = fc.constantFrom(...'abcXYZ019._-');
const providerChar = fc.constantFrom(...'okicibYL7');
const unknown = fc
  .tuple(fc.array(handleChar, { minLength: 1, maxLength: MAX_HANDLE_LENGTH }), fc.constantFrom('y', 'Z'), fc.array(providerChar, { minLength: 1, maxLength: MAX_PROVIDER_LENGTH - 1 }))
  .map(([h, first, p]) => `${h.join('')}@${first}${p.join('')}`);
// A known VPA as a user types it: as stored, upper-cased or capitalised.
const knownAsTyped = fc.tuple(fc.constantFrom(...known), fc.integer({ min: 0, max: 2 })).map(([upi, how]) => (how === 0 ? upi : how === 1 ? upi.toUpperCase() : upi[0]!.toUpperCase() + upi.slice(1)));

/** What the text answer writes for these VPAs. */
function expectedText(upis: readonly string[]): string {
  const results = upis.map((upi) => view.batchItem(upi));
  const flagged = results.filter((r) => r.status === 'FLAGGED').length;
  return batchResponseJson({ results, total: results.length, flagged_count: flagged, cleared_count: results.length - flagged });
}

test('a batch answer written as bytes is batchResponseJson of its items, and fits its bound (property)', () => {
  const out = new ByteScratch(BATCH_ANSWER_BOUND);
  fc.assert(
    fc.property(fc.array(fc.oneof(knownAsTyped, unknown), { minLength: 1, maxLength: 100 }), (upis) => {
      out.clear().text('left over from the answer before');
      const answer = answerBatchBody(view, Buffer.from(JSON.stringify({ upis })), out);
      assert.ok(answer instanceof Uint8Array, 'answered');
      assert.equal(Buffer.from(answer).toString('latin1'), expectedText(upis));
    }),
    { numRuns: 300 },
  );
});

test('a batch of a hundred of the longest VPAs, all flagged or none, fits its bound', () => {
  const out = new ByteScratch(BATCH_ANSWER_BOUND);
  const longest = `${'a'.repeat(MAX_HANDLE_LENGTH)}@${'z'.repeat(MAX_PROVIDER_LENGTH)}`;
  for (const upis of [Array.from({ length: 100 }, () => longest), Array.from({ length: 100 }, (_, i) => known[i % VPAS]!)]) {
    const answer = answerBatchBody(view, Buffer.from(JSON.stringify({ vpas: upis })), out);
    assert.ok(answer instanceof Uint8Array);
    assert.ok(answer.length <= BATCH_ANSWER_BOUND);
    assert.equal(Buffer.from(answer).toString('latin1'), expectedText(upis));
  }
});

test('a refused batch is the error to answer, and writes no answer', () => {
  const out = new ByteScratch(BATCH_ANSWER_BOUND);
  for (const [body, status] of [['', 400], ['{', 400], ['{"upis":[1]}', 422], ['{"upis":[]}', 400], ['{"upis":["no-at"]}', 400]] as const) {
    const answer = answerBatchBody(view, Buffer.from(body), out);
    assert.ok(answer instanceof HttpError, body);
    assert.equal(answer.status, status, body);
  }
});
