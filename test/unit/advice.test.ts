import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BAND_LABELS, CONFIDENCE_BANDS, bandAction, confidenceBand, recommendedAction, type ConfidenceBand } from '../../src/api/advice.js';

// Confidences as the service writes them: four decimals, 0 to 1.
const confidence = fc.integer({ min: 0, max: 10_000 }).map((units) => units / 10_000);

describe('the advice table', () => {
  it('puts every confidence in the band whose written range holds it at two decimals, rounded down', () => {
    fc.assert(
      fc.property(confidence, (c) => {
        const hundredths = Math.floor(c * 100 + 1e-9);
        const expected: ConfidenceBand = hundredths >= 85 ? 'high' : hundredths >= 60 ? 'medium' : 'low';
        assert.equal(confidenceBand('FLAGGED', c), expected, String(c));
      }),
    );
  });

  it('never gives a lower band to a higher confidence', () => {
    const rank = (band: ConfidenceBand) => ['low', 'medium', 'high'].indexOf(band);
    fc.assert(
      fc.property(confidence, confidence, (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        assert.ok(rank(confidenceBand('FLAGGED', lo)) <= rank(confidenceBand('FLAGGED', hi)), `${lo} ${hi}`);
      }),
    );
  });

  it('places the edges of the written ranges', () => {
    assert.equal(confidenceBand('FLAGGED', 1), 'high');
    assert.equal(confidenceBand('FLAGGED', 0.85), 'high');
    assert.equal(confidenceBand('FLAGGED', 0.8499), 'medium');
    assert.equal(confidenceBand('FLAGGED', 0.84), 'medium');
    assert.equal(confidenceBand('FLAGGED', 0.6), 'medium');
    assert.equal(confidenceBand('FLAGGED', 0.5999), 'low');
    assert.equal(confidenceBand('FLAGGED', 0), 'low');
  });

  it('gives CLEARED its own row whatever the confidence field holds', () => {
    assert.equal(confidenceBand('CLEARED', null), 'cleared');
    assert.equal(recommendedAction('CLEARED', null, 'payment'), 'allow');
    assert.equal(recommendedAction('CLEARED', null, 'onboarding'), 'proceed');
  });

  it('states the spec’s action for each band and flow', () => {
    assert.equal(recommendedAction('FLAGGED', 0.9, 'payment'), 'block, alert fraud team');
    assert.equal(recommendedAction('FLAGGED', 0.9, 'onboarding'), 'reject');
    assert.equal(recommendedAction('FLAGGED', 0.7, 'payment'), 'hold for manual review');
    assert.equal(recommendedAction('FLAGGED', 0.7, 'onboarding'), 'enhanced due diligence');
    assert.equal(recommendedAction('FLAGGED', 0.2, 'payment'), 'allow with enhanced monitoring');
    assert.equal(recommendedAction('FLAGGED', 0.2, 'onboarding'), 'approve with monitoring and scheduled re-screening');
    for (const band of CONFIDENCE_BANDS) {
      assert.ok(BAND_LABELS[band].length > 0);
      assert.ok(bandAction(band, 'payment').length > 0);
    }
  });

  it('refuses a FLAGGED verdict without a confidence from 0 to 1', () => {
    for (const bad of [null, -0.01, 1.01, Number.NaN]) {
      assert.throws(() => confidenceBand('FLAGGED', bad), RangeError, String(bad));
    }
    assert.throws(() => confidenceBand('MAYBE' as 'FLAGGED', 0.5), RangeError);
  });
});
