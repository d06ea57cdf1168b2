import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NOT_FOUND } from '../../src/common/brand.js';
import { hashKeyBytes, hashQuery, hashQueryWords, NON_ASCII_HASH } from '../../src/engine/hash.js';
import type { KeyIndex } from '../../src/engine/key-index.js';
import { ReferenceIndex } from '../reference-index.js';
import {
  buildIndexArrays,
  checkIndexArrays,
  encodeKeys,
  ENTRY_WORDS,
  homeSlot,
  INLINE_KEY_BYTES,
  INLINE_PREFIX_WORDS,
  MAX_KEYS,
  MAX_LOAD_FACTOR,
  MIN_CAPACITY,
  PackedQuery,
  slotCapacity,
  slotTag,
  TAG_LONG_KEY,
  VpaIndex,
  type IndexArrays,
} from '../../src/engine/vpa-index.js';

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
  // eslint-disable-next-line no-control-regex -- all of ASCII, its control characters included
  return /^[\x00-\x7f]*$/.test(text);
}

/** The model of a lookup: first key equal to the query ignoring ASCII case. */
function linearLookup(keys: readonly string[], query: string): number {
  if (!isAscii(query)) return NOT_FOUND;
  const wanted = asciiLower(query);
  return keys.findIndex((key) => asciiLower(key) === wanted);
}

/** Home slot of a key in a table of `capacity` slots. */
function homeOf(key: string, capacity: number): number {
  return homeSlot(hashQuery(key), capacity);
}

/**
 * A one-key index whose only slot, at the home of `hash`, holds `key` with
 * the tag of `hash` and naming id `id`. With a query's hash, it is the slot
 * of a key colliding with the query on all 32 bits, so only the key
 * comparison can tell them apart. `edit` may tamper with the arrays first.
 */
function forgedIndex(key: string, hash: number, id = 0, edit?: (arrays: IndexArrays, slot: number) => void): VpaIndex {
  const { keyBytes, keyOffsets } = encodeKeys([key]);
  const real = buildIndexArrays(keyBytes, keyOffsets, 1);
  const capacity = real.slotTags.length;
  const from = real.vpaSlots[0]!;
  const to = homeSlot(hash, capacity);
  const slotTags = new Uint16Array(capacity);
  slotTags[to] = slotTag(hash, key.length);
  const slotEntries = new Uint32Array(real.slotEntries.length);
  slotEntries.set(real.slotEntries.subarray(from * ENTRY_WORDS, (from + 1) * ENTRY_WORDS), to * ENTRY_WORDS);
  slotEntries[to * ENTRY_WORDS] = id + 1;
  const arrays = { slotTags, slotEntries, keyTails: real.keyTails.slice(), vpaSlots: Uint32Array.of(to) };
  edit?.(arrays, to);
  return new VpaIndex(arrays);
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
    if (homeOf(key, capacity) === capacity - 1) found.push(key);
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

    it('agrees with a linear search on long keys sharing long prefixes', () => {
      // Prefixes of 14 to 30 chars put the first difference on either side of the inline limit.
      const unit = fc.constantFrom('a', 'B', '.', '0');
      const key = fc.tuple(fc.integer({ min: 14, max: 30 }), fc.string({ unit, maxLength: 12 })).map(([n, rest]) => `${'p'.repeat(n)}${rest}@ybl`);
      fc.assert(
        fc.property(fc.uniqueArray(key, { selector: asciiLower, maxLength: 30 }), fc.array(key, { maxLength: 20 }), (keys, others) => {
          const index = factory(keys);
          for (const query of [...keys, ...keys.map((k) => k.toUpperCase()), ...others]) {
            assert.equal(index.lookup(query), linearLookup(keys, query), query);
          }
          keys.forEach((k, id) => assert.equal(index.keyOf(id), asciiLower(k)));
        }),
        { numRuns: 200 },
      );
    });
  });
}

runConformance('VpaIndex', (keys) => VpaIndex.fromKeys(keys));
runConformance('ReferenceIndex', (keys) => new ReferenceIndex(keys));
// The lookup of a serving view, which packs a query once for the delta's index and the snapshot's.
runConformance('VpaIndex.lookupPacked', (keys) => {
  const index = VpaIndex.fromKeys(keys);
  // Room for queries longer than any key: such queries must miss, not overrun.
  const query = new PackedQuery(index.maxKeyLength + 64);
  return { size: index.size, lookup: (q: string) => index.lookupPacked(query.pack(q)), keyOf: (id: number) => index.keyOf(id) };
});

describe('VpaIndex and ReferenceIndex', () => {
  it('agree on random VPA-like keys and queries', () => {
    const handle = fc.string({ unit: fc.constantFrom(...'abcXYZ019._-'), minLength: 1, maxLength: 40 });
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
    // Not a power of two: homeSlot maps hashes onto any number of slots.
    const capacity = 1000;
    const counts = new Uint32Array(capacity);
    const n = 64 * capacity;
    for (let i = 0; i < n; i++) counts[homeOf(`${9_000_000_000 + i}@ybl`, capacity)]!++;
    let chiSquare = 0;
    for (const count of counts) chiSquare += (count - 64) ** 2 / 64;
    // 999 degrees of freedom: mean 999, sd about 45; 1300 is beyond 6 sd.
    assert.ok(chiSquare < 1300, `chi-square ${chiSquare}`);
  });
});


describe('VpaIndex layout', () => {
  function keysOf(count: number): string[] {
    return Array.from({ length: count }, (_, i) => `${7_000_000_000 + i * 7}@ybl`);
  }

  /** Keys around the inline limit and the tag's length limit, with the empty key. */
  const EDGE_KEYS = [
    'x'.repeat(INLINE_KEY_BYTES - 4) + '@ybl',
    'y'.repeat(INLINE_KEY_BYTES - 3) + '@ybl',
    'z'.repeat(INLINE_PREFIX_WORDS * 4) + '@ybl',
    `merchant.settlement.account.${'9'.repeat(40)}@okhdfcbank`,
    `${'l'.repeat(TAG_LONG_KEY - 4)}@ybl`,
    `${'m'.repeat(TAG_LONG_KEY)}@ybl`,
    `${'n'.repeat(256)}@${'p'.repeat(64)}`,
    '',
  ];

  it('maps a hash onto slots as floor(hash * capacity / 2^32), exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 1, max: 2 ** 28 }), (hash, capacity) => {
        const exact = Number((BigInt(hash) * BigInt(capacity)) >> 32n);
        assert.equal(homeSlot(hash, capacity), exact);
        assert.ok(exact < capacity);
      }),
    );
    assert.equal(homeSlot(0xffffffff, 2 ** 28), 2 ** 28 - 1);
    assert.equal(homeSlot(0, 14_285_715), 0);
  });

  it('a scan of every slot names each key once, with its id, as keyOf gives it, and as bytes alike', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.oneof(fc.constantFrom(...EDGE_KEYS), fc.stringMatching(/^[a-z0-9.]{1,40}@[a-z]{2,12}$/)), { maxLength: 60 }), (keys) => {
        const { keyBytes, keyOffsets } = encodeKeys(keys);
        const index = new VpaIndex(buildIndexArrays(keyBytes, keyOffsets, keys.length));
        const seen = new Map<number, string>();
        const bytes = new Uint8Array(index.maxKeyLength);
        for (let slot = 0; slot < index.capacity; slot++) {
          const id = index.idAtSlot(slot);
          if (id < 0) continue;
          assert.ok(!seen.has(id), `id ${id} in two slots`);
          seen.set(id, index.keyAtSlot(slot));
          const length = index.keyBytesAtSlot(slot, bytes);
          assert.equal(Buffer.from(bytes.subarray(0, length)).toString('latin1'), index.keyAtSlot(slot));
        }
        assert.deepEqual(
          [...seen].sort(([a], [b]) => a - b),
          keys.map((_, id) => [id, index.keyOf(id)]),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('sizes the table to the fewest slots with load at most MAX_LOAD_FACTOR', () => {
    for (const count of [0, 1, 4, 5, 6, 7, 9, 100, 1000, 5734, 5735, 20_000]) {
      const { keyBytes, keyOffsets } = encodeKeys(keysOf(count));
      const arrays = buildIndexArrays(keyBytes, keyOffsets, count);
      const capacity = arrays.slotTags.length;
      assert.equal(arrays.slotEntries.length, capacity * ENTRY_WORDS);
      assert.ok(capacity >= MIN_CAPACITY && capacity > count);
      assert.ok(count <= capacity * MAX_LOAD_FACTOR, `${count}: load ${count / capacity}`);
      if (capacity > MIN_CAPACITY) assert.ok(count > (capacity - 1) * MAX_LOAD_FACTOR, `${count}: not the fewest`);
      assert.equal(new VpaIndex(arrays).capacity, capacity);
    }
    assert.equal(slotCapacity(10_000_000), 14_285_715);
  });

  it('rejects more keys than one table can hold', () => {
    assert.throws(() => slotCapacity(MAX_KEYS + 1), RangeError);
    assert.throws(() => buildIndexArrays(new Uint8Array(0), new Uint32Array(1), MAX_KEYS + 1), RangeError);
    assert.throws(() => slotCapacity(-1), RangeError);
  });

  it('fills one slot per key with its tag, id + 1 and packed key, a tail record for long keys', () => {
    const keys = [...keysOf(3000), ...EDGE_KEYS];
    const { keyBytes, keyOffsets } = encodeKeys(keys);
    const arrays = buildIndexArrays(keyBytes, keyOffsets, keys.length);
    const { slotTags: tags, slotEntries: entries } = arrays;
    const capacity = tags.length;
    const packed = (bytes: Uint8Array): Uint32Array => {
      const words = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
      words.set(bytes);
      return new Uint32Array(words.buffer);
    };
    const seen = new Uint8Array(keys.length);
    let used = 0;
    let tailWords = 0;
    for (let i = 0; i < capacity; i++) {
      const entry = entries.subarray(i * ENTRY_WORDS, (i + 1) * ENTRY_WORDS);
      if (tags[i] === 0) {
        assert.ok(entry.every((w) => w === 0), `empty slot ${i}`);
        continue;
      }
      used++;
      const id = entry[0]! - 1;
      assert.ok(id >= 0, `slot ${i} names no id`);
      assert.equal(seen[id], 0, `id ${id} twice`);
      seen[id] = 1;
      assert.equal(arrays.vpaSlots[id], i);
      const key = keyBytes.subarray(keyOffsets[id]!, keyOffsets[id + 1]!);
      const hash = hashKeyBytes(key, 0, key.length);
      assert.equal(tags[i], slotTag(hash, key.length));
      assert.equal(tags[i]! & 0xff, Math.min(key.length, TAG_LONG_KEY) + 1);
      const words = packed(key);
      if (key.length <= INLINE_KEY_BYTES) {
        const inline = new Uint32Array(ENTRY_WORDS - 1);
        inline.set(words);
        assert.deepEqual(entry.subarray(1), inline, `key ${id}`);
      } else {
        assert.deepEqual(entry.subarray(1, 1 + INLINE_PREFIX_WORDS), words.subarray(0, INLINE_PREFIX_WORDS));
        const at = entry[ENTRY_WORDS - 1]!;
        assert.equal(arrays.keyTails[at], key.length);
        const rest = words.subarray(INLINE_PREFIX_WORDS);
        assert.deepEqual(arrays.keyTails.subarray(at + 1, at + 1 + rest.length), rest);
        tailWords += 1 + rest.length;
      }
    }
    assert.equal(used, keys.length);
    assert.equal(tailWords, arrays.keyTails.length);
    assert.equal(checkIndexArrays(arrays), undefined);
    const index = new VpaIndex(arrays);
    assert.equal(index.maxKeyLength, 256 + 1 + 64);
    keys.forEach((key, id) => {
      assert.equal(index.keyOf(id), key);
      assert.equal(index.lookup(key.toUpperCase()), id);
    });
  });

  it('puts a shared home slot into one probe run that wraps to slot 0', () => {
    const members = 24;
    const { keyBytes, keyOffsets } = encodeKeys(sameHomeKeys(members, members));
    const tags = buildIndexArrays(keyBytes, keyOffsets, members).slotTags;
    const capacity = tags.length;
    assert.notEqual(tags[capacity - 1], 0);
    for (let i = 0; i < members - 1; i++) assert.notEqual(tags[i], 0, `slot ${i}`);
    assert.equal(tags[members - 1], 0);
  });

  it('compares every key char, in the entry and in the tail, when the stored hash matches', () => {
    const forged = (key: string, query: string) => forgedIndex(key, hashQuery(query)).lookup(query);
    // Lengths 13-16 leave 1, 2, 3 and 0 chars after the last full word; 21-40 reach the tail.
    const keys = ['abcdefghi@ybl', 'abcdefghij@ybl', 'a.c_e-g9i0@okax', 'abcdefghijkl@ybl', 'abcdefghijklmnopq@ybl'];
    keys.push('abcdefghijklmnopqrst@ybl', 'abcdefghijklmnopqrstu@ybl', 'abcdefghijklmnopqrstuvwxyz.0123456789@ybl');
    for (const key of keys) {
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
    // Keys of TAG_LONG_KEY chars and more share one length code in the tag;
    // the forged slot carries the query's hash, so only the lengths differ.
    const key = `${'k'.repeat(TAG_LONG_KEY + 5)}@ybl`;
    const lookup = (query: string) => {
      const index = forgedIndex(key, hashQuery(query));
      const bytes = encode(asciiLower(query));
      assert.equal(index.lookupBytes(bytes, 0, bytes.length), index.lookup(query), query);
      return index.lookup(query);
    };
    assert.equal(lookup(key), 0);
    assert.equal(lookup(key.toUpperCase()), 0);
    assert.equal(lookup(key.slice(0, -1)), NOT_FOUND);
    assert.equal(lookup(key.slice(0, TAG_LONG_KEY)), NOT_FOUND);
    assert.equal(lookup(`${key}x`), NOT_FOUND);
    const index = VpaIndex.fromKeys(['a@ybl', key, `${key}x`, `${key}xy`]);
    assert.equal(index.lookup(key), 1);
    assert.equal(index.lookup(`${key}X`), 2);
    assert.equal(index.lookup(`${key}XY`), 3);
    assert.equal(index.lookup(`${key}xyz`), NOT_FOUND);
  });

  it('never matches a slot whose id is out of range or whose tail lies outside keyTails', () => {
    const answers = (key: string, id: number, edit?: (arrays: IndexArrays, slot: number) => void) => {
      const index = forgedIndex(key, hashQuery(key), id, edit);
      const byBytes = index.lookupBytes(encode(key), 0, key.length);
      assert.equal(byBytes, index.lookup(key));
      return byBytes;
    };
    const short = 'abcd@ybl';
    const long = `${'q'.repeat(30)}@ybl`;
    assert.equal(answers(short, 0), 0);
    assert.equal(answers(long, 0), 0);
    // forgedIndex stores id + 1: -1 gives the 0 of a slot naming no id.
    for (const id of [-1, 1, 2, 0x7ffffffe, 0xfffffffe]) {
      assert.equal(answers(short, id), NOT_FOUND, `id ${id}`);
      assert.equal(answers(long, id), NOT_FOUND, `id ${id}`);
    }
    const tailAt = (at: number) => (arrays: IndexArrays, slot: number) => {
      arrays.slotEntries[slot * ENTRY_WORDS + ENTRY_WORDS - 1] = at;
    };
    for (const at of [1, 2, 3, 0x7fffffff, 0xffffffff]) assert.equal(answers(long, 0, tailAt(at)), NOT_FOUND, `tail at ${at}`);
    // A tail record naming another length never matches.
    assert.equal(answers(long, 0, (arrays) => (arrays.keyTails[0] = long.length + 1)), NOT_FOUND);
  });

  it('checks index arrays', () => {
    const keys = [...keysOf(200), `${'w'.repeat(30)}@ybl`];
    const { keyBytes, keyOffsets } = encodeKeys(keys);
    const arrays = buildIndexArrays(keyBytes, keyOffsets, keys.length);
    assert.equal(checkIndexArrays(arrays), undefined);
    const tags = arrays.slotTags;
    const capacity = tags.length;
    // The n-th occupied and the first empty slot.
    const occupied = (n: number) => {
      let seen = 0;
      for (let i = 0; i < capacity; i++) if (tags[i] !== 0 && seen++ === n) return i;
      throw new Error('not enough slots');
    };
    const empty = tags.indexOf(0);
    const tampered = (edit: (parts: { tags: Uint16Array; entries: Uint32Array; keyTails: Uint32Array; vpaSlots: Uint32Array }) => void) => {
      const copy = {
        slotTags: arrays.slotTags.slice(),
        slotEntries: arrays.slotEntries.slice(),
        keyTails: arrays.keyTails.slice(),
        vpaSlots: arrays.vpaSlots.slice(),
      };
      edit({ tags: copy.slotTags, entries: copy.slotEntries, keyTails: copy.keyTails, vpaSlots: copy.vpaSlots });
      return checkIndexArrays(copy) ?? '';
    };
    const a = occupied(3);
    const b = occupied(5);
    const longSlot = arrays.vpaSlots[200]!;
    const entry = (slot: number, word: number) => slot * ENTRY_WORDS + word;
    // Keys of keysOf are 14 chars: length code 15; 14 says 13 chars, leaving one in the padding.
    assert.match(tampered(({ tags }) => (tags[a] = tags[a]! ^ 1)), /not zero padded/);
    assert.match(tampered(({ entries }) => (entries[entry(a, 1)] = (entries[entry(a, 1)]! & ~0xff) | 0x41)), /not lower-cased ASCII/);
    assert.match(tampered(({ entries }) => (entries[entry(a, 4)] = 0x80)), /not lower-cased ASCII|not zero padded/);
    assert.match(tampered(({ entries }) => (entries[entry(a, 0)] = keys.length + 1)), /names VPA 201, but there are 201/);
    assert.match(tampered(({ tags }) => (tags[a] = 0)), /slot \d+ is empty but its entry is not/);
    assert.match(tampered(({ tags }) => (tags[empty] = 15)), /slot \d+ is occupied but names no VPA/);
    assert.match(tampered(({ entries }) => (entries[entry(b, 0)] = entries[entry(a, 0)]!)), /is in slot \d+, but vpaSlots says|has two slots/);
    assert.match(tampered(({ vpaSlots }) => (vpaSlots[7] = vpaSlots[8]!)), /is in slot \d+, but vpaSlots says/);
    assert.match(tampered(({ entries }) => (entries[entry(longSlot, ENTRY_WORDS - 1)] = 99)), /tail record at 99 lies past keyTails/);
    assert.match(tampered(({ keyTails }) => (keyTails[0] = 29)), /tail record gives length 29, its tag length code 35/);
    assert.match(tampered(({ keyTails }) => (keyTails[keyTails.length - 1] = 0x41)), /not lower-cased ASCII/);
    assert.match(checkIndexArrays({ ...arrays, slotEntries: arrays.slotEntries.subarray(1) }) ?? '', /expected 8 for each of \d+ slots/);
    assert.match(checkIndexArrays({ ...arrays, slotTags: arrays.slotTags.subarray(0, 201) }) ?? '', /201 slots for 201 VPAs/);
    assert.match(checkIndexArrays({ ...arrays, vpaSlots: arrays.vpaSlots.subarray(1) }) ?? '', /names VPA 200, but there are 200/);
    assert.match(tampered(({ tags, entries }) => {
      tags[empty] = tags[a]!;
      entries.copyWithin(entry(empty, 0), entry(a, 0), entry(a, ENTRY_WORDS));
    }), /slots hold 202 VPAs, expected 201/);
    // The hash bits of a tag are not checked: a wrong one only hides its key.
    assert.equal(tampered(({ tags }) => (tags[a] = tags[a]! ^ 0x100)), '');
  });

  it('round-trips every id through keyOf and lookup', () => {
    const keys = [...keysOf(5000), ...EDGE_KEYS].map((k, i) => (i % 3 === 0 ? k.toUpperCase() : k));
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
    assert.equal(index.lookupBytes(encode('abc@ybl'), 0, 7), NOT_FOUND);
  });

  it('reads arrays that are views at any offset of a larger buffer, as a snapshot holds them', () => {
    const keys = ['first@ybl', `second.with.a.long.handle.${'7'.repeat(20)}@ybl`];
    const { keyBytes, keyOffsets } = encodeKeys(keys);
    const built = buildIndexArrays(keyBytes, keyOffsets, 2);
    const backing = new ArrayBuffer(1024);
    let at = 8;
    const place = <T extends Uint16Array | Uint32Array>(array: T): T => {
      const view = new (array.constructor as new (b: ArrayBuffer, at: number, n: number) => T)(backing, at, array.length);
      view.set(array);
      at += array.byteLength + 4;
      return view;
    };
    const index = new VpaIndex({
      slotTags: place(built.slotTags),
      slotEntries: place(built.slotEntries),
      keyTails: place(built.keyTails),
      vpaSlots: place(built.vpaSlots),
    });
    assert.equal(index.lookup(keys[1]!.toUpperCase()), 1);
    assert.equal(index.keyOf(1), keys[1]);
    assert.equal(index.keyOf(0), 'first@ybl');
  });

  it('rejects inconsistent arrays', () => {
    const { keyBytes, keyOffsets } = encodeKeys(['a@ybl', 'b@ybl']);
    assert.throws(() => buildIndexArrays(keyBytes, Uint32Array.of(0, 5, 3), 2), RangeError);
    assert.throws(() => buildIndexArrays(keyBytes, Uint32Array.of(0, 5, 99), 2), RangeError);
    assert.throws(() => buildIndexArrays(keyBytes, keyOffsets, 3), RangeError);
    assert.throws(() => buildIndexArrays(encode('A@ybl'), Uint32Array.of(0, 5), 1), RangeError);
    assert.throws(() => buildIndexArrays(Uint8Array.of(0x61, 0xe4), Uint32Array.of(0, 2), 1), RangeError);
    assert.throws(() => buildIndexArrays(encode('a@ybla@ybl'), Uint32Array.of(0, 5, 10), 2), /duplicate key: ids 0 and 1 are both "a@ybl"/);
    assert.throws(() => encodeKeys(['ok', 'nö']), RangeError);
    const arrays = buildIndexArrays(keyBytes, keyOffsets, 2);
    const { slotTags, slotEntries } = arrays;
    const slotsOf = (count: number) => ({ slotTags: slotTags.subarray(0, count), slotEntries: slotEntries.subarray(0, count * ENTRY_WORDS) });
    assert.throws(() => new VpaIndex({ ...arrays, ...slotsOf(2) }), /2 keys do not fit 2 slots/);
    assert.throws(() => new VpaIndex({ ...arrays, slotEntries: slotEntries.subarray(1) }), /slotEntries length/);
    assert.throws(() => new VpaIndex({ ...arrays, ...slotsOf(0) }), /slot count/);
    assert.throws(() => new VpaIndex(arrays, -1), RangeError);
    const full = new Uint16Array(slotTags.length).fill(1);
    assert.throws(() => new VpaIndex({ ...arrays, slotTags: full }), /no empty slot/);
  });
});
