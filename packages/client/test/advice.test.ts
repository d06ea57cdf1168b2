import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HIGH_BAND_FLOOR, MEDIUM_BAND_FLOOR, adviceText, confidenceBand, recommendedAction, type ConfidenceBand } from '../src/advice.js';

// The spec's table (What the service does, 7), row by row.
const TABLE = [
  ['CLEARED', null, 'cleared', 'allow', 'proceed', 'allow', 'proceed'],
  ['FLAGGED', 0.91, 'high', 'block_and_alert', 'reject', 'block, alert fraud team', 'reject'],
  ['FLAGGED', 0.72, 'medium', 'hold_for_review', 'enhanced_due_diligence', 'hold for manual review', 'enhanced due diligence'],
  ['FLAGGED', 0.3, 'low', 'allow_with_monitoring', 'approve_with_monitoring', 'allow with enhanced monitoring', 'approve with monitoring and scheduled re-screening'],
] as const;

test('every row of the advice table, as identifiers and in the table\'s words', () => {
  for (const [status, confidence, band, payment, onboarding, paymentText, onboardingText] of TABLE) {
    const verdict = { status, confidence };
    assert.equal(confidenceBand(verdict), band);
    assert.equal(recommendedAction(verdict, 'payment'), payment);
    assert.equal(recommendedAction(verdict, 'onboarding'), onboarding);
    assert.equal(adviceText(verdict, 'payment'), paymentText);
    assert.equal(adviceText(verdict, 'onboarding'), onboardingText);
  }
});

test('band boundaries: 0.85 and 1.0 high, 0.60 and 0.84 medium, 0.0 and 0.59 low; four-decimal values between rows go down', () => {
  const cases: [number, ConfidenceBand][] = [
    [1, 'high'],
    [0.85, 'high'],
    [0.8499, 'medium'],
    [0.84, 'medium'],
    [0.6, 'medium'],
    [0.5999, 'low'],
    [0.59, 'low'],
    [0, 'low'],
  ];
  for (const [confidence, band] of cases) assert.equal(confidenceBand({ status: 'FLAGGED', confidence }), band, String(confidence));
});

test('property: a FLAGGED band is the one whose floor is the highest at or below the confidence', () => {
  const fourDecimals = fc.integer({ min: 0, max: 10_000 }).map((n) => n / 10_000);
  fc.assert(
    fc.property(fc.oneof(fourDecimals, fc.double({ min: 0, max: 1, noNaN: true })), (confidence) => {
      const band = confidenceBand({ status: 'FLAGGED', confidence });
      const expected = confidence >= HIGH_BAND_FLOOR ? 'high' : confidence >= MEDIUM_BAND_FLOOR ? 'medium' : 'low';
      assert.equal(band, expected);
      // Monotone: more confidence never advises a milder payment action.
      const order = ['allow_with_monitoring', 'hold_for_review', 'block_and_alert'];
      const higher = Math.min(1, confidence + 0.01);
      assert.ok(
        order.indexOf(recommendedAction({ status: 'FLAGGED', confidence: higher }, 'payment')) >=
          order.indexOf(recommendedAction({ status: 'FLAGGED', confidence }, 'payment')),
      );
    }),
  );
});

test('property: CLEARED is allow / proceed whatever its confidence says', () => {
  fc.assert(
    fc.property(fc.option(fc.double({ noNaN: false })), (confidence) => {
      assert.equal(recommendedAction({ status: 'CLEARED', confidence }, 'payment'), 'allow');
      assert.equal(recommendedAction({ status: 'CLEARED', confidence }, 'onboarding'), 'proceed');
    }),
  );
});

test('a FLAGGED verdict without a confidence in [0, 1], an unknown status or flow: RangeError', () => {
  for (const confidence of [null, -0.1, 1.01, Number.NaN]) {
    assert.throws(() => confidenceBand({ status: 'FLAGGED', confidence }), RangeError);
  }
  assert.throws(() => confidenceBand({ status: 'MAYBE' as 'FLAGGED', confidence: 0.5 }), RangeError);
  assert.throws(() => recommendedAction({ status: 'CLEARED', confidence: null }, 'refund' as 'payment'), RangeError);
  assert.throws(() => adviceText({ status: 'CLEARED', confidence: null }, 'refund' as 'payment'), RangeError);
});
