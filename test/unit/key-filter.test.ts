import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildKeyFilter, mayHold } from '../../src/engine/key-filter.js';
import { hashQuery } from '../../src/engine/hash.js';
import { encodeKeys } from '../../src/engine/vpa-index.js';
import { freshArrays } from '../../src/common/scratch-arrays.js';

const vpa = fc.stringMatching(/^[a-z0-9._-]{1,40}@[a-z][a-z0-9]{1,10}$/);

test('every key passes its filter, whatever its letter case when asked', () => {
  fc.assert(
    fc.property(fc.uniqueArray(vpa, { maxLength: 300 }), (keys) => {
      const { keyBytes, keyOffsets } = encodeKeys(keys);
      const filter = buildKeyFilter(keyBytes, keyOffsets, keys.length, freshArrays);
      for (const key of keys) {
        assert.ok(mayHold(filter, hashQuery(key)), key);
        assert.ok(mayHold(filter, hashQuery(key.toUpperCase())), key.toUpperCase());
      }
    }),
  );
});

test('most keys not in the filter are told so: at 8 bits a key, about 5 % pass', () => {
  const keys = Array.from({ length: 100_000 }, (_, i) => `in.${i}@ybl`);
  const { keyBytes, keyOffsets } = encodeKeys(keys);
  const filter = buildKeyFilter(keyBytes, keyOffsets, keys.length, freshArrays);
  assert.ok(filter.length * 32 >= keys.length * 8);
  let passed = 0;
  const asked = 200_000;
  for (let i = 0; i < asked; i++) if (mayHold(filter, hashQuery(`out.${i}@okaxis`))) passed++;
  const rate = passed / asked;
  assert.ok(rate < 0.08, `${(rate * 100).toFixed(1)} % of other keys passed`);
});

test('an empty filter holds nothing', () => {
  const filter = buildKeyFilter(new Uint8Array(0), new Uint32Array(1), 0, freshArrays);
  assert.equal(mayHold(filter, hashQuery('a@ybl')), false);
});
