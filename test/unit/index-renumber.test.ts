import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildIndexArrays, checkIndexArrays, encodeKeys, renumberIndex, VpaIndex } from '../../src/engine/vpa-index.js';
import { NOT_FOUND } from '../../src/common/brand.js';

// Assembly builds the index over the keys in the order it gathered them and
// renumbers it once the final order (clusters together) is known.

const key = fc.tuple(fc.stringMatching(/^[a-z0-9._-]{1,40}$/), fc.constantFrom('ybl', 'okaxis', 'paytm', 'okhdfcbank')).map(([h, p]) => `${h}@${p}`);

test('a renumbered index finds every key under its new id, reads each back, and passes the loader check (property)', () => {
  fc.assert(
    fc.property(fc.uniqueArray(key, { minLength: 1, maxLength: 300 }), fc.integer(), (keys, seed) => {
      const { keyBytes, keyOffsets } = encodeKeys(keys);
      // A permutation from the seed: Fisher-Yates with a small LCG.
      const newIdOf = Uint32Array.from(keys, (_, i) => i);
      let state = seed >>> 0;
      for (let i = newIdOf.length - 1; i > 0; i--) {
        state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
        const j = state % (i + 1);
        [newIdOf[i], newIdOf[j]] = [newIdOf[j]!, newIdOf[i]!];
      }
      const index = new VpaIndex(renumberIndex(buildIndexArrays(keyBytes, keyOffsets, keys.length), newIdOf));
      keys.forEach((k, id) => {
        assert.equal(index.lookup(k.toUpperCase()), newIdOf[id]);
        assert.equal(index.keyOf(newIdOf[id]!), k);
      });
      assert.equal(index.lookup(`absent.${keys[0]}`), NOT_FOUND);
    }),
    { numRuns: 150 },
  );
  const { keyBytes, keyOffsets } = encodeKeys(['b@ybl', 'a@ybl', 'c@ybl']);
  assert.equal(checkIndexArrays(renumberIndex(buildIndexArrays(keyBytes, keyOffsets, 3), Uint32Array.of(2, 0, 1))), undefined);
});

test('renumbering refuses a map of the wrong length', () => {
  const { keyBytes, keyOffsets } = encodeKeys(['a@ybl', 'b@ybl']);
  assert.throws(() => renumberIndex(buildIndexArrays(keyBytes, keyOffsets, 2), Uint32Array.of(0)), RangeError);
});
