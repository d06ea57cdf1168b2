import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { vpaHashHex, vpaHashWords, wordsHex } from '../../src/vpa/vpa-hash.js';
import { MAX_VPA_LENGTH } from '../../src/vpa/vpa.js';

// The vectors docs/api.md gives: a caller's own SHA-256 must agree with them.
const VECTORS: readonly (readonly [string, string])[] = [
  ['ramesh.kumar@okaxis', '3130d1845106aa058a5c9769cda64c5b85b67ad99e08c7bf38763647c40c8651'],
  ['Ramesh.Kumar@OKAXIS', '3130d1845106aa058a5c9769cda64c5b85b67ad99e08c7bf38763647c40c8651'],
  ['9876543210@ybl', '693a0300c10496d37d1a04471e98363f58a8910fa3f5f57955b110f7e67e70e5'],
];

test('h(upi) is SHA-256 of the lower-cased VPA, for every length a VPA may have', () => {
  const char = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@');
  fc.assert(
    fc.property(fc.array(char, { minLength: 0, maxLength: MAX_VPA_LENGTH }), (chars) => {
      const text = chars.join('');
      assert.equal(vpaHashHex(text), createHash('sha256').update(text.toLowerCase()).digest('hex'));
    }),
    { numRuns: 2000 },
  );
  // Every padding boundary: 55, 56 and 64 bytes change how many blocks the message takes.
  for (let length = 0; length <= 130; length++) {
    const text = 'a'.repeat(length);
    assert.equal(vpaHashHex(text), createHash('sha256').update(text).digest('hex'), `length ${length}`);
  }
});

test('the documented vectors, and hex digits taken from the words', () => {
  for (const [upi, hex] of VECTORS) assert.equal(vpaHashHex(upi), hex);
  const words = vpaHashWords('ramesh.kumar@okaxis', new Uint32Array(8));
  assert.equal(wordsHex(words, 0, 5) + wordsHex(words, 5, 64), VECTORS[0]![1]);
});
