import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ByteInterner } from '../src/intel/build/byte-interner.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Intern every string through `interner` (each as a slice of a larger buffer), with a Map as the model. */
function internAll(interner: ByteInterner, strings: readonly string[]): void {
  const model = new Map<string, number>();
  for (const s of strings) {
    const body = encoder.encode(s);
    // Padding on both sides: the interner must read only [start, end).
    const buffer = new Uint8Array(body.length + 6).fill(0x7c);
    buffer.set(body, 3);
    const id = interner.intern(buffer, 3, 3 + body.length);
    const known = model.get(s);
    if (known === undefined) {
      assert.equal(interner.added, true, `first sight of ${JSON.stringify(s)}`);
      assert.equal(id, model.size, 'new entries get the next dense id');
      model.set(s, id);
    } else {
      assert.equal(interner.added, false, `repeat of ${JSON.stringify(s)}`);
      assert.equal(id, known);
    }
  }
  assert.equal(interner.size, model.size);
  const { bytes, offsets } = interner.finish();
  assert.equal(offsets.length, model.size + 1);
  assert.equal(bytes.length, offsets[model.size]);
  for (const [s, id] of model) assert.equal(decoder.decode(bytes.subarray(offsets[id]!, offsets[id + 1]!)), s);
}

test('interner gives each distinct byte string one dense id, through growth and rehashing (property)', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ maxLength: 12 }), { maxLength: 400 }), fc.integer({ min: 1, max: 64 }), (strings, expected) => {
      // A tiny expected size forces the table, offsets and bytes to grow many times.
      internAll(new ByteInterner(expected, 8), [...strings, ...strings.slice().reverse()]);
    }),
    { numRuns: 300 },
  );
});

test('interner tells apart strings that share a prefix, a length or nothing at all', () => {
  const strings: string[] = ['', 'a', 'A', 'ab', 'ba', 'a\u0000', '\u0000a', 'é', 'e\u0301'];
  for (let i = 0; i < 20_000; i++) strings.push(`vpa${i}@ybl`, `vpa${i}@ybL`, `${i}`);
  internAll(new ByteInterner(16, 64), strings);
  internAll(new ByteInterner(100_000, 1 << 20), strings);
});
