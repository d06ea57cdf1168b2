import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NOT_FOUND } from '../../src/common/brand.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { INLINE_KEY_BYTES, PackedBatch, VpaIndex } from '../../src/engine/vpa-index.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { MemoryCorrections } from '../correction-fixtures.js';
import { ASKED, evidenceArb, snapshotAndDelta } from '../delta-fixtures.js';
import { TEST_SCORED_AT, evidence, ingest, tempDataDir } from '../helpers.js';

// A batch is looked up in two passes (every query's first reads, then each
// probe): what it finds must be what one lookup after another finds.

/** `text` as a user might type it: by `how`, as is, upper-cased or capitalised. */
function typed(text: string, how: number): string {
  return how === 0 ? text : how === 1 ? text.toUpperCase() : text[0]!.toUpperCase() + text.slice(1);
}

const keyChar = fc.constantFrom(...'abz019._-');
// Keys on both sides of INLINE_KEY_BYTES, where a key's tail leaves its entry.
const keyArb = fc
  .tuple(fc.array(keyChar, { minLength: 1, maxLength: INLINE_KEY_BYTES + 12 }), fc.constantFrom('ybl', 'okaxis', 'p'))
  .map(([handle, provider]) => `${handle.join('')}@${provider}`);

test('lookupBatch finds what lookup finds, query by query, batch after batch (property)', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(keyArb, { minLength: 1, maxLength: 80 }),
      fc.array(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 5 })), { minLength: 1, maxLength: 100 }), { minLength: 1, maxLength: 4 }),
      (keys, batches) => {
        const index = VpaIndex.fromKeys(keys);
        const ids = new Int32Array(100);
        const batch = new PackedBatch(index.maxKeyLength, 100);
        for (const picks of batches) {
          const queries = picks.map(([n, how]) => {
            const key = keys[n % keys.length]!;
            // Besides known keys as typed: unknown ones, one too long for any key, one not ASCII.
            if (how === 3) return `${key}x`;
            if (how === 4) return `${key}${'y'.repeat(index.maxKeyLength)}`;
            if (how === 5) return `${key}é`;
            return typed(key, how);
          });
          index.lookupBatch(batch.pack(queries), ids);
          queries.forEach((query, i) => assert.equal(ids[i], index.lookup(query), query));
          queries.forEach((query, i) => assert.equal(index.lookupBatchItem(batch, i), index.lookup(query), query));
        }
      },
    ),
    { numRuns: 200 },
  );
});

test('a packed batch refuses more queries than its room', () => {
  const batch = new PackedBatch(32, 2);
  assert.throws(() => batch.pack(['a@ybl', 'b@ybl', 'c@ybl']), RangeError);
  assert.equal(batch.pack(['a@ybl', 'b@ybl']).count, 2);
});

/** ServingView.locateAll against locate and `located`, item by item. */
function assertLocatesAll(view: ServingView, upis: readonly string[]): void {
  const { ids, inDelta } = view.locateAll(upis);
  const found = upis.map((_, i) => [ids[i], inDelta[i]]);
  const expected = upis.map((upi) => {
    const id = view.locate(upi);
    return [id, id !== NOT_FOUND && view.located === view.delta ? 1 : 0];
  });
  assert.deepEqual(found, expected, upis.join(' '));
}

test('locateAll finds what locate finds, over a snapshot and its live delta (property)', () => {
  fc.assert(
    fc.property(
      fc.array(fc.array(evidenceArb, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 }),
      fc.array(fc.array(fc.tuple(fc.constantFrom(...ASKED), fc.integer({ min: 0, max: 2 })), { minLength: 1, maxLength: 100 }), { minLength: 1, maxLength: 3 }),
      (batches, asked) => {
        const { base, deltas } = snapshotAndDelta(batches);
        for (const view of [new ServingView(base), ...deltas.map((delta) => new ServingView(base, delta))]) {
          // Batches of several sizes on one view: its room is made for the largest so far and kept.
          for (const picks of asked) assertLocatesAll(view, picks.map(([upi, how]) => typed(upi, how)));
        }
      },
    ),
    { numRuns: 100 },
  );
});

test('locateAll answers CLEARED for a VPA of the delta whose every item was retracted', async () => {
  const t = await tempDataDir();
  const corrections = new MemoryCorrections();
  const first = [evidence('a@ybl', 'https://x.example', { evidence_id: 'x1' }), evidence('b@ybl', 'https://y.example', { evidence_id: 'b1' })];
  await ingest(t.dir, t.root, first);
  corrections.stored(first);
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, corrections });
  try {
    await service.apply(corrections.state(), corrections.retract(await service.locate(['b1'])));
    const view = service.view;
    assert.notEqual(view.delta, null, 'the retraction is served from the delta');
    const { ids } = view.locateAll(['B@ybl', 'a@ybl', 'nobody@ybl']);
    assert.deepEqual([ids[0], ids[1] === NOT_FOUND, ids[2]], [NOT_FOUND, false, NOT_FOUND]);
    assertLocatesAll(view, ['b@ybl', 'A@YBL', 'nobody@ybl', 'b@ybl']);
  } finally {
    await service.close();
    await t.cleanup();
  }
});
