import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { strictDecode, strictQueryValue } from '../../src/http/strict-query.js';

// strictDecode decodes escapes of ASCII bytes itself and leaves the rest
// to decodeURIComponent: whatever the text, it must answer what
// decodeURIComponent answers, and null where that throws.

function reference(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** Text built of plain characters, well-formed escapes of any byte, and broken ones. */
const pieces = fc.oneof(
  fc.string({ maxLength: 4 }),
  fc.constantFrom('@', '.', '+', '&', '=', 'é', '😀', '%', '%4', '%g0', '%0g', '%%', '%E2%82%AC', '%C3', '%ED%A0%80', '%C0%80'),
  fc.integer({ min: 0, max: 255 }).map((byte) => `%${byte.toString(16).padStart(2, '0')}`),
  fc.integer({ min: 0, max: 255 }).map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`),
);

test('answers what decodeURIComponent answers, for any text', () => {
  fc.assert(
    fc.property(fc.array(pieces, { maxLength: 12 }), (parts) => {
      const text = parts.join('');
      assert.equal(strictDecode(text), reference(text), JSON.stringify(text));
    }),
    { numRuns: 5000 },
  );
});

/** strictQueryValue as its docs say: null when any escape of the query is malformed, else the first pair's value decoded, `+` a space. */
function referenceValue(query: string, key: string): string | undefined | null {
  const parts = query.split('&');
  if (parts.some((part) => reference(part) === null)) return null;
  const pair = parts.find((part) => part.length > key.length && part.startsWith(key) && part[key.length] === '=');
  return pair === undefined ? undefined : reference(pair.slice(key.length + 1).replace(/\+/g, ' '));
}

test('a query value is read as its docs say, for any query', () => {
  const part = fc.oneof(fc.constantFrom('upi=', 'upi', 'as_of=', 'x=', 'upix=', 'up%69='), fc.array(pieces, { maxLength: 4 }).map((p) => p.join('')));
  fc.assert(
    fc.property(fc.array(fc.array(part, { maxLength: 3 }).map((p) => p.join('')), { maxLength: 5 }), (parts) => {
      const query = parts.join('&');
      assert.equal(strictQueryValue(query, 'upi'), referenceValue(query, 'upi'), JSON.stringify(query));
    }),
    { numRuns: 5000 },
  );
});

test('a VPA as clients send it', () => {
  assert.equal(strictDecode('shop.owner%40okaxis'), 'shop.owner@okaxis');
  assert.equal(strictDecode('shop.owner%40okaxis%'), null);
  assert.equal(strictDecode('shop%2Eowner%40OKAXIS'), 'shop.owner@OKAXIS');
  assert.equal(strictDecode('caf%C3%A9%40ybl'), 'café@ybl');
  assert.equal(strictQueryValue('upi=a%2Bb%40ybl&x=%41', 'upi'), 'a+b@ybl');
  assert.equal(strictQueryValue('upi=a+b%40ybl', 'upi'), 'a b@ybl');
  assert.equal(strictQueryValue('upi=a%40ybl&x=%zz', 'upi'), null);
});
