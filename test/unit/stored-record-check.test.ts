import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { evidenceItem, storedRecordProblem, validateEvidence, type EvidenceRecord } from '../../src/evidence/record.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../../src/vpa/categories.js';

// A row of the store's log is checked as a record (storedRecordProblem),
// not by writing the item it stands for and validating that: the two must
// agree on every record, valid or not.

/** What the old way accepted: the item validates and gives the same record back. */
function acceptedAsItem(record: EvidenceRecord): boolean {
  const checked = validateEvidence(evidenceItem(record));
  if (!checked.ok) return false;
  const r = checked.record;
  return r.evidenceId === record.evidenceId && r.upi === record.upi && r.url === record.url && r.sourceCategory === record.sourceCategory &&
    r.riskCategory === record.riskCategory && r.capturedAt === record.capturedAt && r.screenshot === record.screenshot;
}

const text = (parts: readonly string[]) => fc.array(fc.constantFrom(...parts), { minLength: 0, maxLength: 12 }).map((p) => p.join(''));
const handle = text(['a', 'Z', '9', '.', '-', '_', ' ', '\u0001', 'é', 'x']);
const record: fc.Arbitrary<EvidenceRecord> = fc.record({
  evidenceId: fc.oneof(text(['e', '1', '-', '\u0000', '\u007f', ' ']), fc.string({ minLength: 250, maxLength: 260 })),
  upi: fc.tuple(handle, fc.constantFrom('@', '@@', ''), fc.constantFrom('ybl', 'okicici', 'YBL', 'paytm', '', 'o k')).map(([h, at, p]) => `${h}${at}${p}`),
  url: fc.oneof(text(['https://', 't.me/', 'x', ' ', '\n', '\u007f']), fc.string({ minLength: 2040, maxLength: 2050 })),
  sourceCategory: fc.integer({ min: -1, max: SOURCE_CATEGORIES.length }),
  riskCategory: fc.integer({ min: -1, max: RISK_CATEGORIES.length }),
  capturedAt: fc.oneof(
    fc.integer({ min: -62_167_219_200_001, max: -62_167_219_199_000 }),
    fc.integer({ min: 253_402_300_799_000, max: 253_402_300_800_001 }),
    fc.integer({ min: -80_000_000_000_000, max: 300_000_000_000_000 }),
    fc.constant(1.5),
  ),
  screenshot: fc.boolean(),
});

test('a stored record is accepted exactly when the item it stands for validates back to it (property)', () => {
  fc.assert(
    fc.property(record, (r) => {
      assert.equal(storedRecordProblem(r) === null, acceptedAsItem(r), JSON.stringify(r));
    }),
    { numRuns: 5000 },
  );
});

test('a stored record says what is wrong with it', () => {
  const good: EvidenceRecord = { evidenceId: 'e-1', upi: 'mule.one@ybl', url: 'https://t.me/x', sourceCategory: 0, riskCategory: 0, capturedAt: Date.UTC(2026, 0, 1), screenshot: false };
  assert.equal(storedRecordProblem(good), null);
  assert.match(storedRecordProblem({ ...good, upi: 'Mule.One@ybl' })!, /lower-cased/);
  assert.match(storedRecordProblem({ ...good, upi: 'no-at-sign' })!, /not a valid VPA/);
  assert.match(storedRecordProblem({ ...good, evidenceId: '' })!, /evidence_id/);
  assert.match(storedRecordProblem({ ...good, url: ' ' })!, /url/);
  assert.match(storedRecordProblem({ ...good, sourceCategory: SOURCE_CATEGORIES.length })!, /source_category/);
  assert.match(storedRecordProblem({ ...good, riskCategory: -1 })!, /risk_category/);
  assert.match(storedRecordProblem({ ...good, capturedAt: Date.parse('+010000-01-01T00:00:00Z') })!, /four-digit year/);
});
