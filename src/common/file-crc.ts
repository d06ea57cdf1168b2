import type { FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';

/**
 * `crc` extended over `bytes`. An empty view adds nothing: zlib.crc32
 * answers 0 for a view of no bytes over an empty buffer, whatever `crc`.
 */
export function extendCrc(bytes: NodeJS.ArrayBufferView, crc: number): number {
  return bytes.byteLength === 0 ? crc : crc32(bytes, crc);
}

/** Bytes read at a time. */
const CRC_CHUNK = 8 << 20;

/**
 * CRC-32 of the first `length` bytes of `handle`, read a chunk at a time;
 * throws when the file ends before. Given the CRC-32 `crc` of the bytes
 * before `from`, only those from `from` on are read.
 */
export async function crcOfFile(handle: FileHandle, length: number, from = 0, crc = 0): Promise<number> {
  const chunk = Buffer.alloc(Math.max(0, Math.min(length - from, CRC_CHUNK)));
  for (let at = from; at < length; ) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, length - at), at);
    if (bytesRead === 0) throw new Error(`the file ends at ${at}, before ${length}`);
    crc = extendCrc(chunk.subarray(0, bytesRead), crc);
    at += bytesRead;
  }
  return crc;
}
