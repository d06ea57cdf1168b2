import type { FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';

/** Bytes read at a time. */
const CRC_CHUNK = 8 << 20;

/** CRC-32 of the first `length` bytes of `handle`, read a chunk at a time; throws when the file ends before. */
export async function crcOfFile(handle: FileHandle, length: number): Promise<number> {
  const chunk = Buffer.alloc(Math.min(length, CRC_CHUNK));
  let crc = 0;
  for (let at = 0; at < length; ) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, length - at), at);
    if (bytesRead === 0) throw new Error(`the file ends at ${at}, before ${length}`);
    crc = crc32(chunk.subarray(0, bytesRead), crc);
    at += bytesRead;
  }
  return crc;
}
