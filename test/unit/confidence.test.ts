import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildInProcess, TEST_SCORED_AT, type EvidenceInput } from '../helpers.js';
import { recencyWeight, vpaConfidence, clusterConfidence } from '../../src/builder/scoring.js';

const upis = ['a@ybl', 'b@ybl', 'c@okaxis', 'd@paytm', 'e@ibl'];
const urls = ['https://t.me/one', 'https://bet.example', 'https://kyc.example', 'https://job.example/apply'];
const sourceCategories = ['gambling', 'phishing', 'scam', 'telegram'];
const riskCategories = [undefined, 'mule', 'gambling', 'phishing', 'scam', 'nbfc_impersonation'];
const DAY = 24 * 3600 * 1000;

const evidenceArb = fc.record({
  upi: fc.constantFrom(...upis),
  url: fc.constantFrom(...urls),
  source_category: fc.constantFrom(...sourceCategories),
  risk_category: fc.constantFrom(...riskCategories),
  // From three years before the scoring time to a week after it (clock skew in sources happens).
  captured_at: fc.integer({ min: -3 * 365, max: 7 }).map((days) => new Date(TEST_SCORED_AT + days * DAY).toISOString()),
  screenshot_available: fc.boolean(),
});

function withIds(items: readonly Omit<EvidenceInput, 'evidence_id'>[], prefix: string): EvidenceInput[] {
  return items.map((item, i) => {
    const out: EvidenceInput = { ...item, evidence_id: `${prefix}-${i}` } as EvidenceInput;
    if (out.risk_category === undefined) delete out.risk_category;
    return out;
  });
}

test('confidence never decreases when evidence is added (property, through the real build phases)', () => {
  fc.assert(
    fc.property(fc.array(evidenceArb, { minLength: 1, maxLength: 12 }), fc.array(evidenceArb, { minLength: 1, maxLength: 6 }), (base, extra) => {
      const before = buildInProcess(withIds(base, 'base'));
      const after = buildInProcess([...withIds(base, 'base'), ...withIds(extra, 'extra')]);
      for (const upi of upis) {
        const was = before.verdict(upi).confidence;
        if (was === null) continue;
        const now = after.verdict(upi).confidence!;
        assert.ok(now >= was, `${upi}: ${was} -> ${now}`);
      }
    }),
    { numRuns: 150 },
  );
});

test('re-sending evidence with the same ids changes no confidence', () => {
  fc.assert(
    fc.property(fc.array(evidenceArb, { minLength: 1, maxLength: 10 }), (base) => {
      const items = withIds(base, 'same');
      const once = buildInProcess(items);
      const twice = buildInProcess([...items, ...items]);
      for (const upi of upis) assert.deepEqual(twice.verdict(upi), once.verdict(upi));
    }),
    { numRuns: 60 },
  );
});

test('confidence stays within [0, 1] for extreme inputs', () => {
  assert.equal(vpaConfidence({ evidenceWeight: 0, distinctUrls: 0, distinctSourceCategories: 0, peers: 0 }), 0);
  const huge = vpaConfidence({ evidenceWeight: 1e9, distinctUrls: 1e6, distinctSourceCategories: 4, peers: 1e9 });
  assert.equal(huge, 10_000);
  assert.equal(clusterConfidence(10_000, 300, 50), 10_000);
  assert.ok(clusterConfidence(4_000, 2, 1) >= 4_000);
});

test('recency weight: full for fresh evidence, halfway to the floor after a year, never below the floor', () => {
  assert.equal(recencyWeight(TEST_SCORED_AT, TEST_SCORED_AT), 1);
  assert.equal(recencyWeight(TEST_SCORED_AT + DAY, TEST_SCORED_AT), 1, 'future-dated evidence counts as fresh');
  assert.ok(Math.abs(recencyWeight(TEST_SCORED_AT - 365 * DAY, TEST_SCORED_AT) - 0.625) < 1e-9);
  assert.ok(recencyWeight(0, TEST_SCORED_AT) >= 0.25);
});

test('calibration against the advice table: one fresh sighting is below review, a busy gang member is a block', () => {
  const one = vpaConfidence({ evidenceWeight: 1, distinctUrls: 1, distinctSourceCategories: 1, peers: 0 });
  assert.ok(one < 6_000, `single sighting ${one}`);
  const gang = vpaConfidence({ evidenceWeight: 3, distinctUrls: 2, distinctSourceCategories: 2, peers: 20 });
  assert.ok(gang >= 8_500, `gang member ${gang}`);
});

test('recency is counted in whole days: builds of one UTC day weigh evidence alike, the next day less', () => {
  const day = 24 * 3600 * 1000;
  const items: EvidenceInput[] = [
    { evidence_id: 'd1', upi: 'old@ybl', url: 'https://a.example', source_category: 'scam', risk_category: 'mule', captured_at: new Date(TEST_SCORED_AT - 200 * day).toISOString(), screenshot_available: false },
    { evidence_id: 'd2', upi: 'new@ybl', url: 'https://b.example', source_category: 'scam', risk_category: 'mule', captured_at: new Date(TEST_SCORED_AT + 3 * 3600_000).toISOString(), screenshot_available: false },
  ];
  const confidences = (scoredAt: number) => ['old@ybl', 'new@ybl'].map((upi) => buildInProcess(items, scoredAt).verdict(upi).confidence);
  // TEST_SCORED_AT is a day's start: a build at 01:00 and one at 23:59 of that day score alike.
  assert.deepEqual(confidences(TEST_SCORED_AT + 3600_000), confidences(TEST_SCORED_AT + day - 60_000));
  assert.equal(recencyWeight(TEST_SCORED_AT - 200 * day, TEST_SCORED_AT + day - 1), recencyWeight(TEST_SCORED_AT - 200 * day, TEST_SCORED_AT));
  // Evidence captured later in the day it is scored counts as fresh.
  assert.equal(recencyWeight(TEST_SCORED_AT + 3 * 3600_000, TEST_SCORED_AT + 5 * 3600_000), 1);
  const [oldToday] = confidences(TEST_SCORED_AT + 3600_000);
  const [oldLater] = confidences(TEST_SCORED_AT + 30 * day);
  assert.ok(oldLater! < oldToday!, `${oldLater} after a month, ${oldToday} today`);
});
