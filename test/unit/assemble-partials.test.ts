import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assembleSnapshot, assembleSnapshotIndexedElsewhere } from '../../src/builder/assemble.js';
import type { AggregateResult } from '../../src/builder/phases.js';
import { buildIndexArrays } from '../../src/engine/vpa-index.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { ScratchArrays } from '../../src/common/scratch-arrays.js';
import { snapshotDifferences } from '../fixtures/fake-snapshot.js';
import { aggregateInProcess, assembleOptionsInProcess, evidence } from '../helpers.js';

const ITEMS = [
  evidence('a@ybl', 'https://t.me/one'),
  evidence('b@ybl', 'https://t.me/one'),
  evidence('b@ybl', 'https://x.example/two', { source_category: 'phishing' }),
  evidence('c@okaxis', 'https://x.example/two', { source_category: 'phishing' }),
  evidence('lone@paytm', 'https://y.example/three'),
];

/** Two partials, as two aggregation tasks make them. */
function partials(): AggregateResult[] {
  return [aggregateInProcess(ITEMS.slice(0, 3)), aggregateInProcess(ITEMS.slice(3))];
}

function answers(view: SnapshotView): unknown[] {
  return ['a@ybl', 'b@ybl', 'c@okaxis', 'lone@paytm', 'none@ybl'].map((upi) => view.verdict(upi));
}

test('the partials are let go as they are copied: told once for each, the array given emptied, and the snapshot the same', async () => {
  const expected = answers(new SnapshotView(assembleSnapshot(partials(), assembleOptionsInProcess()).data));
  for (const elsewhere of [false, true]) {
    const given = partials();
    const left: number[] = [];
    const options = {
      ...assembleOptionsInProcess(),
      // What remains to copy each time one is let go.
      partialCopied: () => left.push(given.length),
    };
    const { data } = elsewhere
      ? await assembleSnapshotIndexedElsewhere(given, options, (keyBytes, keyOffsets, count) => Promise.resolve(buildIndexArrays(keyBytes, keyOffsets, count)))
      : assembleSnapshot(given, options);
    assert.deepEqual(left, [1, 0]);
    assert.deepEqual(answers(new SnapshotView(data)), expected, elsewhere ? 'index built elsewhere' : 'index built in line');
  }
});

test('the rows and keys are let go once the VPA columns are laid out: told once, after every partial, and the snapshot the same', async () => {
  // What each step gives back is measured in the server (bench/MEASUREMENTS.md#working-memory-let-go): a collection
  // frees buffers on a thread of its own, after it, too unevenly for a test to time.
  const items = Array.from({ length: 2_000 }, (_, i) => evidence(`payee${i}@ybl`, `https://t.me/channel${i % 97}`));
  const expected = assembleSnapshot([aggregateInProcess(items)], assembleOptionsInProcess()).data;
  for (const elsewhere of [false, true]) {
    const told: string[] = [];
    const options = { ...assembleOptionsInProcess(), scratch: new ScratchArrays(), partialCopied: () => told.push('partial'), rowsCopied: () => told.push('rows') };
    const given = [aggregateInProcess(items.slice(0, 1_000)), aggregateInProcess(items.slice(1_000))];
    const { data } = elsewhere
      ? await assembleSnapshotIndexedElsewhere(given, options, (keyBytes, keyOffsets, count) => Promise.resolve(buildIndexArrays(keyBytes, keyOffsets, count)))
      : assembleSnapshot(given, options);
    assert.deepEqual(told, ['partial', 'partial', 'rows']);
    assert.deepEqual(snapshotDifferences(data, expected), [], elsewhere ? 'index built elsewhere' : 'index built in line');
  }
});
