import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NOT_FOUND } from '../../src/common/brand.js';
import { validateEvidence } from '../../src/evidence/record.js';
import { RecordWriter, packFlags, partitionOf } from '../../src/builder/record-codec.js';
import { aggregatePartition, dedupPartition } from '../../src/builder/phases.js';
import { assembleSnapshot } from '../../src/builder/assemble.js';
import { recencyWeightUnits, vpaConfidence, WEIGHT_UNITS } from '../../src/builder/scoring.js';
import { MIXED_RISK_STRIDE, riskCountsOf, type SnapshotData } from '../../src/engine/snapshot-data.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { decodeSnapshot } from '../../src/engine/snapshot-format/decode.js';
import { encodeSnapshot } from '../../src/engine/snapshot-format/encode.js';
import { RISK_CATEGORIES, RISK_RANK, SOURCE_CATEGORIES, dominant } from '../../src/vpa/categories.js';
import { snapshotDifferences } from '../fixtures/fake-snapshot.js';
import { assembleOptionsInProcess, TEST_SCORED_AT, type EvidenceInput } from '../helpers.js';

// The columns a snapshot keeps so that new evidence can be merged into a
// VPA's answer exactly (evidenceWeight, sourceCategoryMask, the risk counts),
// held to a plain recomputation from the evidence, through the build phases
// split over several id and VPA partitions as the pool splits them.

const DAY = 86_400_000;
const upis = ['a@ybl', 'A@YBL', 'b@okaxis', 'c@paytm', 'd.x@ibl', 'e@oksbi', 'f_9@ybl'];
const urls = ['https://t.me/one', 'https://bet.example/pay', 'https://kyc.example/कर', 'https://t.me/ĉanelo', 'https://job.example/apply?x=1'];
const riskNames = [undefined, ...RISK_CATEGORIES];

const evidenceArb = fc.record({
  // A small id space: the same id again, naming the same or another VPA, must change nothing.
  evidence_id: fc.integer({ min: 0, max: 40 }).map((i) => `ev-${i}`),
  upi: fc.constantFrom(...upis),
  url: fc.constantFrom(...urls),
  source_category: fc.constantFrom(...SOURCE_CATEGORIES),
  risk_category: fc.constantFrom(...riskNames),
  // Any millisecond from four years before the scoring time to a week after it.
  captured_at: fc.integer({ min: -4 * 365 * DAY, max: 7 * DAY }).map((offset) => new Date(TEST_SCORED_AT + offset).toISOString()),
  screenshot_available: fc.boolean(),
});

function withoutUndefined(item: Record<string, unknown>): EvidenceInput {
  const out = { ...item };
  if (out.risk_category === undefined) delete out.risk_category;
  return out as unknown as EvidenceInput;
}

/** Phases A to D in process, with the records split by evidence id into `idParts` and by VPA into `vpaParts`. */
function buildPartitioned(items: readonly EvidenceInput[], idParts: number, vpaParts: number, scoredAt: number): SnapshotData {
  const writers = Array.from({ length: idParts }, () => new RecordWriter());
  items.forEach((item, line) => {
    const parsed = validateEvidence(item);
    if (!parsed.ok) throw new Error(`invalid fixture: ${parsed.reason}`);
    const r = parsed.record;
    writers[partitionOf(r.evidenceId, idParts)]!.append(0, line, r.capturedAt, packFlags(r.sourceCategory, r.riskCategory, r.screenshot), r.upi, r.url, r.evidenceId);
  });
  const deduped = writers.map((writer) => dedupPartition({ inputs: [writer.finish()], partitions: vpaParts }));
  const partials = Array.from({ length: vpaParts }, (_, q) => aggregatePartition({ inputs: deduped.map((d) => d.parts[q]!), scoredAt }));
  return assembleSnapshot(partials, { ...assembleOptionsInProcess(scoredAt), scoredAt }).data;
}

interface Expected {
  units: number;
  mask: number;
  risks: number[];
  urls: Set<string>;
}

const DEFAULT_RISK: Record<string, string> = { gambling: 'gambling', phishing: 'phishing', scam: 'scam', telegram: 'scam' };

/** Per lower-cased VPA, from the evidence as plain objects: the first occurrence of each evidence id, in order. */
function recompute(items: readonly EvidenceInput[], scoredAt: number): Map<string, Expected> {
  const seen = new Set<string>();
  const byVpa = new Map<string, Expected>();
  for (const item of items) {
    if (seen.has(item.evidence_id)) continue;
    seen.add(item.evidence_id);
    const upi = item.upi.toLowerCase();
    let e = byVpa.get(upi);
    if (e === undefined) {
      e = { units: 0, mask: 0, risks: new Array<number>(RISK_CATEGORIES.length).fill(0), urls: new Set() };
      byVpa.set(upi, e);
    }
    e.units += recencyWeightUnits(Date.parse(item.captured_at), scoredAt);
    e.mask |= 1 << SOURCE_CATEGORIES.indexOf(item.source_category as (typeof SOURCE_CATEGORIES)[number]);
    const risk = item.risk_category ?? DEFAULT_RISK[item.source_category]!;
    e.risks[RISK_CATEGORIES.indexOf(risk as (typeof RISK_CATEGORIES)[number])]!++;
    e.urls.add(item.url);
  }
  return byVpa;
}

function popcount(mask: number): number {
  let count = 0;
  for (let m = mask; m !== 0; m &= m - 1) count++;
  return count;
}

function checkAgainstEvidence(data: SnapshotData, items: readonly EvidenceInput[], scoredAt: number): void {
  const expected = recompute(items, scoredAt);
  const view = new SnapshotView(data);
  assert.equal(data.meta.vpaCount, expected.size);
  const vpasOnUrl = new Map<string, number>();
  for (const e of expected.values()) for (const url of e.urls) vpasOnUrl.set(url, (vpasOnUrl.get(url) ?? 0) + 1);

  const counts = new Uint32Array(MIXED_RISK_STRIDE);
  const mixed: number[] = [];
  for (const [upi, e] of expected) {
    const id = view.lookup(upi);
    assert.notEqual(id, NOT_FOUND, upi);
    // Exact: the units are whole numbers, so the build's order of summing does not show.
    assert.equal(data.evidenceWeight[id], e.units, `${upi}: evidenceWeight`);
    assert.equal(data.sourceCategoryMask[id], e.mask, `${upi}: sourceCategoryMask`);
    riskCountsOf(data, id, counts);
    assert.deepEqual([...counts], e.risks, `${upi}: risk counts`);
    assert.equal(data.riskCategory[id], dominant(e.risks, 0, e.risks.length, RISK_RANK), `${upi}: riskCategory`);
    if (e.risks.filter((c) => c > 0).length > 1) mixed.push(id);
    // Confidence is computed from the stored units.
    const peers = Math.max(...[...e.urls].map((url) => vpasOnUrl.get(url)! - 1));
    const confidence = vpaConfidence({ evidenceWeight: e.units / WEIGHT_UNITS, distinctUrls: e.urls.size, distinctSourceCategories: popcount(e.mask), peers });
    assert.equal(data.confidence[id], confidence, `${upi}: confidence`);
  }
  assert.deepEqual([...data.mixedRiskVpas], mixed.sort((a, b) => a - b), 'mixedRiskVpas: the VPAs with several risk categories, ascending');
  assert.equal(data.mixedRiskCounts.length, data.mixedRiskVpas.length * MIXED_RISK_STRIDE);
}

test('evidenceWeight, sourceCategoryMask and risk counts are what the evidence gives, however the build splits it (property)', () => {
  fc.assert(
    fc.property(
      fc.array(evidenceArb, { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 0, max: 3 * 365 }),
      (raw, idParts, vpaParts, laterDays) => {
        const items = raw.map(withoutUndefined);
        const scoredAt = TEST_SCORED_AT + laterDays * DAY;
        const data = buildPartitioned(items, idParts, vpaParts, scoredAt);
        checkAgainstEvidence(data, items, scoredAt);
        // What the build makes passes the checks a loader makes, and survives the file.
        assert.deepEqual(snapshotDifferences(decodeSnapshot(Buffer.concat(encodeSnapshot(data))), data), []);
      },
    ),
    { numRuns: 150 },
  );
});

test('a split over partitions gives the same merge columns, bit for bit, as one partition', () => {
  // Many items per VPA with weights that, summed as floats, depend on their order.
  const items: EvidenceInput[] = [];
  for (let i = 0; i < 400; i++) {
    items.push({
      evidence_id: `id-${i}`,
      upi: upis[i % upis.length]!,
      url: urls[(i * 7) % urls.length]!,
      source_category: SOURCE_CATEGORIES[i % SOURCE_CATEGORIES.length]!,
      captured_at: new Date(TEST_SCORED_AT - ((i * 7919) % (900 * DAY)) - i).toISOString(),
      ...(i % 3 === 0 ? { risk_category: RISK_CATEGORIES[(i >> 2) % RISK_CATEGORIES.length]! } : {}),
    });
  }
  const one = buildPartitioned(items, 1, 1, TEST_SCORED_AT);
  const split = buildPartitioned(items, 4, 3, TEST_SCORED_AT);
  const viewOne = new SnapshotView(one);
  const viewSplit = new SnapshotView(split);
  const a = new Uint32Array(MIXED_RISK_STRIDE);
  const b = new Uint32Array(MIXED_RISK_STRIDE);
  for (const upi of upis) {
    const i = viewOne.lookup(upi);
    const j = viewSplit.lookup(upi);
    assert.ok(Object.is(one.evidenceWeight[i], split.evidenceWeight[j]), upi);
    assert.equal(one.sourceCategoryMask[i], split.sourceCategoryMask[j]);
    riskCountsOf(one, i, a);
    riskCountsOf(split, j, b);
    assert.deepEqual(a, b);
    assert.equal(one.confidence[i], split.confidence[j]);
  }
  checkAgainstEvidence(split, items, TEST_SCORED_AT);
});

test('riskCountsOf: a VPA not listed has all its evidence in its risk category; the output is overwritten whole', () => {
  const items: EvidenceInput[] = [
    { evidence_id: '1', upi: 'solo@ybl', url: 'https://a.example', source_category: 'telegram', captured_at: '2026-01-01T00:00:00Z' },
    { evidence_id: '2', upi: 'solo@ybl', url: 'https://b.example', source_category: 'scam', captured_at: '2026-02-01T00:00:00Z' },
    { evidence_id: '3', upi: 'mixed@ybl', url: 'https://a.example', source_category: 'gambling', captured_at: '2026-01-01T00:00:00Z' },
    { evidence_id: '4', upi: 'mixed@ybl', url: 'https://a.example', source_category: 'gambling', risk_category: 'mule', captured_at: '2026-01-01T00:00:00Z' },
  ];
  const data = buildPartitioned(items, 2, 2, TEST_SCORED_AT);
  const view = new SnapshotView(data);
  const out = new Uint32Array(MIXED_RISK_STRIDE).fill(99);
  riskCountsOf(data, view.lookup('solo@ybl'), out);
  assert.deepEqual([...out], [0, 0, 0, 2, 0]);
  out.fill(99);
  riskCountsOf(data, view.lookup('mixed@ybl'), out);
  assert.deepEqual([...out], [1, 1, 0, 0, 0]);
  assert.equal(RISK_CATEGORIES[data.riskCategory[view.lookup('mixed@ybl')]!], 'mule', 'a tie goes to the more harmful reading');
  assert.deepEqual([...data.mixedRiskVpas], [view.lookup('mixed@ybl')]);
});
