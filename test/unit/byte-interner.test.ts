import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MessageChannel } from 'node:worker_threads';
import { ByteInterner, type ByteInternerState } from '../../src/builder/byte-interner.js';

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

test('an interner rebuilt from its state goes on with the same ids, also after transfer to another thread (property)', async () => {
  const bytesOf = (s: string) => encoder.encode(s);
  fc.assert(
    fc.property(fc.array(fc.string({ maxLength: 10 }), { maxLength: 200 }), fc.array(fc.string({ maxLength: 10 }), { maxLength: 200 }), (before, after) => {
      const whole = new ByteInterner(4, 8);
      const first = new ByteInterner(4, 8);
      for (const s of before) {
        const b = bytesOf(s);
        assert.equal(first.intern(b, 0, b.length), whole.intern(b, 0, b.length));
      }
      const resumed = ByteInterner.fromState(first.state());
      for (const s of after) {
        const b = bytesOf(s);
        const id = resumed.intern(b, 0, b.length);
        const added = resumed.added;
        assert.equal(id, whole.intern(b, 0, b.length));
        assert.equal(added, whole.added);
      }
      assert.deepEqual(resumed.finish(), whole.finish());
    }),
    { numRuns: 200 },
  );

  // The state's arrays cross threads by transfer, as between build tasks.
  const interner = new ByteInterner(4, 8);
  for (const s of ['a@ybl', 'b@ybl', 'c@ybl']) interner.intern(bytesOf(s), 0, s.length);
  const state = interner.state();
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<ByteInternerState>((resolve) => port2.once('message', resolve));
  port1.postMessage(state, [state.table.buffer, state.offsets.buffer, state.bytes.buffer] as ArrayBuffer[]);
  const moved = ByteInterner.fromState(await received);
  port1.close();
  assert.equal(moved.intern(bytesOf('b@ybl'), 0, 5), 1);
  assert.equal(moved.added, false);
  assert.equal(moved.intern(bytesOf('d@ybl'), 0, 5), 3);
});

test('compactState trims spare offsets and bytes, and an interner resumed from it goes on with the same ids (property)', () => {
  const bytesOf = (s: string) => encoder.encode(s);
  fc.assert(
    fc.property(
      fc.array(fc.string({ maxLength: 12 }), { maxLength: 300 }),
      fc.array(fc.string({ maxLength: 12 }), { maxLength: 300 }),
      fc.integer({ min: 1, max: 4096 }),
      (before, after, expected) => {
        const whole = new ByteInterner(4, 8);
        // Sized generously, as a dedup task sizes its interner from its whole input.
        const first = new ByteInterner(expected, expected * 16);
        for (const s of before) {
          const b = bytesOf(s);
          assert.equal(first.intern(b, 0, b.length), whole.intern(b, 0, b.length));
        }
        const state = first.compactState();
        const used = state.offsets[state.size]!;
        assert.ok(state.bytes.length <= used + (used >>> 2), `bytes ${state.bytes.length} for ${used} used`);
        assert.ok(state.offsets.length <= state.size + 1 + ((state.size + 1) >>> 2), `offsets ${state.offsets.length} for ${state.size} ids`);
        // A compacted state compacted again is not copied: the next builds' few new ids need no copy either.
        const again = ByteInterner.fromState(state).compactState();
        assert.equal(again.bytes, state.bytes);
        assert.equal(again.offsets, state.offsets);
        const resumed = ByteInterner.fromState(state);
        for (const s of after) {
          const b = bytesOf(s);
          assert.equal(resumed.intern(b, 0, b.length), whole.intern(b, 0, b.length));
          assert.equal(resumed.added, whole.added);
        }
        assert.deepEqual(resumed.finish(), whole.finish());
      },
    ),
    { numRuns: 200 },
  );
});

test('an interner refuses a state whose arrays do not fit together', () => {
  const state = new ByteInterner(4, 8).state();
  assert.throws(() => ByteInterner.fromState({ ...state, table: new Int32Array(30) }), RangeError);
  assert.throws(() => ByteInterner.fromState({ ...state, size: -1 }), RangeError);
  assert.throws(() => ByteInterner.fromState({ ...state, size: state.table.length }), RangeError);
  assert.throws(() => ByteInterner.fromState({ ...state, size: 1, offsets: Uint32Array.of(0, 1 << 20) }), RangeError);
});
