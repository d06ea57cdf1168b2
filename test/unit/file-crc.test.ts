import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { crcOfFile, extendCrc } from '../../src/common/file-crc.js';

// A CRC-32 extended piece by piece is the CRC of the pieces joined, empty
// pieces included (zlib.crc32 alone answers 0 for a view of an empty
// buffer), and a file's CRC taken from an offset on, given the CRC before
// it, is the whole file's.

test('extendCrc over pieces, empty ones of empty buffers included, is the CRC of them joined', () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 8 }), (pieces) => {
      let crc = 0;
      for (const piece of pieces) {
        crc = extendCrc(piece, crc);
        crc = extendCrc(new Uint8Array(new SharedArrayBuffer(0)), crc);
        crc = extendCrc(Buffer.alloc(0).subarray(0, 0), crc);
      }
      assert.equal(crc, crc32(Buffer.concat(pieces)));
    }),
  );
});

test('crcOfFile from an offset, given the CRC before it, is the CRC of the whole length', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'upi-risk-crc-'));
  try {
    const bytes = Buffer.from(Array.from({ length: 10_000 }, (_, i) => (i * 31) % 251));
    const path = join(dir, 'file');
    const handle = await open(path, 'w+');
    try {
      await handle.write(bytes, 0, bytes.length, 0);
      for (const [from, length] of [[0, 10_000], [0, 0], [1234, 10_000], [9_999, 10_000], [5_000, 5_000], [17, 4_096]] as const) {
        const before = crc32(bytes.subarray(0, from));
        assert.equal(await crcOfFile(handle, length, from, before), crc32(bytes.subarray(0, length)), `${from}..${length}`);
      }
      await assert.rejects(crcOfFile(handle, 10_001), /ends at 10000/);
    } finally {
      await handle.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
