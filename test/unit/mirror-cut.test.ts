import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { ServingView } from '../../src/engine/serving-view.js';
import { deltaHashes, type DeltaHashes } from '../../src/engine/hash-ranges.js';
import { cutMirror, type CutResult } from '../../src/mirror/mirror-cut.js';
import { MIRROR_BANDS, MIRROR_HEADER_BYTES, MIRROR_KIND_FULL, MIRROR_RISK_CATEGORIES, encodeMirrorFile, type MirrorEntries } from '../../src/mirror/mirror-format.js';
import { confidenceBand } from '../../src/api/advice.js';
import { vpaHashWords } from '../../src/vpa/vpa-hash.js';
import { ASKED, batchesArb, snapshotAndDelta, snapshotHashes } from '../delta-fixtures.js';

const plain = (e: MirrorEntries) => [...Array(e.count).keys()].map((i) => `${e.hi[i]}:${e.lo[i]}:${e.meta[i]}`);

test("a mirror version holds exactly the view's flagged VPAs, with their categories and bands, over a snapshot and every state of its delta", () => {
  fc.assert(
    fc.property(batchesArb, (batches) => {
      const { base, deltas } = snapshotAndDelta(batches);
      const ranges = snapshotHashes(base);
      let previous: MirrorEntries | null = null;
      let hashes: DeltaHashes | null = null;
      for (const delta of [null, ...deltas]) {
        const view = new ServingView(base, delta);
        hashes = delta === null ? null : deltaHashes(delta, hashes);
        const cut: CutResult = cutMirror({
          records: ranges.records,
          order: ranges.order,
          delta: delta === null || hashes === null ? null : { overlay: delta.overlay, baseVpa: delta.baseVpa, hashes },
          previous,
        });
        const words = new Uint32Array(8);
        const expected = ASKED.map((upi) => view.verdict(upi))
          .filter((v) => v.status === 'FLAGGED')
          .map((v) => {
            vpaHashWords(v.upi, words);
            const band = MIRROR_BANDS.indexOf(confidenceBand('FLAGGED', v.confidence) as (typeof MIRROR_BANDS)[number]);
            return { hi: words[0]!, lo: words[1]!, meta: (MIRROR_RISK_CATEGORIES.indexOf(v.risk_category!) << 4) | band };
          })
          .sort((a, b) => a.hi - b.hi || a.lo - b.lo)
          .map((e) => `${e.hi}:${e.lo}:${e.meta}`);
        assert.deepEqual(plain(cut.entries), expected);
        // The full file is the set's own, and its SHA-256 the manifest's.
        assert.deepEqual(cut.full, encodeMirrorFile(MIRROR_KIND_FULL, cut.entries));
        assert.equal(cut.sha256, createHash('sha256').update(cut.full.subarray(MIRROR_HEADER_BYTES)).digest('hex'));
        // The changes from the version before are exactly what differs.
        const before: Set<string> = new Set<string>(previous === null ? [] : plain(previous as MirrorEntries));
        const after = new Set(expected);
        const changed: Set<string> = new Set<string>([...before].filter((e) => !after.has(e)).map((e) => e.split(':').slice(0, 2).join(':')));
        for (const e of after) if (!before.has(e)) changed.add(e.split(':').slice(0, 2).join(':'));
        assert.equal(cut.changes.count, changed.size);
        previous = cut.entries;
      }
    }),
    { numRuns: 60 },
  );
});
