import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import fc from 'fast-check';
import { ByteInterner } from '../../src/builder/byte-interner.js';
import { CarriedIds, carriedIdsMemory, type CarriedIdsState } from '../../src/builder/carried-ids.js';
import { carriedIdsBuffers } from '../../src/builder/phases.js';

const encoder = new TextEncoder();
const bytesOf = (s: string) => encoder.encode(s);

/** `state` with its frozen ids' bytes written to a file of `dir`, as a builder spills them. */
function spilled(state: CarriedIdsState, dir: string, name: string): CarriedIdsState {
  const frozen = state.frozen;
  if (frozen === null || !(frozen.bytes instanceof SharedArrayBuffer)) return state;
  const path = join(dir, name);
  writeFileSync(path, new Uint8Array(frozen.bytes));
  return { ...state, frozen: { ...frozen, bytes: { path, byteLength: frozen.bytes.byteLength } } };
}

function frozenCount(state: CarriedIdsState): number {
  return state.frozen === null ? 0 : state.frozen.count;
}

test('carried ids number each distinct id once across builds, frozen in memory or in a file, as one interner would (property)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carried-ids-'));
  try {
    let run = 0;
    fc.assert(
      fc.property(fc.array(fc.array(fc.string({ maxLength: 10 }), { maxLength: 150 }), { minLength: 1, maxLength: 6 }), fc.boolean(), (builds, toFiles) => {
        run++;
        const model = new ByteInterner(4, 8);
        // Each build resumes from the state the one before handed on, as a builder's dedup tasks do.
        let state = new CarriedIds(4, 8).compactState();
        for (const [b, strings] of builds.entries()) {
          const ids = CarriedIds.fromState(state);
          for (const s of strings) {
            const bytes = bytesOf(s);
            // Padded: only [start, end) is read.
            const padded = new Uint8Array(bytes.length + 4).fill(0x7c);
            padded.set(bytes, 2);
            const id = ids.intern(padded, 2, 2 + bytes.length);
            const added = ids.added;
            assert.equal(id, model.intern(bytes, 0, bytes.length));
            assert.equal(added, model.added);
          }
          const before = frozenCount(state);
          state = ids.compactState();
          ids.close();
          const size = before + state.recent.size;
          const recent = model.size - before;
          // Frozen whole once the new ids are an eighth of the frozen ones and at least 16, else left as it was.
          if (recent >= 16 && recent * 8 >= before) {
            assert.equal(frozenCount(state), model.size);
            assert.equal(state.recent.size, 0);
          } else {
            assert.equal(frozenCount(state), before);
            assert.equal(size, model.size);
          }
          if (toFiles) state = spilled(state, dir, `ids-${run}-${b}`);
          const again = CarriedIds.fromStoredState(state);
          assert.equal(again.size, model.size);
          for (let id = 0; id < model.size; id++) {
            const stored = again.bytesOf(id);
            assert.deepEqual(stored, model.bytesOf(id));
            assert.equal(again.find(stored, 0, stored.length), id);
          }
          assert.equal(again.find(bytesOf('never interned: longer than ten'), 0, 30), -1);
          again.close();
        }
      }),
      { numRuns: 150 },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('frozen ids take about 9 bytes an id in memory, their bytes in shared memory, and the open table only the ids since', () => {
  const ids = new CarriedIds(200_000, 200_000 * 16);
  for (let i = 0; i < 100_000; i++) {
    const b = bytesOf(`evidence-${i}`);
    ids.intern(b, 0, b.length);
  }
  const state = ids.compactState();
  const frozen = state.frozen!;
  assert.equal(frozen.count, 100_000);
  assert.ok(frozen.bytes instanceof SharedArrayBuffer);
  const tables = frozen.starts.byteLength + frozen.entries.byteLength;
  assert.ok(tables <= 100_000 * 9.5, `${tables} bytes of tables for 100,000 ids`);
  assert.equal(state.recent.table.length, 32, 'the open table is emptied to its least');
  assert.equal(carriedIdsMemory(state), tables + frozen.bytes.byteLength + state.recent.table.byteLength + state.recent.offsets.byteLength + state.recent.bytes.byteLength);

  const resumed = CarriedIds.fromState(state);
  for (let i = 100_000; i < 101_000; i++) {
    const b = bytesOf(`evidence-${i}`);
    assert.equal(resumed.intern(b, 0, b.length), i);
  }
  // A thousand new ids are far from an eighth: the frozen ids stand, the open table holds the new ones.
  const next = resumed.compactState();
  assert.equal(next.frozen, frozen);
  assert.equal(next.recent.size, 1_000);
  assert.ok(next.recent.table.length <= 2 * 4096, `open table of ${next.recent.table.length / 2} slots for 1,000 ids`);
});

test('a state crosses threads with its tables moved and its frozen bytes shared', async () => {
  const ids = new CarriedIds(16, 64);
  for (let i = 0; i < 20; i++) ids.intern(bytesOf(`${i}@ybl`), 0, `${i}@ybl`.length);
  const state = ids.compactState();
  const buffers = carriedIdsBuffers(state);
  assert.ok(!buffers.some((buffer) => (buffer as unknown) === state.frozen!.bytes), 'shared memory is not transferred');
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<CarriedIdsState>((resolve) => port2.once('message', resolve));
  port1.postMessage(state, buffers);
  const moved = CarriedIds.fromState(await received);
  port1.close();
  assert.equal(state.frozen!.entries.length, 0, 'the entries moved');
  assert.equal(moved.intern(bytesOf('1@ybl'), 0, 5), 1);
  assert.equal(moved.added, false);
  assert.equal(moved.intern(bytesOf('d@ybl'), 0, 5), 20);
  assert.equal(moved.added, true);
});

test('frozen ids that do not hold together are refused, and a short file is an error, not a wrong answer', () => {
  const ids = new CarriedIds(16, 64);
  for (let i = 0; i < 100; i++) ids.intern(bytesOf(`id-${i}`), 0, `id-${i}`.length);
  const state = ids.compactState();
  const frozen = state.frozen!;
  assert.doesNotThrow(() => CarriedIds.fromStoredState(state));
  const twice = frozen.entries.slice();
  twice[3] = twice[1]!;
  assert.throws(() => CarriedIds.fromStoredState({ ...state, frozen: { ...frozen, entries: twice } }), /out of range or twice/);
  const moved = frozen.entries.slice();
  moved[0] = moved[0]! ^ (1 << 31);
  assert.throws(() => CarriedIds.fromStoredState({ ...state, frozen: { ...frozen, entries: moved } }), /bucket/);
  const unordered = frozen.starts.slice();
  unordered[1] = 100;
  assert.throws(() => CarriedIds.fromStoredState({ ...state, frozen: { ...frozen, starts: unordered } }), /ends before it starts/);
  const starts = frozen.starts.slice();
  starts[starts.length - 1] = 99;
  assert.throws(() => CarriedIds.fromState({ ...state, frozen: { ...frozen, starts } }), RangeError);
  assert.throws(() => CarriedIds.fromState({ ...state, frozen: { ...frozen, count: 99 } }), RangeError);
  assert.throws(() => CarriedIds.fromState({ ...state, frozen: { ...frozen, bytes: new SharedArrayBuffer(8) } }), RangeError);

  const dir = mkdtempSync(join(tmpdir(), 'carried-ids-'));
  try {
    const inFile = spilled(state, dir, 'ids');
    const path = (inFile.frozen!.bytes as { path: string }).path;
    truncateSync(path, 4 * 101 + 10);
    const short = CarriedIds.fromState(inFile);
    assert.throws(() => short.bytesOf(99), /ends before/);
    // An id whose bytes are all there is still read.
    assert.deepEqual(short.bytesOf(0), bytesOf('id-0'));
    short.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
