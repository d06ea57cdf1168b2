import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NOT_FOUND } from '../src/common/brand.js';
import { hashKeyBytes, hashQuery, hashQueryWords, NON_ASCII_HASH } from '../src/engine/hash.js';
import type { KeyIndex } from '../src/engine/key-index.js';
import { ReferenceIndex } from '../src/engine/reference-index.js';
import {
  buildSlots,
  checkSlots,
  encodeKeys,
  MAX_KEYS,
  MAX_LOAD_FACTOR,
  MIN_CAPACITY,
  SLOT_WORDS,
  slotCapacity,
  slotTag,
  TAG_LONG_KEY,
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

/** Home slot of a key in a table of `capacity` slots. */
function homeSlot(key: string, capacity: number): number {
  return hashQuery(key) & (capacity - 1);
}

/**
 * A table of MIN_CAPACITY slots with one occupied slot, at the home of
 * `hash`: the tag of `hash` and `length`, id `id` and key start `start`. With
 * a query's hash, it is the slot of a key (of `length` chars) colliding with
 * the query on all 32 bits.
 */
function forgedSlots(hash: number, length: number, id: number, start: number): Uint32Array {
  const slots = new Uint32Array(SLOT_WORDS * MIN_CAPACITY);
  const { tags, pairs } = slotParts(slots);
  const home = hash & (MIN_CAPACITY - 1);
  tags[home] = slotTag(hash, length);
  pairs[2 * home] = id + 1;
  pairs[2 * home + 1] = start;
  return slots;
}

/** The two parts of a slot table: a tag per slot, then a pair [id + 1, key start] per slot. */
function slotParts(slots: Uint32Array): { capacity: number; tags: Uint32Array; pairs: Uint32Array } {
  const capacity = slots.length / SLOT_WORDS;
  return { capacity, tags: slots.subarray(0, capacity), pairs: slots.subarray(capacity) };
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
    // 5734 and 5735 keys straddle 0.7 * 8192 = 5734.4.
    for (const count of [0, 1, 4, 5, 6, 9, 100, 1000, 5734, 5735, 20_000]) {
      const { keyBytes, keyOffsets } = encodeKeys(keysOf(count));
      const slots = buildSlots(keyBytes, keyOffsets, count);
      const capacity = slots.length / SLOT_WORDS;
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

  it('fills one slot per key with its tag, id + 1 and key start', () => {
    const keys = [...keysOf(3000), `${'l'.repeat(TAG_LONG_KEY)}@ybl`, ''];
    const { keyBytes, keyOffsets } = encodeKeys(keys);
    const slots = buildSlots(keyBytes, keyOffsets, keys.length);
    const { capacity, tags, pairs } = slotParts(slots);
    const seen = new Uint8Array(keys.length);
    let used = 0;
    for (let i = 0; i < capacity; i++) {
      if (tags[i] === 0) {
        assert.equal(pairs[2 * i], 0);
        assert.equal(pairs[2 * i + 1], 0);
        continue;
      }
      used++;
      const id = pairs[2 * i]! - 1;
      assert.ok(id >= 0, `slot ${i} names no id`);
      assert.equal(seen[id], 0, `id ${id} twice`);
      seen[id] = 1;
      const start = keyOffsets[id]!;
      const end = keyOffsets[id + 1]!;
      const hash = hashKeyBytes(keyBytes, start, end);
      assert.equal(tags[i], slotTag(hash, end - start));
      assert.equal(tags[i]! >>> 8, hash >>> 8);
      assert.equal(tags[i]! & 0xff, Math.min(end - start, TAG_LONG_KEY) + 1);
      assert.equal(pairs[2 * i + 1], start);
    }
    assert.equal(used, keys.length);
    assert.equal(checkSlots(slots, keyBytes, keyOffsets), undefined);
  });

  it('puts a shared home slot into one probe run that wraps to slot 0', () => {
    const members = 24;
    const { keyBytes, keyOffsets } = encodeKeys(sameHomeKeys(members, members));
    const { capacity, tags } = slotParts(buildSlots(keyBytes, keyOffsets, members));
    assert.notEqual(tags[capacity - 1], 0);
    for (let i = 0; i < members - 1; i++) assert.notEqual(tags[i], 0, `slot ${i}`);
    assert.equal(tags[members - 1], 0);
  });

  it('compares every key char, including the tail, when the stored hash matches', () => {
    // Forge a one-key table whose slot carries the query's hash, as a 32-bit
    // collision would, so only the key comparison can tell the two apart.
    const forged = (key: string, query: string) => {
      const { keyBytes, keyOffsets } = encodeKeys([key]);
      const slots = forgedSlots(hashQuery(query), key.length, 0, 0);
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

  it('compares the length of keys too long for the tag', () => {
    // Keys of TAG_LONG_KEY chars and more share one length byte in the tag;
    // the forged slot carries the query's hash, so only the lengths differ.
    const key = `${'k'.repeat(TAG_LONG_KEY + 5)}@ybl`;
    const { keyBytes, keyOffsets } = encodeKeys(['a@ybl', key]);
    const lookup = (query: string) => {
      const slots = forgedSlots(hashQuery(query), key.length, 1, keyOffsets[1]!);
      const index = new VpaIndex(slots, keyBytes, keyOffsets);
      const bytes = encode(asciiLower(query));
      assert.equal(index.lookupBytes(bytes, 0, bytes.length), index.lookup(query), query);
      return index.lookup(query);
    };
    assert.equal(lookup(key), 1);
    assert.equal(lookup(key.toUpperCase()), 1);
    assert.equal(lookup(key.slice(0, -1)), NOT_FOUND);
    assert.equal(lookup(key.slice(0, TAG_LONG_KEY)), NOT_FOUND);
    assert.equal(lookup(`${key}x`), NOT_FOUND);
    const index = VpaIndex.fromKeys(['a@ybl', key, `${key}x`, `${key}xy`]);
    assert.equal(index.lookup(key), 1);
    assert.equal(index.lookup(`${key}X`), 2);
    assert.equal(index.lookup(`${key}XY`), 3);
    assert.equal(index.lookup(`${key}xyz`), NOT_FOUND);
  });

  it('never matches a slot whose key start lies outside keyBytes, or whose id is out of range', () => {
    const { keyBytes, keyOffsets } = encodeKeys(['abcd@ybl']);
    const query = 'abcd@ybl';
    const answers = (id: number, start: number) => {
      const index = new VpaIndex(forgedSlots(hashQuery(query), query.length, id, start), keyBytes, keyOffsets);
      const byBytes = index.lookupBytes(encode(query), 0, query.length);
      assert.equal(byBytes, index.lookup(query));
      return byBytes;
    };
    assert.equal(answers(0, 0), 0);
    for (const start of [1, 2, keyBytes.length, 0xffffffff]) assert.equal(answers(0, start), NOT_FOUND, `start ${start}`);
    // forgedSlots stores id + 1: -1 gives the 0 of a slot naming no id.
    for (const id of [-1, 1, 2, 0xfffffffe]) assert.equal(answers(id, 0), NOT_FOUND, `id ${id}`);
  });

  it('checks a slot table against its keys', () => {
    const keys = keysOf(200);
    const { keyBytes, keyOffsets } = encodeKeys(keys);
    const slots = buildSlots(keyBytes, keyOffsets, keys.length);
    assert.equal(checkSlots(slots, keyBytes, keyOffsets), undefined);
    const { capacity, tags } = slotParts(slots);
    // The n-th occupied and the first empty slot.
    const occupied = (n: number) => {
      let seen = 0;
      for (let i = 0; i < capacity; i++) if (tags[i] !== 0 && seen++ === n) return i;
      throw new Error('not enough slots');
    };
    const empty = tags.indexOf(0);
    const tampered = (edit: (tags: Uint32Array, pairs: Uint32Array) => void) => {
      const copy = slots.slice();
      const parts = slotParts(copy);
      edit(parts.tags, parts.pairs);
      return checkSlots(copy, keyBytes, keyOffsets) ?? '';
    };
    const a = occupied(3);
    const b = occupied(5);
    assert.match(tampered((_, pairs) => (pairs[2 * a + 1] = pairs[2 * a + 1]! + 1)), /key start/);
    assert.match(tampered((t) => (t[a] = t[a]! ^ 1)), /key length code/);
    assert.match(tampered((_, pairs) => (pairs[2 * a] = keys.length + 1)), /names VPA 200, but there are 200/);
    assert.match(tampered((t) => (t[a] = 0)), /slots hold 199 VPAs, expected 200/);
    assert.match(tampered((t) => (t[empty] = 1)), /slots hold 201 VPAs, expected 200/);
    assert.match(
      tampered((t) => {
        t[empty] = 1;
        t[a] = 0;
      }),
      /slot \d+ is occupied but names no VPA/,
    );
    assert.match(tampered((_, pairs) => (pairs[2 * b] = pairs[2 * a]!)), /has two slots/);
    assert.match(checkSlots(slots.subarray(1), keyBytes, keyOffsets) ?? '', /wrong shape/);
    // The hash bits of a tag are not checked: a wrong one only hides its key.
    assert.equal(tampered((t) => (t[a] = t[a]! ^ 0x100)), '');
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
    assert.throws(() => new VpaIndex(slots.subarray(0, 2 * SLOT_WORDS), keyBytes, keyOffsets), /2 keys do not fit 2 slots/);
    assert.throws(() => new VpaIndex(slots.subarray(0, 4 * SLOT_WORDS + 1), keyBytes, keyOffsets), /slots length/);
    assert.throws(() => new VpaIndex(slots.subarray(0, 3 * SLOT_WORDS), keyBytes, keyOffsets), /slots length/);
    assert.throws(() => new VpaIndex(new Uint32Array(2), keyBytes, keyOffsets), /slots length/);
    assert.throws(() => new VpaIndex(slots, keyBytes.subarray(0, 4), keyOffsets), RangeError);
    assert.throws(() => new VpaIndex(slots, keyBytes, new Uint32Array(0)), RangeError);
    const full = new Uint32Array(SLOT_WORDS * MIN_CAPACITY).fill(1);
    assert.throws(() => new VpaIndex(full, keyBytes, keyOffsets), /no empty slot/);
  });
});
