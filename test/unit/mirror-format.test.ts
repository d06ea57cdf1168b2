import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MIRROR_KIND_DIFF,
  MIRROR_KIND_FULL,
  MIRROR_RISK_CATEGORIES,
  MirrorFormatError,
  applyMirrorDiff,
  decodeMirrorFile,
  encodeMirrorFile,
  findMirrorEntry,
  manifestSigningText,
  parseManifest,
  type MirrorEntries,
} from '../../src/mirror/mirror-format.js';
import { RISK_CATEGORIES } from '../../src/vpa/categories.js';
import { CONFIDENCE_BANDS } from '../../src/api/advice.js';
import { MIRROR_BANDS } from '../../src/mirror/mirror-format.js';

/** A sorted entry set from [hi, lo, meta] triples (duplicates of a prefix dropped). */
export function entriesOf(triples: readonly (readonly [number, number, number])[]): MirrorEntries {
  const sorted = [...new Map(triples.map((t) => [`${t[0]}:${t[1]}`, t])).values()].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return { count: sorted.length, hi: Uint32Array.from(sorted, (t) => t[0]), lo: Uint32Array.from(sorted, (t) => t[1]), meta: Uint8Array.from(sorted, (t) => t[2]) };
}

const triple = fc.tuple(fc.integer({ min: 0, max: 7 }).map((n) => n * 0x2000_0000), fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 4 }).chain((r) => fc.integer({ min: 0, max: 2 }).map((b) => (r << 4) | b)));
const entrySet = fc.array(triple, { maxLength: 40 }).map(entriesOf);
const plain = (e: MirrorEntries) => ({ hi: [...e.hi.subarray(0, e.count)], lo: [...e.lo.subarray(0, e.count)], meta: [...e.meta.subarray(0, e.count)] });

test("the mirror's categories and bands are the API's, in the service's order", () => {
  assert.deepEqual(MIRROR_RISK_CATEGORIES, RISK_CATEGORIES);
  assert.deepEqual(MIRROR_BANDS, CONFIDENCE_BANDS.slice(0, 3));
});

test('a full file decodes to the set it was made of, and every entry is found', () => {
  fc.assert(
    fc.property(entrySet, (entries) => {
      const decoded = decodeMirrorFile(encodeMirrorFile(MIRROR_KIND_FULL, entries));
      assert.equal(decoded.kind, MIRROR_KIND_FULL);
      assert.deepEqual(plain(decoded.entries), plain(entries));
      for (let i = 0; i < entries.count; i++) assert.equal(findMirrorEntry(decoded.entries, entries.hi[i]!, entries.lo[i]!), i);
    }),
  );
});

test('a diff between two sets, applied to the first, makes the second', () => {
  fc.assert(
    fc.property(entrySet, entrySet, (from, to) => {
      const key = (e: MirrorEntries, i: number) => `${e.hi[i]}:${e.lo[i]}`;
      const before = new Map(Array.from({ length: from.count }, (_, i) => [key(from, i), i]));
      const after = new Map(Array.from({ length: to.count }, (_, i) => [key(to, i), i]));
      const put = Array.from({ length: to.count }, (_, i) => i).filter((i) => !before.has(key(to, i)) || from.meta[before.get(key(to, i))!] !== to.meta[i]);
      const removed = Array.from({ length: from.count }, (_, i) => i).filter((i) => !after.has(key(from, i)));
      const diff = encodeMirrorFile(
        MIRROR_KIND_DIFF,
        { count: put.length, hi: Uint32Array.from(put, (i) => to.hi[i]!), lo: Uint32Array.from(put, (i) => to.lo[i]!), meta: Uint8Array.from(put, (i) => to.meta[i]!) },
        { count: removed.length, hi: Uint32Array.from(removed, (i) => from.hi[i]!), lo: Uint32Array.from(removed, (i) => from.lo[i]!) },
      );
      assert.deepEqual(plain(applyMirrorDiff(from, decodeMirrorFile(diff))), plain(to));
    }),
  );
});

test('a truncated, lengthened, reordered or foreign file is refused with its problem', () => {
  const file = encodeMirrorFile(MIRROR_KIND_FULL, entriesOf([[1, 1, 0x10], [1, 2, 0x21], [2, 0, 0x02]]));
  const refused = (bytes: Uint8Array, problem: string) => assert.throws(() => decodeMirrorFile(bytes), (e: unknown) => e instanceof MirrorFormatError && e.problem === problem);
  refused(file.subarray(0, file.length - 1), 'truncated');
  refused(file.subarray(0, 10), 'truncated');
  refused(Uint8Array.from([...file, 0]), 'format');
  const swapped = Uint8Array.from(file);
  swapped.copyWithin(24, 33, 42);
  swapped.set(file.subarray(24, 33), 33);
  refused(swapped, 'order');
  const foreign = Uint8Array.from(file);
  foreign[0] = 0x58;
  refused(foreign, 'format');
  const badMeta = Uint8Array.from(file);
  badMeta[24 + 8] = 0x9f;
  refused(badMeta, 'format');
  // A diff that removes what the set does not hold was made for another state.
  const diff = decodeMirrorFile(encodeMirrorFile(MIRROR_KIND_DIFF, entriesOf([]), { count: 1, hi: Uint32Array.of(9), lo: Uint32Array.of(9) }));
  assert.throws(() => applyMirrorDiff(entriesOf([[1, 1, 0]]), diff), MirrorFormatError);
});

test('a manifest is signed over one canonical text of its fields, and read back checked', () => {
  const manifest = { version: 3, created_at: '2026-11-28T10:00:00.000Z', count: 2, sha256: 'a'.repeat(64), full: { url: '/v1/mirror/full/3', bytes: 42 }, diffs: [{ from: 2, url: '/v1/mirror/diff/2/3', bytes: 33 }] };
  const text = '{"version":3,"created_at":"2026-11-28T10:00:00.000Z","count":2,"sha256":"' + 'a'.repeat(64) + '","full":{"url":"/v1/mirror/full/3","bytes":42},"diffs":[{"from":2,"url":"/v1/mirror/diff/2/3","bytes":33}]}';
  assert.equal(manifestSigningText(manifest), text);
  // Key order as given does not change the text signed.
  assert.equal(manifestSigningText({ diffs: manifest.diffs, full: { bytes: 42, url: '/v1/mirror/full/3' }, sha256: manifest.sha256, count: 2, created_at: manifest.created_at, version: 3 }), text);
  assert.deepEqual(parseManifest({ ...manifest, signature: 'c2ln' }), { ...manifest, signature: 'c2ln' });
  for (const bad of [null, [], { ...manifest }, { ...manifest, signature: 's', version: -1 }, { ...manifest, signature: 's', sha256: 'A'.repeat(64) }, { ...manifest, signature: 's', diffs: [{}] }]) {
    assert.throws(() => parseManifest(bad), MirrorFormatError);
  }
});
