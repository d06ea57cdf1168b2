import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { ServingView } from '../../src/engine/serving-view.js';
import { deltaHashes, type DeltaHashes } from '../../src/engine/hash-ranges.js';
import { answerRange, parseRangePrefix } from '../../src/api/range-answer.js';
import { ByteScratch } from '../../src/common/byte-scratch.js';
import { mergeDelta } from '../../src/builder/delta-merge.js';
import { RecordWriter } from '../../src/builder/record-codec.js';
import { TEST_SCORED_AT } from '../helpers.js';
import { ASKED, batchesArb, snapshotAndDelta, snapshotHashes } from '../delta-fixtures.js';

interface RangeBody {
  prefix: string;
  data_version: string;
  entries: { suffix: string; status: string; risk_category: string; confidence: number; cluster_id: string | null }[];
}

const scratch = new ByteScratch(1 << 20);
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString();
const sha = (upi: string) => createHash('sha256').update(upi.toLowerCase()).digest('hex');

test('a range answer holds exactly the flagged VPAs of its prefix, with their verdicts, over a snapshot and every state of its delta', () => {
  fc.assert(
    fc.property(batchesArb, (batches) => {
      const { base, deltas } = snapshotAndDelta(batches);
      const ranges = snapshotHashes(base);
      let previous: DeltaHashes | null = null;
      for (const delta of [null, ...deltas]) {
        const view = new ServingView(base, delta);
        const hashes: DeltaHashes | null = delta === null ? null : deltaHashes(delta, previous);
        // Each state's hashes, made from the state before's, are those made afresh.
        if (delta !== null) {
          const afresh = deltaHashes(delta, null);
          assert.deepEqual(hashes?.sorted, afresh?.sorted);
          assert.deepEqual(hashes?.words, afresh?.words);
        }
        previous = hashes;
        for (const upi of ASKED) {
          const hash = sha(upi);
          const body = JSON.parse(text(answerRange(view, ranges, hashes, parseRangePrefix(hash.slice(0, 5)), false, scratch))) as RangeBody;
          assert.equal(body.prefix, hash.slice(0, 5));
          assert.equal(body.data_version, view.version);
          const mine = body.entries.filter((e) => e.suffix === hash.slice(5));
          const verdict = view.verdict(upi);
          if (verdict.status === 'CLEARED') assert.equal(mine.length, 0, `${upi} is CLEARED`);
          else {
            assert.deepEqual(mine, [{ suffix: hash.slice(5), status: 'FLAGGED', risk_category: verdict.risk_category, confidence: verdict.confidence, cluster_id: verdict.cluster_id }]);
          }
          // Every entry is a flagged VPA of this prefix, in suffix order.
          const suffixes = body.entries.map((e) => e.suffix);
          assert.deepEqual(suffixes, [...suffixes].sort());
          for (const entry of body.entries) {
            const named = ASKED.find((u) => sha(u) === hash.slice(0, 5) + entry.suffix);
            assert.ok(named !== undefined && view.verdict(named).status === 'FLAGGED');
          }
        }
      }
    }),
    { numRuns: 60 },
  );
});

test('padded, every range answer of one data version has as many entries and as many bytes, its real entries among them', () => {
  const batches = [
    Array.from({ length: 40 }, (_, i) => ({ evidence_id: `e${i}`, upi: `payee${i}@ybl`, url: `https://x.example/${i % 7}`, source_category: 'scam', risk_category: 'scam', captured_at: '2026-10-01T00:00:00Z', screenshot_available: false })),
  ];
  const { base } = snapshotAndDelta(batches);
  const ranges = snapshotHashes(base);
  const view = new ServingView(base, null);
  const prefixes = [...Array.from({ length: 40 }, (_, i) => sha(`payee${i}@ybl`).slice(0, 5)), '00000', 'fffff', '12345'];
  const answers = prefixes.map((p) => text(answerRange(view, ranges, null, parseRangePrefix(p), true, scratch)));
  const lengths = new Set(answers.map((a) => Buffer.byteLength(a)));
  assert.equal(lengths.size, 1, 'one length for every answer');
  for (const [i, answer] of answers.entries()) {
    const body = JSON.parse(answer) as RangeBody;
    assert.equal(body.entries.length, Math.max(1, ranges.largest));
    assert.equal(new Set(body.entries.map((e) => e.suffix)).size, body.entries.length);
    for (const e of body.entries) assert.match(e.suffix, /^[0-9a-f]{59}$/);
    if (i < 40) assert.ok(body.entries.some((e) => e.suffix === sha(`payee${i}@ybl`).slice(5)));
  }
  // The padding depends on the version and prefix alone: the same answer twice.
  assert.equal(text(answerRange(view, ranges, null, parseRangePrefix('12345'), true, scratch)), answers.at(-1));
});

test("a snapshot VPA whose evidence a correction took back, all of it, is in no range answer; the rest of its range stays", () => {
  const batch = Array.from({ length: 30 }, (_, i) => ({ evidence_id: `e${i}`, upi: `payee${i}@ybl`, url: `https://x.example/${i % 5}`, source_category: 'scam', risk_category: 'scam', captured_at: '2026-10-01T00:00:00Z', screenshot_available: false }));
  const { base } = snapshotAndDelta([batch]);
  const ranges = snapshotHashes(base);
  const taken = 'payee7@ybl';
  const delta = mergeDelta({ base: base.data, previous: null, inputs: [], files: [], now: TEST_SCORED_AT, reset: { upis: [taken], records: new RecordWriter().finish() } }).delta;
  const view = new ServingView(base, delta);
  assert.equal(view.verdict(taken).status, 'CLEARED');
  const hashes = deltaHashes(delta, null);
  for (let i = 0; i < batch.length; i++) {
    const upi = `payee${i}@ybl`;
    const body = JSON.parse(text(answerRange(view, ranges, hashes, parseRangePrefix(sha(upi).slice(0, 5)), false, scratch))) as RangeBody;
    assert.equal(body.entries.some((e) => e.suffix === sha(upi).slice(5)), upi !== taken, upi);
  }
});

test('a range prefix is exactly five lowercase hex digits', () => {
  for (const good of ['00000', 'fffff', 'a1b2c']) assert.equal(parseRangePrefix(good), Number.parseInt(good, 16));
  for (const bad of ['', '0000', '000000', 'ABCDE', 'g0000', ' 0000', '0000 ', '%30000', '0x000']) assert.equal(parseRangePrefix(bad), -1, bad);
});
