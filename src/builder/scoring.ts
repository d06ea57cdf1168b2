import { CONFIDENCE_SCALE } from '../engine/snapshot-data.js';
import { startOfUtcDay } from '../common/time.js';

/**
 * Confidence scoring. Everything here is documented in docs/scoring.md,
 * with worked examples; change both together.
 *
 * A VPA's confidence is a saturating function of an evidence score x:
 *
 *   confidence = 1 - exp(-x)
 *   x = 0.6  * Σ w(item)                  evidence items, each weighted by recency
 *     + 0.35 * (distinct urls - 1)         seen on several independent pages
 *     + 0.3  * (distinct source categories - 1)
 *     + 0.25 * ln(1 + min(peers, 50))      cluster context: other VPAs on its pages
 *
 *   w(item) = 0.25 + 0.75 * 2^(-age / 365 days), age = scoringDay(scoredAt) - captured_at (≥ 0)
 *
 * Every term only grows when evidence is added (one more item adds a weight
 * > 0, urls, categories and peers can only increase), so confidence never
 * decreases as intelligence accumulates for a fixed scoring time. Old
 * evidence fades to a quarter of its weight but never to nothing: an account
 * once seen moving illicit funds stays suspect.
 *
 * Calibration against the spec's advice table: one fresh sighting ≈ 0.45
 * (allow with monitoring), two fresh sightings on two pages ≈ 0.79 (hold for
 * review), a gang member seen on several pages and categories ≥ 0.85 (block).
 */
export const EVIDENCE_WEIGHT = 0.6;
export const URL_WEIGHT = 0.35;
export const CATEGORY_WEIGHT = 0.3;
export const PEER_WEIGHT = 0.25;
export const PEER_SATURATION = 50;
export const RECENCY_FLOOR = 0.25;
export const RECENCY_HALF_LIFE_MS = 365 * 24 * 3600 * 1000;

/**
 * The day recency is counted from at `scoredAt` (epoch ms): the start of
 * its UTC day. Recency is counted in whole days, so that snapshots built on
 * one day weigh the same evidence alike: a confidence does not drift from
 * one compaction to the next within a day, and the history of answers
 * keeps a day's confidences once (docs/scoring.md). Expiry is counted from
 * `scoredAt` itself.
 */
export function scoringDay(scoredAt: number): number {
  return startOfUtcDay(scoredAt);
}

/** Weight of one evidence item captured at `capturedAt`, scored at `scoredAt` (as of its day: scoringDay). In [0.25, 1]. */
export function recencyWeight(capturedAt: number, scoredAt: number): number {
  const age = Math.max(0, scoringDay(scoredAt) - capturedAt);
  return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * Math.pow(2, -age / RECENCY_HALF_LIFE_MS);
}

/**
 * Weights are summed in fixed point, in units of 2^-32: each item's weight
 * is rounded to a whole number of units (recencyWeightUnits, at most 2^32)
 * and a VPA's Σ w is the sum of those integers in a double. A sum of
 * integers below 2^53 is exact, so it is the same in any order the items
 * are read: a build that reads a VPA's evidence partition by partition, and
 * one that adds new evidence to the sum a snapshot kept, get the same bits.
 * Exact up to 2^21 items per VPA; past that Σ w saturates confidence anyway.
 * The rounding moves a weight by at most 2^-33.
 */
export const WEIGHT_UNITS = 2 ** 32;

/** recencyWeight as a whole number of units of 1 / WEIGHT_UNITS: in [2^30, 2^32]. */
export function recencyWeightUnits(capturedAt: number, scoredAt: number): number {
  return Math.round(recencyWeight(capturedAt, scoredAt) * WEIGHT_UNITS);
}

/**
 * The earliest capture instant that still counts when scoring at `scoredAt`
 * with evidence expiring after `maxAgeMs` (0: never; SnapshotMeta.evidenceMaxAgeMs).
 * An item captured before it is left out of every field, as if never stored.
 */
export function countsFrom(scoredAt: number, maxAgeMs: number): number {
  return maxAgeMs > 0 ? scoredAt - maxAgeMs : Number.NEGATIVE_INFINITY;
}

/** The number of source categories in a mask of them (bit i: category i), for `VpaSignals.distinctSourceCategories`. */
export function categoriesIn(mask: number): number {
  let count = 0;
  for (let m = mask; m !== 0; m &= m - 1) count++;
  return count;
}

export interface VpaSignals {
  /**
   * Σ recencyWeight over the VPA's distinct evidence items, as a real
   * number: the sum of their recencyWeightUnits divided by WEIGHT_UNITS.
   */
  readonly evidenceWeight: number;
  readonly distinctUrls: number;
  readonly distinctSourceCategories: number;
  /** Largest number of other VPAs seen on one of this VPA's urls. */
  readonly peers: number;
}

/** Confidence of a flagged VPA as fixed point (value / CONFIDENCE_SCALE). */
export function vpaConfidence(signals: VpaSignals): number {
  const x =
    EVIDENCE_WEIGHT * signals.evidenceWeight +
    URL_WEIGHT * Math.max(0, signals.distinctUrls - 1) +
    CATEGORY_WEIGHT * Math.max(0, signals.distinctSourceCategories - 1) +
    PEER_WEIGHT * Math.log1p(Math.min(Math.max(0, signals.peers), PEER_SATURATION));
  return toFixedPoint(1 - Math.exp(-x));
}

/**
 * Cluster confidence: the strongest member, raised by the cluster's breadth.
 * A gang seen on many pages is surer than its best member alone:
 *
 *   confidence = 1 - (1 - max member confidence) * exp(-(0.02 * (size - 1) + 0.05 * (distinct urls - 1)))
 */
export const CLUSTER_SIZE_WEIGHT = 0.02;
export const CLUSTER_URL_WEIGHT = 0.05;

export function clusterConfidence(maxMemberConfidence: number, size: number, distinctUrls: number): number {
  const best = maxMemberConfidence / CONFIDENCE_SCALE;
  const breadth = CLUSTER_SIZE_WEIGHT * Math.max(0, size - 1) + CLUSTER_URL_WEIGHT * Math.max(0, distinctUrls - 1);
  return toFixedPoint(1 - (1 - best) * Math.exp(-breadth));
}

/** Round to the stored precision; floor so rounding never claims more certainty than computed. */
function toFixedPoint(value: number): number {
  const clamped = Math.min(1, Math.max(0, value));
  return Math.floor(clamped * CONFIDENCE_SCALE + 1e-9);
}
