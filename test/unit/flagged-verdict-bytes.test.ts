import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { verdictJson } from '../../src/api/answer-json.js';
import { flaggedVerdictBound, flaggedVerdictBytes } from '../../src/api/flagged-verdict-bytes.js';
import { answerSingle } from '../../src/api/single-answer.js';
import { ByteScratch } from '../../src/common/byte-scratch.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { CONFIDENCE_SCALE, NO_CLUSTER, SOURCE_FLAG_SCREENSHOT, type SnapshotData } from '../../src/engine/snapshot-data.js';
import { VpaIndex } from '../../src/engine/vpa-index.js';
import { fakeSnapshot } from '../fixtures/fake-snapshot.js';

const VPAS = 60;
const base = fakeSnapshot(VPAS, { seed: 7 });
/** The key of each VPA of the base snapshot, as the index holds it. */
const keyOf = (id: number): string => new VpaIndex(base).keyOf(id);

/** Text as the text answer writes it, in UTF-8. */
const textBytes = (view: SnapshotView, id: number, upi: string): Buffer => Buffer.from(verdictJson(view.flaggedVerdict(id, upi)), 'utf8');

// Any text: quotes, backslashes, control chars, non-ASCII, lone surrogates.
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ maxLength: 60 }),
  fc.constantFrom('https://t.me/x"y\\z', 'https://पे.in/\u2028', 'https://x.in/\ud800', 'https://a.in/\u0000\u001f\u007f'),
);
// Whole ms anywhere in Date's range (six-digit and negative years too), and whole seconds of the years answers name.
const timestamp = fc.oneof(
  fc.integer({ min: -8.64e15, max: 8.64e15 }),
  fc.integer({ min: -62_167_219_200_000, max: 300_000_000_000_000 }),
  fc.integer({ min: 0, max: 4_102_444_800 }).map((s) => s * 1000),
  fc.constantFrom(-8.64e15, 8.64e15, 253_402_300_799_999, 253_402_300_800_000, -1, 0),
);
// A url as a snapshot stores it: the UTF-8 of any text, or bytes that are not UTF-8 at all.
const urlBytes = fc.oneof(
  anyText.map((text) => new Uint8Array(Buffer.from(text, 'utf8'))),
  fc.uint8Array({ maxLength: 40 }),
);

/** The base snapshot with these urls, timestamps and fields in place of its own (same counts, so the index still holds). */
function variant(encoded: readonly Uint8Array[], times: readonly number[], seed: number): SnapshotData {
  const urlOffsets = new Uint32Array(encoded.length + 1);
  encoded.forEach((b, i) => (urlOffsets[i + 1] = urlOffsets[i]! + b.length));
  const urlBytes = new Uint8Array(Buffer.concat(encoded));
  const pick = (i: number): number => times[(i * 7 + seed) % times.length]!;
  const firstSeen = base.firstSeen.map((_, i) => pick(i));
  const sourceCapturedAt = base.sourceCapturedAt.map((_, i) => pick(i + 3));
  const confidence = base.confidence.map((_, i) => (i * 977 + seed) % (CONFIDENCE_SCALE + 1));
  const sourceFlags = base.sourceFlags.map((_, i) => ((i + seed) % 3 === 0 ? SOURCE_FLAG_SCREENSHOT : 0));
  const evidenceCount = base.evidenceCount.map((_, i) => (i === seed % VPAS ? 0xffffffff : (i * 31 + seed) % 100_000));
  const clusterNumber = base.clusterNumber.map((_, c) => (seed % 2 === 0 ? c + 1 : 0xffffffff - base.clusterNumber.length + c));
  return { ...base, urlBytes, urlOffsets, firstSeen, sourceCapturedAt, confidence, sourceFlags, evidenceCount, clusterNumber };
}

test('a flagged verdict written as bytes is its text answer in UTF-8, for any urls, VPAs and timestamps (property)', () => {
  const out = new ByteScratch(16_384);
  // Writes past a buffer's end would be dropped without a word: each answer is written once more
  // into a buffer of exactly its bound, which must hold all of it.
  const urlCount = base.meta.urlCount;
  fc.assert(
    fc.property(
      fc.array(urlBytes, { minLength: urlCount, maxLength: urlCount }),
      fc.array(timestamp, { minLength: 1, maxLength: 20 }),
      fc.array(anyText, { minLength: 1, maxLength: 5 }),
      fc.nat(),
      (urls, times, upis, seed) => {
        const view = new SnapshotView(variant(urls, times, seed));
        out.clear().text('left over from the answer before');
        for (let id = 0; id < VPAS; id++) {
          const upi = upis[id % upis.length]!;
          const bytes = flaggedVerdictBytes(out, view, id, upi);
          assert.ok(bytes !== null, 'fits');
          const expected = textBytes(view, id, upi);
          assert.deepEqual(Buffer.from(bytes), expected);
          const tight = flaggedVerdictBytes(new ByteScratch(flaggedVerdictBound(view, id, upi)), view, id, upi);
          assert.ok(tight !== null);
          assert.deepEqual(Buffer.from(tight), expected);
        }
      },
    ),
    { numRuns: 150 },
  );
});

test('every confidence a snapshot can hold is written as the text answer writes it', () => {
  const confidence = base.confidence.slice();
  const view = new SnapshotView({ ...base, confidence });
  const out = new ByteScratch(16_384);
  for (let fixed = 0; fixed <= CONFIDENCE_SCALE; fixed++) {
    confidence[0] = fixed;
    const answer = Buffer.from(flaggedVerdictBytes(out, view, 0, 'a@ybl')!).toString('utf8');
    assert.equal(JSON.parse(answer).confidence, fixed / CONFIDENCE_SCALE);
    assert.ok(answer.includes(`"confidence":${String(fixed / CONFIDENCE_SCALE)},`), `${fixed}: ${answer}`);
  }
});

test('with and without a cluster, the fields follow the text answer', () => {
  const view = new SnapshotView(base);
  const out = new ByteScratch(16_384);
  const clustered = base.vpaCluster.findIndex((c) => c !== NO_CLUSTER);
  const alone = base.vpaCluster.findIndex((c) => c === NO_CLUSTER);
  assert.ok(clustered >= 0 && alone >= 0);
  for (const id of [clustered, alone]) {
    const answer = JSON.parse(Buffer.from(flaggedVerdictBytes(out, view, id, 'a@ybl')!).toString('utf8'));
    assert.deepEqual(answer, view.flaggedVerdict(id, 'a@ybl'));
  }
  const withCluster = JSON.parse(Buffer.from(flaggedVerdictBytes(out, view, clustered, 'a@ybl')!).toString('utf8'));
  assert.match(withCluster.cluster_id, /^MC-[1-9][0-9]*$/);
  assert.ok(withCluster.cluster_size >= 2);
});

test('an answer that might not fit is left to the text path, and the single answer still comes whole', () => {
  const view = new SnapshotView(base);
  const small = new ByteScratch(600);
  small.text('kept');
  assert.equal(flaggedVerdictBytes(small, view, 0, 'a@ybl'), null);
  // Nothing half-written was kept.
  assert.equal(small.length, 4);
  const upi = keyOf(0);
  const answer = answerSingle(new ServingView(view), upi, small);
  assert.equal(typeof answer, 'string');
  assert.deepEqual(Buffer.from(answer as string, 'utf8'), textBytes(view, 0, upi));
  // With room, the same lookup is answered as bytes, the same text.
  const roomy = answerSingle(new ServingView(view), upi, new ByteScratch(16_384));
  assert.ok(roomy instanceof Uint8Array);
  assert.deepEqual(Buffer.from(roomy), textBytes(view, 0, upi));
});

test('an id that names no flagged VPA is refused', () => {
  const view = new SnapshotView(base);
  const out = new ByteScratch(16_384);
  for (const id of [-1, VPAS, 0.5, Number.NaN]) assert.throws(() => flaggedVerdictBytes(out, view, id, 'a@ybl'), RangeError);
});
