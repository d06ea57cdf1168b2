import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { NOT_FOUND } from '../../src/common/brand.js';
import { hashKeyBytes } from '../../src/engine/hash.js';
import { buildUrlSlots, checkUrlSlots, findUrl, urlSlotCapacity, URL_SLOTS_MIN_CAPACITY } from '../../src/engine/url-lookup.js';
import { buildInProcess, TEST_SCORED_AT, type EvidenceInput } from '../helpers.js';

// urlSlots maps a url's bytes to its id: held to a plain Map from url text
// to id, on urls from real builds and on tables built directly.

const utf8 = new TextEncoder();
const decoder = new TextDecoder();

/** The urls of a snapshot as text, by id. */
function urlTexts(data: { urlBytes: Uint8Array; urlOffsets: Uint32Array }): string[] {
  const out: string[] = [];
  for (let id = 0; id + 1 < data.urlOffsets.length; id++) out.push(decoder.decode(data.urlBytes.subarray(data.urlOffsets[id]!, data.urlOffsets[id + 1]!)));
  return out;
}

function lookup(data: Parameters<typeof findUrl>[0], text: string): number {
  const bytes = utf8.encode(text);
  return findUrl(data, bytes, 0, bytes.length);
}

/** A url the contract accepts: no control characters, not blank. */
const urlArb = fc
  .oneof(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
    fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 60 }).map((path) => `https://t.me/${path}`),
    fc.constantFrom('https://kyc.example/कर', 'https://t.me/ĉanelo', 'https://例え.jp/支払い', 'https://bet.example/😀'),
  )
  // eslint-disable-next-line no-control-regex -- control characters are what it leaves out
  .filter((url) => url.trim().length > 0 && !/[\x00-\x1f\x7f]/.test(url));

function evidenceOn(urls: readonly string[]): EvidenceInput[] {
  return urls.map((url, i) => ({
    evidence_id: `e${i}`,
    upi: `payee${i % 7}@ybl`,
    url,
    source_category: 'telegram',
    captured_at: new Date(TEST_SCORED_AT - i * 60_000).toISOString(),
  }));
}

test('findUrl finds every url of a built snapshot, non-ASCII ones included, and NOT_FOUND for any other (property)', () => {
  fc.assert(
    fc.property(fc.uniqueArray(urlArb, { minLength: 1, maxLength: 60 }), fc.array(urlArb, { maxLength: 20 }), (urls, others) => {
      const data = buildInProcess(evidenceOn(urls)).data;
      const texts = urlTexts(data);
      assert.deepEqual([...texts].sort(), [...urls].sort());
      assert.equal(data.urlSlots.length, urlSlotCapacity(texts.length));
      const ids = new Map(texts.map((text, id) => [text, id]));
      for (const [text, id] of ids) assert.equal(lookup(data, text), id, JSON.stringify(text));
      // Near misses: prefixes, extensions, another letter case, and unrelated urls.
      const probes = [...others, ...urls.map((url) => `${url}/`), ...urls.map((url) => url.slice(0, -1)), ...urls.map((url) => url.toUpperCase())];
      for (const probe of probes) assert.equal(lookup(data, probe), ids.get(probe) ?? NOT_FOUND, JSON.stringify(probe));
      assert.equal(checkUrlSlots(data), undefined);
    }),
    { numRuns: 200 },
  );
});

test('findUrl reads a url out of a larger buffer, between start and end', () => {
  const data = buildInProcess(evidenceOn(['https://a.example/x', 'https://b.example/ü'])).data;
  const id = lookup(data, 'https://b.example/ü');
  assert.notEqual(id, NOT_FOUND);
  const line = utf8.encode('{"url":"https://b.example/ü","upi":"x@ybl"}');
  const start = 8;
  const end = start + utf8.encode('https://b.example/ü').length;
  assert.equal(findUrl(data, line, start, end), id);
  assert.equal(findUrl(data, line, start, end - 1), NOT_FOUND);
  assert.equal(findUrl(data, line, start, start), NOT_FOUND, 'an empty range is no url');
});

test('a table of many urls: every url found, each in one slot, at most half the slots full', () => {
  const urls = Array.from({ length: 5000 }, (_, i) => (i % 5 === 0 ? `https://kyc-${i}.example/कर/${i}` : `https://t.me/channel${i}`));
  const bytes = utf8.encode(urls.join(''));
  const offsets = new Uint32Array(urls.length + 1);
  urls.forEach((url, i) => (offsets[i + 1] = offsets[i]! + utf8.encode(url).length));
  const slots = buildUrlSlots(bytes, offsets);
  assert.equal(slots.length, 16384, 'the smallest power of two of at least twice the urls');
  const table = { urlSlots: slots, urlBytes: bytes, urlOffsets: offsets };
  urls.forEach((url, id) => assert.equal(lookup(table, url), id));
  const held = slots.filter((entry) => entry !== 0);
  assert.equal(held.length, urls.length);
  assert.equal(new Set(held).size, urls.length);
  assert.equal(checkUrlSlots(table), undefined);
  // Each url lies in its probe run: from its home slot, no empty slot before it.
  for (let slot = 0; slot < slots.length; slot++) {
    if (slots[slot] === 0) continue;
    const id = slots[slot]! - 1;
    let at = hashKeyBytes(bytes, offsets[id]!, offsets[id + 1]!) & (slots.length - 1);
    for (; at !== slot; at = (at + 1) & (slots.length - 1)) assert.notEqual(slots[at], 0);
  }
});

test('capacity: a power of two, at least the minimum and twice the urls; an empty table finds nothing', () => {
  assert.equal(urlSlotCapacity(0), URL_SLOTS_MIN_CAPACITY);
  assert.equal(urlSlotCapacity(8), 16);
  assert.equal(urlSlotCapacity(9), 32);
  assert.equal(urlSlotCapacity(1000), 2048);
  assert.equal(urlSlotCapacity(1024), 2048);
  assert.equal(urlSlotCapacity(1025), 4096);
  assert.throws(() => urlSlotCapacity(-1), RangeError);
  const empty = { urlSlots: buildUrlSlots(new Uint8Array(0), new Uint32Array(1)), urlBytes: new Uint8Array(0), urlOffsets: new Uint32Array(1) };
  assert.equal(empty.urlSlots.length, URL_SLOTS_MIN_CAPACITY);
  assert.equal(lookup(empty, 'https://t.me/x'), NOT_FOUND);
  assert.equal(lookup(empty, ''), NOT_FOUND);
});

test('two equal urls are refused: the second could never be found', () => {
  const bytes = utf8.encode('https://a.examplehttps://a.example');
  assert.throws(() => buildUrlSlots(bytes, Uint32Array.of(0, 17, 34)), /duplicate url: ids 0 and 1/);
});
