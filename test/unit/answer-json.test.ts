import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { batchItemJson, batchResponseJson, clearedVerdictBytes, jsonString, verdictJson } from '../../src/api/answer-json.js';
import { ByteScratch } from '../../src/common/byte-scratch.js';
import { clearedVerdict } from '../../src/engine/snapshot-view.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../../src/vpa/categories.js';
import type { BatchItem, VpaVerdict } from '../../src/engine/verdict.js';

// Any text, including quotes, backslashes, control chars, non-ASCII and lone surrogates.
const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ maxLength: 40 }), fc.constantFrom('a@ybl', 'https://t.me/x"y\\z', '\u2028', '\ud800'));
const iso = fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString());
const confidence = fc.integer({ min: 0, max: 10_000 }).map((n) => n / 10_000);
const count = fc.nat({ max: 1_000_000 });
const clusterId = fc.integer({ min: 1, max: 0xffffffff }).map((n) => `MC-${n}`);

const flagged: fc.Arbitrary<VpaVerdict> = fc.record({
  upi: anyText,
  status: fc.constant('FLAGGED' as const),
  confidence,
  risk_category: fc.constantFrom(...RISK_CATEGORIES),
  cluster_id: fc.option(clusterId, { nil: null }),
  cluster_size: count,
  first_seen: iso,
  last_seen: iso,
  sources: fc.array(
    fc.record({ url: anyText, category: fc.constantFrom(...SOURCE_CATEGORIES), captured_at: iso, screenshot_available: fc.boolean() }),
    { maxLength: 5 },
  ),
  evidence_count: count,
});
const verdict = fc.oneof(flagged, anyText.map((upi) => clearedVerdict(upi)));
const item: fc.Arbitrary<BatchItem> = verdict.map(({ sources: _s, first_seen: _f, last_seen: _l, ...rest }) => rest);

test('verdict JSON is exactly what JSON.stringify writes (property)', () => {
  fc.assert(fc.property(verdict, (v) => assert.equal(verdictJson(v), JSON.stringify(v))), { numRuns: 2000 });
});

test('batch item and batch response JSON are exactly what JSON.stringify writes (property)', () => {
  fc.assert(fc.property(item, (i) => assert.equal(batchItemJson(i), JSON.stringify(i))), { numRuns: 1000 });
  fc.assert(
    fc.property(fc.array(item, { maxLength: 100 }), (results) => {
      const flaggedCount = results.filter((r) => r.status === 'FLAGGED').length;
      const response = { results, total: results.length, flagged_count: flaggedCount, cleared_count: results.length - flaggedCount };
      assert.equal(batchResponseJson(response), JSON.stringify(response));
    }),
    { numRuns: 200 },
  );
});

test('the CLEARED verdict written as bytes is verdictJson of the CLEARED verdict in UTF-8, whatever was written before (property)', () => {
  const out = new ByteScratch(4096);
  out.text('left over from the answer before');
  fc.assert(
    fc.property(anyText, (upi) => assert.deepEqual(Buffer.from(clearedVerdictBytes(out, upi)), Buffer.from(verdictJson(clearedVerdict(upi)), 'utf8'))),
  );
});

test('jsonString escapes what JSON needs escaped and passes plain text through', () => {
  for (const text of ['', 'a@ybl', 'say "hi"', 'back\\slash', 'line\nbreak', '\u0000', 'é', '\ud83d\ude00', '\udfff', '\u007f']) {
    assert.equal(jsonString(text), JSON.stringify(text));
  }
});
