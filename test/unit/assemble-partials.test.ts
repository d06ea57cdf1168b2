import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assembleSnapshot, assembleSnapshotIndexedElsewhere } from '../../src/builder/assemble.js';
import type { AggregateResult } from '../../src/builder/phases.js';
import { buildIndexArrays } from '../../src/engine/vpa-index.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
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

test('the partials may be let go once copied: told once, before the snapshot is laid out, which is the same', async () => {
  const expected = answers(new SnapshotView(assembleSnapshot(partials(), assembleOptionsInProcess()).data));
  for (const elsewhere of [false, true]) {
    const given = partials();
    let told = 0;
    const options = {
      ...assembleOptionsInProcess(),
      partialsCopied: () => {
        told++;
        // What the build thread does: the array empties, and nothing of it is read again.
        given.length = 0;
      },
    };
    const { data } = elsewhere
      ? await assembleSnapshotIndexedElsewhere(given, options, (keyBytes, keyOffsets, count) => Promise.resolve(buildIndexArrays(keyBytes, keyOffsets, count)))
      : assembleSnapshot(given, options);
    assert.equal(told, 1);
    assert.deepEqual(answers(new SnapshotView(data)), expected, elsewhere ? 'index built elsewhere' : 'index built in line');
  }
});
