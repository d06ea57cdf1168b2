import fc from 'fast-check';
import { validateEvidence } from '../src/evidence/record.js';
import { RecordWriter, packFlags } from '../src/builder/record-codec.js';
import { dedupPartition } from '../src/builder/phases.js';
import { mergeDelta, type DeltaFile } from '../src/builder/delta-merge.js';
import type { DeltaData } from '../src/engine/delta-data.js';
import type { SnapshotView } from '../src/engine/snapshot-view.js';
import type { VpaVerdict } from '../src/engine/verdict.js';
import { DEFAULT_URL_MEMBER_CAP } from '../src/builder/clustering.js';
import { TEST_SCORED_AT, buildInProcess, type EvidenceInput } from './helpers.js';
import { hashRangesHere, type HashRanges } from '../src/engine/hash-ranges.js';

/**
 * Evidence over small pools of VPAs, urls and ids, so that random batches
 * reuse all three: known VPAs get more evidence, urls are shared, and ids
 * come back (re-sent, or reused for another VPA).
 */
const UPIS = ['a@ybl', 'b@ybl', 'c@okaxis', 'd@paytm', 'e@ibl', 'f@oksbi', 'g@ybl', 'h@upi'];
const URLS = ['https://bet.example/1', 'https://bet.example/2', 'https://t.me/gang', 'https://kyc.example/login', 'https://scam.example/offer', 'https://x.example/ü'];
const DAY = 86_400_000;

export const evidenceArb: fc.Arbitrary<EvidenceInput> = fc.record({
  evidence_id: fc.integer({ min: 1, max: 40 }).map((n) => `id-${n}`),
  upi: fc.constantFrom(...UPIS),
  url: fc.constantFrom(...URLS),
  source_category: fc.constantFrom('gambling', 'phishing', 'scam', 'telegram'),
  risk_category: fc.constantFrom('mule', 'gambling', 'phishing', 'scam', 'nbfc_impersonation'),
  captured_at: fc.integer({ min: -3 * 365, max: 3 }).map((days) => new Date(TEST_SCORED_AT + days * DAY + days * 1000).toISOString()),
  screenshot_available: fc.boolean(),
});

/** The VPAs any test may ask about: every one of the pool, and one never named. */
export const ASKED = [...UPIS, 'nobody@ybl'];

/**
 * A snapshot of `batches[0]` and the live delta of the rest merged over it
 * one batch at a time, in-process: each batch is a file whose records are
 * deduplicated against everything before it (as the builder's carry does),
 * then merged by the code a server runs.
 */
export function snapshotAndDelta(batches: readonly (readonly EvidenceInput[])[], evidenceMaxAgeMs = 0): { base: SnapshotView; deltas: DeltaData[] } {
  const base = buildInProcess(batches[0]!, TEST_SCORED_AT, DEFAULT_URL_MEMBER_CAP, evidenceMaxAgeMs);
  const writer = new RecordWriter();
  batches.forEach((batch, chunk) =>
    batch.forEach((item, line) => {
      const parsed = validateEvidence(item);
      if (!parsed.ok) throw new Error(`invalid fixture: ${parsed.reason}`);
      const r = parsed.record;
      writer.append(chunk, line, r.capturedAt, packFlags(r.sourceCategory, r.riskCategory, r.screenshot), r.upi, r.url, r.evidenceId);
    }),
  );
  const kept = dedupPartition({ inputs: [writer.finish()], partitions: 1 }).parts;
  const deltas: DeltaData[] = [];
  let previous: DeltaData | null = null;
  for (let chunk = 1; chunk < batches.length; chunk++) {
    const file: DeltaFile = { name: `file-${chunk}`, firstChunk: chunk, endChunk: chunk + 1, storedAt: TEST_SCORED_AT + chunk };
    previous = mergeDelta({ base: base.data, previous, inputs: kept, files: [file], now: TEST_SCORED_AT }).delta;
    deltas.push(previous);
  }
  return { base, deltas };
}

/** The fields the delta settles (docs/design.md, "The live delta"): a verdict without its cluster, and without the category of urls `baseUrls` holds. */
export function settledFields(v: VpaVerdict, baseUrls: ReadonlySet<string>): unknown {
  return {
    status: v.status,
    evidence_count: v.evidence_count,
    first_seen: v.first_seen,
    last_seen: v.last_seen,
    risk_category: v.risk_category,
    sources: v.sources.map((s) => ({
      url: s.url,
      captured_at: s.captured_at,
      screenshot_available: s.screenshot_available,
      ...(baseUrls.has(s.url) ? {} : { category: s.category }),
    })),
  };
}

/** Every url a snapshot holds, as text. */
export function urlsOf(view: SnapshotView): Set<string> {
  const urls = new Set<string>();
  for (let u = 0; u < view.meta.urlCount; u++) urls.add(view.urlOf(u));
  return urls;
}

/** Random batches of evidence for snapshotAndDelta: a snapshot and up to four merges over it. */
export const batchesArb: fc.Arbitrary<EvidenceInput[][]> = fc.array(fc.array(evidenceArb, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 5 });

/** A snapshot's hash ranges, made in-process as the hash-ranges workers make them. */
export function snapshotHashes(view: SnapshotView): HashRanges {
  return hashRangesHere(view.data);
}
