import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScratchArrays } from '../../src/common/scratch-arrays.js';
import { assembleSnapshot, type AssembleResult } from '../../src/builder/assemble.js';
import type { AggregateResult } from '../../src/builder/phases.js';
import { buildIndexArrays } from '../../src/engine/vpa-index.js';
import { snapshotDifferences } from '../fixtures/fake-snapshot.js';
import { aggregateInProcess, assembleOptionsInProcess, evidence, type EvidenceInput } from '../helpers.js';

// Pool threads aggregate, assemble and index in memory their earlier tasks
// used (scratch-arrays.ts). What they make must not depend on what that
// memory held, and nothing they hand on may live in it.

function evidenceSet(size: number, channels: number): EvidenceInput[] {
  const items: EvidenceInput[] = [];
  for (let i = 0; i < size; i++) {
    const upi = i % 7 === 0 ? `a.long.payee.handle.past.the.inline.bytes.${i}@okaxis` : `payee${i}@ybl`;
    items.push(evidence(upi, i % 3 === 0 ? `https://solo.example/${i}` : `https://t.me/channel${i % channels}`));
    // Some VPAs seen again elsewhere: several sources each.
    if (i % 5 === 0) items.push(evidence(upi, `https://t.me/channel${(i + 1) % channels}`, { source_category: 'telegram' }));
  }
  return items;
}

test('aggregation and assembly on reused scratch memory make what fresh memory makes, and what they hand on outlives the memory', () => {
  // Small chunks, so arrays land in different places from one build to the next.
  const scratch = new ScratchArrays({ chunkBytes: 8 * 1024 });
  const sets = [evidenceSet(600, 23), evidenceSet(900, 11), evidenceSet(400, 5), evidenceSet(600, 23)];
  const earlier: { partial: AggregateResult; built: AssembleResult; items: EvidenceInput[] }[] = [];
  for (const items of sets) {
    // Each task reuses memory the tasks before it filled with their own values.
    scratch.reset();
    const partial = aggregateInProcess(items, undefined, scratch);
    const freshPartial = aggregateInProcess(items);
    assert.deepEqual(partial, freshPartial);
    scratch.reset();
    const built = assembleSnapshot([partial], { ...assembleOptionsInProcess(), scratch });
    const expected = assembleSnapshot([freshPartial], assembleOptionsInProcess());
    assert.deepEqual(snapshotDifferences(built.data, expected.data), []);
    assert.deepEqual(built.clusterIds, expected.clusterIds);
    // What the earlier builds handed on is as it was, their memory reused since.
    for (const before of earlier) {
      const fresh = aggregateInProcess(before.items);
      assert.deepEqual(before.partial, fresh);
      const again = assembleSnapshot([fresh], assembleOptionsInProcess());
      assert.deepEqual(snapshotDifferences(before.built.data, again.data), []);
      assert.deepEqual(before.built.clusterIds, again.clusterIds);
    }
    earlier.push({ partial, built, items });
  }
});

test('every array of a snapshot assembled on scratch memory is in shared memory of its own', () => {
  const scratch = new ScratchArrays({ chunkBytes: 8 * 1024 });
  const { data } = assembleSnapshot([aggregateInProcess(evidenceSet(300, 7), undefined, scratch)], { ...assembleOptionsInProcess(), scratch });
  for (const [field, value] of Object.entries(data)) {
    if (!ArrayBuffer.isView(value)) continue;
    assert.ok(value.buffer instanceof SharedArrayBuffer, `${field} is in shared memory`);
  }
});

test('an index built on reused scratch memory is the index built on fresh memory', () => {
  const scratch = new ScratchArrays({ chunkBytes: 8 * 1024 });
  const keys = Array.from({ length: 3000 }, (_, i) => (i % 4 === 0 ? `payee.with.a.long.handle.${i}@okicici` : `${9000000000 + i}@paytm`));
  const text = new TextEncoder();
  const encoded = keys.map((key) => text.encode(key));
  const keyBytes = new Uint8Array(encoded.reduce((sum, key) => sum + key.length, 0));
  const keyOffsets = new Uint32Array(keys.length + 1);
  encoded.forEach((key, i) => {
    keyBytes.set(key, keyOffsets[i]!);
    keyOffsets[i + 1] = keyOffsets[i]! + key.length;
  });
  const expected = buildIndexArrays(keyBytes, keyOffsets, keys.length);
  for (let round = 0; round < 3; round++) {
    // The second and third rounds reuse the memory of the first.
    scratch.reset();
    assert.deepEqual(buildIndexArrays(keyBytes, keyOffsets, keys.length, { scratch }), expected);
  }
});
