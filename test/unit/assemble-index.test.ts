import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assembleSnapshot, assembleSnapshotIndexedElsewhere } from '../../src/builder/assemble.js';
import { buildIndexArrays } from '../../src/engine/vpa-index.js';
import { snapshotDifferences } from '../fixtures/fake-snapshot.js';
import { aggregateInProcess, assembleOptionsInProcess, evidence, type EvidenceInput } from '../helpers.js';

// A pool of two or more threads builds the index on another thread while
// the assemble thread lays out the columns. The snapshot must be the one
// assembled in one piece.

const ITEMS: EvidenceInput[] = [];
for (let i = 0; i < 400; i++) {
  // Gangs on shared channels, loners, and keys past the 28 bytes kept inline.
  const upi = i % 5 === 0 ? `a.rather.long.handle.of.payee.number.${i}@okhdfcbank` : `payee${i}@ybl`;
  ITEMS.push(evidence(upi, i % 3 === 0 ? `https://solo.example/${i}` : `https://t.me/channel${i % 17}`));
}

test('a snapshot whose index was built elsewhere is the snapshot assembled in one piece', async () => {
  const whole = assembleSnapshot([aggregateInProcess(ITEMS)], assembleOptionsInProcess());
  const handed: number[] = [];
  const split = await assembleSnapshotIndexedElsewhere([aggregateInProcess(ITEMS)], assembleOptionsInProcess(), async (keyBytes, keyOffsets, count) => {
    handed.push(count);
    // Another thread reads them where they are.
    assert.ok(keyBytes.buffer instanceof SharedArrayBuffer && keyOffsets.buffer instanceof SharedArrayBuffer);
    await new Promise((resolve) => setImmediate(resolve));
    return buildIndexArrays(keyBytes, keyOffsets, count);
  });
  assert.deepEqual(handed, [whole.data.meta.vpaCount]);
  assert.deepEqual(snapshotDifferences(split.data, whole.data), []);
  assert.deepEqual(split.clusterIds, whole.clusterIds);
});

test('an index that fails to build fails the assembly', async () => {
  await assert.rejects(
    assembleSnapshotIndexedElsewhere([aggregateInProcess(ITEMS)], assembleOptionsInProcess(), () => Promise.reject(new Error('index thread gone'))),
    /index thread gone/,
  );
});
