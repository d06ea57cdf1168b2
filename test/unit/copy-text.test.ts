import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CopyTextRows, RowTooLongError } from '../../src/store/copy-text.js';

/** A field as COPY's text format writes it. */
function escaped(field: string): string {
  return field.replace(/[\\\b\f\n\r\t\v]/g, (c) => ({ '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v' })[c]!);
}

function output(rows: readonly (readonly string[])[]): Buffer {
  return Buffer.from(rows.map((fields) => `${fields.map(escaped).join('\t')}\n`).join(''));
}

/** `bytes` pushed in pieces cut at `cuts`: the rows read, and whether the end was a row's. */
function read(bytes: Buffer, cuts: readonly number[], maxRowBytes?: number): { rows: string[][]; complete: boolean } {
  const parser = new CopyTextRows(maxRowBytes);
  const rows: string[][] = [];
  let from = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    rows.push(...parser.push(bytes.subarray(from, cut)));
    from = cut;
  }
  rows.push(...parser.push(bytes.subarray(from)));
  return { rows, complete: parser.complete };
}

test('rows come out as written, whatever the pieces, escapes and multi-byte characters', () => {
  const field = fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', '\\', '\t', '\n', '\r', '\b', '\f', '\v', 'N', ' ') });
  const rows = fc.array(fc.array(field, { minLength: 2, maxLength: 5 }), { minLength: 1, maxLength: 8 });
  fc.assert(
    fc.property(rows, fc.array(fc.nat()), (written, cuts) => {
      const bytes = output(written);
      const result = read(bytes, cuts.map((c) => c % (bytes.length + 1)));
      assert.deepEqual(result.rows, written);
      assert.ok(result.complete);
    }),
    { numRuns: 3000 },
  );
});

test('an output cut inside a row is not complete', () => {
  const bytes = output([['1', 'a'], ['2', 'b']]);
  const parser = new CopyTextRows();
  assert.deepEqual(parser.push(bytes.subarray(0, bytes.length - 2)), [['1', 'a']]);
  assert.equal(parser.complete, false);
  assert.deepEqual(parser.push(bytes.subarray(bytes.length - 2)), [['2', 'b']]);
  assert.ok(parser.complete);
});

test('a row cut across pieces is kept up to the bound, and refused past it', () => {
  const bound = 64;
  const fitting = [['1', 'x'.repeat(bound - 4)]];
  fc.assert(
    fc.property(fc.array(fc.nat()), (cuts) => {
      const within = output([...fitting, ...fitting]);
      assert.deepEqual(read(within, cuts.map((c) => c % (within.length + 1)), bound).rows, [...fitting, ...fitting]);
    }),
    { numRuns: 500 },
  );
  const past = output([...fitting, ['2', 'y'.repeat(bound)]]);
  const start = output(fitting).length + 1;
  // A byte at a time, and in pieces cut just inside the long row and before its newline.
  assert.throws(() => read(past, Array.from({ length: past.length }, (_, i) => i), bound), RowTooLongError);
  assert.throws(() => read(past, [start, past.length - 1], bound), RowTooLongError);
});
