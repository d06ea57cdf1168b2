import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { BinaryCopyColumn } from '../../src/store/binary-copy.js';

/** What PostgreSQL sends for a binary COPY of one bytea column holding `rows`, with a header extension of `extension` bytes. */
function copyOutput(rows: readonly Buffer[], extension = 0): Buffer {
  const parts = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), int32(0), int32(extension), Buffer.alloc(extension, 7)];
  for (const row of rows) parts.push(int16(1), int32(row.length), row);
  parts.push(int16(-1));
  return Buffer.concat(parts);
}

function int16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

/** Read `output` pushed in pieces of `size` bytes; the bytes handed on, joined, and the reader. */
function read(output: Buffer, size: number): { bytes: Buffer; column: BinaryCopyColumn } {
  const pieces: Buffer[] = [];
  const column = new BinaryCopyColumn((piece) => pieces.push(Buffer.from(piece)));
  for (let at = 0; at < output.length; at += size) column.push(output.subarray(at, at + size));
  return { bytes: Buffer.concat(pieces), column };
}

test('the rows of a binary COPY come out whole and in order, however the output is split', () => {
  const rows = [randomBytes(1000), Buffer.alloc(0), randomBytes(3), randomBytes(4097)];
  const output = copyOutput(rows, 5);
  for (const size of [1, 2, 3, 5, 7, 19, 64, 1001, output.length]) {
    const { bytes, column } = read(output, size);
    assert.deepEqual(bytes, Buffer.concat(rows), `pieces of ${size}`);
    assert.equal(column.rows, rows.length);
    assert.ok(column.complete);
  }
});

test('an output without its trailer is not complete; no rows is complete', () => {
  const output = copyOutput([randomBytes(100)]);
  assert.equal(read(output.subarray(0, output.length - 2), 10).column.complete, false);
  assert.equal(read(output.subarray(0, output.length - 50), 10).column.complete, false);
  const empty = read(copyOutput([]), 4).column;
  assert.ok(empty.complete);
  assert.equal(empty.rows, 0);
});

test('an output that breaks the format is refused', () => {
  const good = copyOutput([randomBytes(10)]);
  const badSignature = Buffer.from(good);
  badSignature[0] = 0x41;
  assert.throws(() => read(badSignature, 64), /signature/);
  const twoFields = Buffer.concat([good.subarray(0, 19), int16(2), int32(1), Buffer.from([1]), int32(1), Buffer.from([2]), int16(-1)]);
  assert.throws(() => read(twoFields, 64), /2 fields/);
  const nullField = Buffer.concat([good.subarray(0, 19), int16(1), int32(-1), int16(-1)]);
  assert.throws(() => read(nullField, 64), /NULL/);
  assert.throws(() => read(Buffer.concat([good, int16(1)]), 64), /after its trailer/);
});
