import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RecordReader, RecordWriter, FIXED_BYTES } from '../../src/builder/record-codec.js';

// Records cross build phases as bytes. The dedup phase keeps each record
// without its evidence id (the id table keeps it); everything else about the
// record must read back the same.

interface Fields {
  chunk: number;
  line: number;
  capturedAt: number;
  flags: number;
  upi: string;
  url: string;
  id: string;
}

const fields = fc.record({
  chunk: fc.nat(),
  line: fc.nat(),
  capturedAt: fc.integer({ min: 0, max: 4_102_444_800_000 }),
  flags: fc.integer({ min: 0, max: 63 }),
  upi: fc.stringMatching(/^[a-z0-9._-]{1,40}@[a-z]{2,20}$/),
  url: fc.string({ unit: 'binary', minLength: 1, maxLength: 120 }).map((s) => `https://x.example/${s}`),
  id: fc.string({ unit: 'binary', minLength: 1, maxLength: 64 }),
});

function readAll(buffer: ArrayBufferLike) {
  const reader = new RecordReader(buffer);
  const raw = Buffer.from(reader.raw.buffer, reader.raw.byteOffset, reader.raw.byteLength);
  const out: Fields[] = [];
  while (reader.next()) {
    out.push({
      chunk: raw.readUInt32LE(reader.rawStart),
      line: raw.readUInt32LE(reader.rawStart + 4),
      capturedAt: reader.capturedAt,
      flags: reader.flags,
      upi: raw.toString('latin1', reader.upiStart, reader.urlStart),
      url: raw.toString('utf8', reader.urlStart, reader.idStart),
      id: raw.toString('utf8', reader.idStart, reader.rawEnd),
    });
  }
  return out;
}

test('records read back as written, and appendWithoutId keeps every field but the id (property)', () => {
  fc.assert(
    fc.property(fc.array(fields, { maxLength: 40 }), (records) => {
      const writer = new RecordWriter(64);
      for (const r of records) writer.append(r.chunk, r.line, r.capturedAt, r.flags, r.upi, r.url, r.id);
      const written = writer.finish();
      const utf8 = (s: string) => Buffer.from(s, 'utf8').toString('utf8');
      assert.deepEqual(
        readAll(written),
        records.map((r) => ({ ...r, url: utf8(r.url), id: utf8(r.id) })),
      );

      const stripped = new RecordWriter(64);
      const reader = new RecordReader(written);
      while (reader.next()) stripped.appendWithoutId(reader.raw, reader.rawStart, reader.idStart);
      const kept = stripped.finishShared();
      assert.deepEqual(
        readAll(kept),
        records.map((r) => ({ ...r, url: utf8(r.url), id: '' })),
      );
      assert.equal(kept.byteLength, written.byteLength - records.reduce((sum, r) => sum + Buffer.byteLength(r.id), 0));
      assert.ok(kept.byteLength >= records.length * FIXED_BYTES);
    }),
    { numRuns: 200 },
  );
});
