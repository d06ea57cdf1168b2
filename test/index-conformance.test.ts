import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NOT_FOUND } from '../src/common/brand.js';
import { hashKeyBytes, hashQuery, hashQueryWords, NON_ASCII_HASH } from '../src/engine/hash.js';
import type { KeyIndex } from '../src/engine/key-index.js';
import { ReferenceIndex } from '../src/engine/reference-index.js';
import {
  buildSlots,
  encodeKeys,
  MAX_KEYS,
  MAX_LOAD_FACTOR,
  MIN_CAPACITY,
  slotCapacity,
  VpaIndex,
} from '../src/engine/vpa-index.js';

type Factory = (keys: readonly string[]) => KeyIndex;

const NON_ASCII_QUERIES = ['ä', 'ä@ybl', 'rahul@yblä', '😀', '9876543210@ybl😀', '\u0130', '\u0130@ybl', '\u212a@ybl', '\u0080', '\uffff'];

/** Lower-case ASCII A-Z only, the folding every index must apply. */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) | 32));
}

/** Bytes of an ASCII string. */
function encode(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

function isAscii(text: string): boolean {
  return /^[\x00-\x7f]*$/.test(text);
}

/** The model of a lookup: first key equal to the query ignoring ASCII case. */
function linearLookup(keys: readonly string[], query: string): number {
  if (!isAscii(query)) return NOT_FOUND;
  const wanted = asciiLower(query);
  return keys.findIndex((key) => asciiLower(key) === wanted);
}

/** Home slot of a key in a table of `capacity` pairs. */
function homeSlot(key: string, capacity: number): number {
  return hashQuery(key) & (capacity - 1);
}

/**
 * `count` keys whose hashes all land on the last slot of the table VpaIndex
 * builds for `members` keys, so their probe run is long and wraps to slot 0.
 */
function sameHomeKeys(members: number, count: number): string[] {
  const capacity = slotCapacity(members);
  const found: string[] = [];
  for (let n = 0; found.length < count; n++) {
    const key = `user${n}@ybl`;
    if (homeSlot(key, capacity) === capacity - 1) found.push(key);
  }
  return found;
}

/** Two distinct keys of equal length with the same 32-bit hash (birthday search). */
function fullHashCollision(): [string, string] {
  const seen = new Map<number, string>();
  for (let n = 0; n < 2_000_000; n++) {
    const key = `x${1_000_000 + n}@ybl`;
    const hash = hashQuery(key);
    const other = seen.get(hash);
    if (other !== undefined) return [other, key];
    seen.set(hash, key);
  }
  throw new Error('no full-hash collision found');
}

const COLLIDING = fullHashCollision();

function runConformance(name: string, factory: Factory): void {
  describe(`${name} conformance`, () => {
    const keys = ['9876543210@ybl', 'rahul.sharma42@okhdfcbank', 'priya_7@paytm', 'shop-123@okaxis', 'a@bc'];

    it('finds every key at its position', () => {
      const index = factory(keys);
      assert.equal(index.size, keys.length);
      keys.forEach((key, id) => assert.equal(index.lookup(key), id, key));
    });

    it('misses keys it does not hold', () => {
      const index = factory(keys);
      for (const query of ['9876543211@ybl', 'rahul.sharma42@okhdfc', 'nobody@upi', '@', 'a@b', 'a@bcd', ' a@bc', 'a@bc ']) {
        assert.equal(index.lookup(query), NOT_FOUND, query);
      }
    });

    it('matches ignoring ASCII case, both ways', () => {
      const index = factory(['MiXeD.Case@OkAxis', 'lower@ybl']);
      for (const query of ['mixed.case@okaxis', 'MIXED.CASE@OKAXIS', 'mIxEd.cAsE@oKaXiS']) assert.equal(index.lookup(query), 0, query);
      for (const query of ['LOWER@YBL', 'Lower@Ybl', 'lower@ybl']) assert.equal(index.lookup(query), 1, query);
      assert.equal(index.keyOf(0), 'mixed.case@okaxis');
    });

    it('does not fold the ASCII neighbours of the letters', () => {
      // '@' | 0x20 is '`' and '[' | 0x20 is '{': only A-Z fold.
      const index = factory(['a`b@x', 'c{d@x', 'e@f@x', 'g[h@x']);
      assert.equal(index.lookup('a@b@x'), NOT_FOUND);
      assert.equal(index.lookup('c[d@x'), NOT_FOUND);
      assert.equal(index.lookup('e`f@x'), NOT_FOUND);
      assert.equal(index.lookup('g{h@x'), NOT_FOUND);
      assert.equal(index.lookup('A`B@X'), 0);
      assert.equal(index.lookup('C{D@X'), 1);
      assert.equal(index.lookup('E@F@X'), 2);
      assert.equal(index.lookup('G[H@X'), 3);
    });

    it('tells apart keys differing in one char at any position', () => {
      const base = 'abcdefghij@ybl';
      const variants = [base];
      for (let i = 0; i < base.length; i++) variants.push(`${base.slice(0, i)}_${base.slice(i + 1)}`);
      const index = factory(variants);
      variants.forEach((key, id) => assert.equal(index.lookup(key), id, key));
      assert.equal(index.lookup('abcdefghij@ybk'), NOT_FOUND);
    });

    it('tells apart keys that are prefixes of each other', () => {
      const chain = ['a', 'ab', 'abc', 'abcd', 'abcde', 'abcdef', 'abcdefg', 'abcdefgh', 'abcdefghi'];
      const index = factory(chain);
      chain.forEach((key, id) => assert.equal(index.lookup(key), id, key));
      assert.equal(index.lookup('abcdefghij'), NOT_FOUND);
      const sparse = factory(['abcd', 'abcdefgh']);
      for (const query of ['abc', 'abcde', 'abcdefg', 'abcdefghi']) assert.equal(sparse.lookup(query), NOT_FOUND, query);
    });

    it('works empty', () => {
      const index = factory([]);
      assert.equal(index.size, 0);
      for (const query of ['', 'a', '9876543210@ybl', 'ä']) assert.equal(index.lookup(query), NOT_FOUND);
      assert.throws(() => index.keyOf(0), RangeError);
    });

    it('works with a single key', () => {
      const index = factory(['Solo@Ybl']);
      assert.equal(index.size, 1);
      assert.equal(index.lookup('solo@ybl'), 0);
      assert.equal(index.lookup('SOLO@YBL'), 0);
      assert.equal(index.lookup('solo@yb'), NOT_FOUND);
      assert.equal(index.keyOf(0), 'solo@ybl');
    });

    it('never matches a query with non-ASCII chars', () => {
      // Would match if 'İ' (U+0130) or 'K' (U+212A, Kelvin) were folded the Unicode way.
      const index = factory(['i@ybl', 'k@ybl', 'a@ybl', ...keys]);
      for (const query of NON_ASCII_QUERIES) assert.equal(index.lookup(query), NOT_FOUND, JSON.stringify(query));
      assert.equal(index.lookup('\u0130@ybl'.toLowerCase()), NOT_FOUND);
    });

    it('answers the empty string', () => {
      assert.equal(factory(keys).lookup(''), NOT_FOUND);
      const withEmpty = factory(['x@ybl', '']);
      assert.equal(withEmpty.lookup(''), 1);
      assert.equal(withEmpty.keyOf(1), '');
    });

    it('answers very long strings', () => {
      const long = `${'a'.repeat(1_000_000)}@ybl`;
      const index = factory([...keys, `${'b'.repeat(300)}@ybl`]);
      assert.equal(index.lookup(long), NOT_FOUND);
      assert.equal(index.lookup(`${'B'.repeat(300)}@YBL`), keys.length);
      assert.equal(index.lookup(`${'b'.repeat(301)}@ybl`), NOT_FOUND);
      assert.equal(index.lookup(`${'b'.repeat(299)}@ybl`), NOT_FOUND);
      assert.equal(factory([long]).lookup(long.toUpperCase()), 0);
    });

    it('handles many keys sharing one home slot, with wrap-around', () => {
      const members = 24;
      const all = sameHomeKeys(members, members + 8);
      const inIndex = all.slice(0, members);
      const index = factory(inIndex);
      inIndex.forEach((key, id) => {
        assert.equal(index.lookup(key), id, key);
        assert.equal(index.lookup(key.toUpperCase()), id, key);
      });
      for (const outsider of all.slice(members)) assert.equal(index.lookup(outsider), NOT_FOUND, outsider);
    });

    it('tells apart keys with the same 32-bit hash', () => {
      const [a, b] = COLLIDING;
      assert.equal(hashQuery(a), hashQuery(b));
      const one = factory([a]);
      assert.equal(one.lookup(a), 0);
      assert.equal(one.lookup(b), NOT_FOUND);
      assert.equal(one.lookup(b.toUpperCase()), NOT_FOUND);
      const both = factory([b, a]);
      assert.equal(both.lookup(a), 1);
      assert.equal(both.lookup(b), 0);
    });

    it('returns lower-cased keys from keyOf and rejects ids out of range', () => {
      const index = factory(['UPPER@YBL', 'lower@ybl']);
      assert.equal(index.keyOf(0), 'upper@ybl');
      assert.equal(index.keyOf(1), 'lower@ybl');
      for (const id of [-1, 2, 0.5, Number.NaN]) assert.throws(() => index.keyOf(id), RangeError, String(id));
    });

    it('rejects duplicate keys, ignoring case', () => {
      assert.throws(() => factory(['a@ybl', 'b@ybl', 'a@ybl']), RangeError);
      assert.throws(() => factory(['Dup@Ybl', 'dup@ybl']), RangeError);
    });

    it('rejects non-ASCII keys', () => {
      assert.throws(() => factory(['ä@ybl']), RangeError);
    });

    it('agrees with a linear search on random keys and queries', () => {
      // A tiny alphabet with the letters' ASCII neighbours makes near-misses likely.
      const unit = fc.constantFrom('a', 'b', 'A', 'B', 'z', 'Z', '@', '`', '[', '{', '0', '.', '_');
      const key = fc.string({ unit, maxLength: 9 });
      const keySet = fc.uniqueArray(key, { selector: asciiLower, maxLength: 40 });
      const flipCase = (text: string, mask: number) =>
        [...text].map((c, i) => ((mask >>> i % 31) & 1 ? c.toUpperCase() : c.toLowerCase())).join('');
      fc.assert(
        fc.property(
          keySet,
          fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 20 }),
          fc.array(fc.oneof(key, fc.string({ unit: 'binary-ascii', maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 6 })), {
            maxLength: 20,
          }),
          (keys, picks, others) => {
            const index = factory(keys);
            const queries = [...others];
            if (keys.length > 0) for (const [at, mask] of picks) queries.push(flipCase(keys[at % keys.length]!, mask));
            for (const query of queries) assert.equal(index.lookup(query), linearLookup(keys, query), JSON.stringify(query));
            keys.forEach((k, id) => assert.equal(index.keyOf(id), asciiLower(k)));
          },
        ),
        { numRuns: 300 },
      );
    });
  });
}

runConformance('VpaIndex', (keys) => VpaIndex.fromKeys(keys));
runConformance('ReferenceIndex', (keys) => new ReferenceIndex(keys));

describe('VpaIndex and ReferenceIndex', () => {
  it('agree on random VPA-like keys and queries', () => {
    const handle = fc.string({ unit: fc.constantFrom(...'abcXYZ019._-'), minLength: 1, maxLength: 12 });
    const provider = fc.constantFrom('ybl', 'okaxis', 'paytm', 'OKHDFCBANK', 'upi');
    const vpa = fc.tuple(handle, provider).map(([h, p]) => `${h}@${p}`);
    fc.assert(
      fc.property(fc.uniqueArray(vpa, { selector: asciiLower, maxLength: 200 }), fc.array(vpa, { maxLength: 50 }), (keys, queries) => {
        const fast = VpaIndex.fromKeys(keys);
        const reference = new ReferenceIndex(keys);
        for (const query of [...keys, ...keys.map((k) => k.toUpperCase()), ...queries]) {
          assert.equal(fast.lookup(query), reference.lookup(query), query);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('hash', () => {
  it('keeps its known values (they are stored in snapshots: a change needs a format version bump)', () => {
    const golden: [string, number][] = [
      ['', 0x2652ad69],
      ['a', 0x166fd5af],
      ['ab', 0x2c2f8bb8],
      ['abc', 0xde3f89dd],
      ['abcd', 0x815cb357],
      ['9876543210@ybl', 0x4cf1bc79],
      ['rahul.sharma42@okhdfcbank', 0x27393f39],
    ];
    for (const [text, hash] of golden) {
      assert.equal(hashKeyBytes(encode(text), 0, text.length), hash, text);
      assert.equal(hashQuery(text.toUpperCase()), hash, text);
    }
  });

  it('gives the same hash over bytes, over the query and over the query with words', () => {
    const ascii = fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c)), maxLength: 40 });
    fc.assert(
      fc.property(ascii, fc.nat(8), (text, pad) => {
        const lower = encode(asciiLower(text));
        // The key may sit anywhere in a larger byte array.
        const bytes = new Uint8Array(pad + lower.length + 3).fill(0x41);
        bytes.set(lower, pad);
        const hash = hashKeyBytes(bytes, pad, pad + lower.length);
        const words = new Int32Array(Math.ceil(text.length / 4));
        assert.equal(hashQuery(text), hash);
        assert.equal(hashQuery(text.toUpperCase()), hash);
        assert.equal(hashQueryWords(text, words), hash);
        assert.ok(hash >= 0 && hash <= 0xffffffff && Number.isInteger(hash));
        // words hold the lower-cased chars packed little-endian.
        const packed = new Uint8Array(words.length * 4);
        packed.set(lower);
        assert.deepEqual(words, new Int32Array(packed.buffer));
      }),
    );
  });

  it('answers NON_ASCII_HASH for any query with a non-ASCII char', () => {
    for (const query of NON_ASCII_QUERIES) {
      assert.equal(hashQuery(query), NON_ASCII_HASH, query);
      assert.equal(hashQueryWords(query, new Int32Array(8)), NON_ASCII_HASH, query);
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 10 }), fc.integer({ min: 0x80, max: 0xffff }), fc.string({ maxLength: 10 }), (a, c, b) => {
        assert.equal(hashQuery(a + String.fromCharCode(c) + b), NON_ASCII_HASH);
      }),
    );
  });

  it('spreads similar keys evenly over slots', () => {
    const capacity = 1024;
    const counts = new Uint32Array(capacity);
    const n = 64 * capacity;
    for (let i = 0; i < n; i++) counts[homeSlot(`${9_000_000_000 + i}@ybl`, capacity)]!++;
    let chiSquare = 0;
    for (const count of counts) chiSquare += (count - 64) ** 2 / 64;
    // 1023 degrees of freedom: mean 1023, sd about 45; 1300 is beyond 6 sd.
    assert.ok(chiSquare < 1300, `chi-square ${chiSquare}`);
  });
});

describe('VpaIndex layout', () => {
  function keysOf(count: number): string[] {
    return Array.from({ length: count }, (_, i) => `${7_000_000_000 + i * 7}@ybl`);
  }

  it('sizes the table to the smallest power of two with load at most MAX_LOAD_FACTOR', () => {
    for (const count of [0, 1, 4, 5, 9, 100, 1000, 4915, 4916, 20_000]) {
      const { keyBytes, keyOffsets } = encodeKeys(keysOf(count));
      const slots = buildSlots(keyBytes, keyOffsets, count);
      const capacity = slots.length / 2;
      assert.equal(capacity & (capacity - 1), 0, `${count}: power of two`);
      assert.ok(capacity >= MIN_CAPACITY);
      assert.ok(count <= capacity * MAX_LOAD_FACTOR, `${count}: load ${count / capacity}`);
      if (capacity > MIN_CAPACITY) assert.ok(count > (capacity / 2) * MAX_LOAD_FACTOR, `${count}: not the smallest`);
      assert.equal(new VpaIndex(slots, keyBytes, keyOffsets).capacity, capacity);
    }
    assert.equal(slotCapacity(10_000_000), 2 ** 24);
  });

  it('rejects more keys than one table can hold', () => {
    assert.throws(() => slotCapacity(MAX_KEYS + 1), RangeError);
    assert.throws(() => buildSlots(new Uint8Array(0), new Uint32Array(1), MAX_KEYS + 1), RangeError);
    assert.throws(() => slotCapacity(-1), RangeError);
  });

  it('fills one slot per key with its hash and id + 1', () => {
    const keys = keysOf(3000);
    const { keyBytes, keyOffsets } = encodeKeys(keys);
    const slots = buildSlots(keyBytes, keyOffsets, keys.length);
    const seen = new Uint8Array(keys.length);
    let used = 0;
    for (let i = 0; i < slots.length; i += 2) {
      const value = slots[i + 1]!;
      if (value === 0) {
        assert.equal(slots[i], 0);
        continue;
      }
      used++;
      const id = value - 1;
      assert.equal(seen[id], 0, `id ${id} twice`);
      seen[id] = 1;
      assert.equal(slots[i], hashKeyBytes(keyBytes, keyOffsets[id]!, keyOffsets[id + 1]!));
    }
    assert.equal(used, keys.length);
  });

  it('puts a shared home slot into one probe run that wraps to slot 0', () => {
    const members = 24;
    const { keyBytes, keyOffsets } = encodeKeys(sameHomeKeys(members, members));
    const slots = buildSlots(keyBytes, keyOffsets, members);
    const capacity = slots.length / 2;
    assert.notEqual(slots[2 * (capacity - 1) + 1], 0);
    for (let i = 0; i < members - 1; i++) assert.notEqual(slots[2 * i + 1], 0, `slot ${i}`);
    assert.equal(slots[2 * (members - 1) + 1], 0);
  });

  it('compares every key char, including the tail, when the stored hash matches', () => {
    // Forge a one-key table whose slot carries the query's hash, as a 32-bit
    // collision would, so only the key comparison can tell the two apart.
    const forged = (key: string, query: string) => {
      const { keyBytes, keyOffsets } = encodeKeys([key]);
      const slots = new Uint32Array(2 * MIN_CAPACITY);
      const hash = hashQuery(query);
      const home = hash & (MIN_CAPACITY - 1);
      slots[2 * home] = hash;
      slots[2 * home + 1] = 1;
      return new VpaIndex(slots, keyBytes, keyOffsets).lookup(query);
    };
    // Lengths 13-16 leave tails of 1, 2, 3 and 0 chars after the 4-char words.
    for (const key of ['abcdefghi@ybl', 'abcdefghij@ybl', 'a.c_e-g9i0@okax', 'abcdefghijkl@ybl']) {
      assert.equal(forged(key, key), 0);
      assert.equal(forged(key, key.toUpperCase()), 0);
      for (let j = 0; j < key.length; j++) {
        const c = key.charCodeAt(j);
        const swapped = String.fromCharCode(c === 0x78 ? 0x79 : 0x78);
        assert.equal(forged(key, key.slice(0, j) + swapped + key.slice(j + 1)), NOT_FOUND, `${key} at ${j}`);
        // Flipping bit 0x20 is a case change for a letter and a different char otherwise.
        const flipped = key.slice(0, j) + String.fromCharCode(c ^ 0x20) + key.slice(j + 1);
        const isLetter = (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a;
        assert.equal(forged(key, flipped), isLetter ? 0 : NOT_FOUND, `${key} flipped at ${j}`);
      }
      assert.equal(forged(key, key.slice(0, -1)), NOT_FOUND);
      assert.equal(forged(key, `${key}l`), NOT_FOUND);
    }
  });

  it('round-trips every id through keyOf and lookup', () => {
    const keys = keysOf(5000).map((k, i) => (i % 3 === 0 ? k.toUpperCase() : k));
    const index = VpaIndex.fromKeys(keys);
    for (let id = 0; id < keys.length; id++) {
      const key = index.keyOf(id);
      assert.equal(key, asciiLower(keys[id]!));
      assert.equal(index.lookup(key), id);
      assert.equal(index.lookupBytes(encode(key), 0, key.length), id);
    }
  });

  it('looks up raw key bytes anywhere in a buffer', () => {
    const index = VpaIndex.fromKeys(['alpha@ybl', 'beta@ybl']);
    const buffer = encode('xxbeta@yblxx');
    assert.equal(index.lookupBytes(buffer, 2, 10), 1);
    assert.equal(index.lookupBytes(buffer, 2, 9), NOT_FOUND);
    assert.equal(index.lookupBytes(encode('BETA@YBL'), 0, 8), NOT_FOUND);
  });

  it('answers queries longer than any key without matching them', () => {
    const index = VpaIndex.fromKeys(['ab@ybl']);
    assert.equal(index.maxKeyLength, 6);
    assert.equal(index.lookup('abc@ybl'), NOT_FOUND);
  });

  it('builds from a snapshot-style layout whose bytes are not at offset 0', () => {
    const { keyBytes, keyOffsets } = encodeKeys(['first@ybl', 'second@ybl']);
    const backing = new Uint8Array(keyBytes.length + 5);
    backing.set(keyBytes, 5);
    const shifted = backing.subarray(5);
    const index = new VpaIndex(buildSlots(shifted, keyOffsets, 2), shifted, keyOffsets);
    assert.equal(index.lookup('SECOND@YBL'), 1);
    assert.equal(index.keyOf(0), 'first@ybl');
  });

  it('rejects inconsistent arrays', () => {
    const { keyBytes, keyOffsets } = encodeKeys(['a@ybl', 'b@ybl']);
    assert.throws(() => buildSlots(keyBytes, Uint32Array.of(0, 5, 3), 2), RangeError);
    assert.throws(() => buildSlots(keyBytes, Uint32Array.of(0, 5, 99), 2), RangeError);
    assert.throws(() => buildSlots(keyBytes, keyOffsets, 3), RangeError);
    assert.throws(() => buildSlots(encode('A@ybl'), Uint32Array.of(0, 5), 1), RangeError);
    assert.throws(() => buildSlots(Uint8Array.of(0x61, 0xe4), Uint32Array.of(0, 2), 1), RangeError);
    assert.throws(() => encodeKeys(['ok', 'nö']), RangeError);
    const slots = buildSlots(keyBytes, keyOffsets, 2);
    assert.throws(() => new VpaIndex(slots.subarray(0, 6), keyBytes, keyOffsets), RangeError);
    assert.throws(() => new VpaIndex(slots.subarray(0, 7), keyBytes, keyOffsets), RangeError);
    assert.throws(() => new VpaIndex(new Uint32Array(2), keyBytes, keyOffsets), RangeError);
    assert.throws(() => new VpaIndex(slots, keyBytes.subarray(0, 4), keyOffsets), RangeError);
    assert.throws(() => new VpaIndex(slots, keyBytes, new Uint32Array(0)), RangeError);
    const full = new Uint32Array(2 * MIN_CAPACITY).fill(1);
    assert.throws(() => new VpaIndex(full, keyBytes, keyOffsets), RangeError);
  });
});
