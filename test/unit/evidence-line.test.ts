import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { evidenceItem, evidenceLine, type EvidenceRecord } from '../../src/evidence/record.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../../src/vpa/categories.js';

// Any string, with what JSON escapes (quotes, backslashes, control characters, lone surrogates) made likely.
const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('"', '\\', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udfff', 'a', ' ') }));
const record: fc.Arbitrary<EvidenceRecord> = fc.record({
  evidenceId: text,
  upi: text,
  url: text,
  sourceCategory: fc.integer({ min: 0, max: SOURCE_CATEGORIES.length - 1 }),
  riskCategory: fc.integer({ min: 0, max: RISK_CATEGORIES.length - 1 }),
  // Years from before 1000 to after 9999, with and without milliseconds.
  capturedAt: fc.oneof(fc.integer({ min: -62_198_755_200_000, max: 253_402_300_799_999 }), fc.integer({ min: 0, max: 4_000_000_000 }).map((s) => s * 1000)),
  screenshot: fc.boolean(),
});

test('a record as a line is JSON.stringify of its contract item, to the byte', () => {
  fc.assert(
    fc.property(record, (r) => assert.equal(evidenceLine(r), JSON.stringify(evidenceItem(r)))),
    { numRuns: 20_000 },
  );
});
