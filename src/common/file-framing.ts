import { crc32 } from 'node:zlib';
import { extendCrc } from './file-crc.js';

/**
 * The framing every binary file of the service shares (snapshots, the
 * cluster id state): a fixed header that names the kind of file and its
 * format version and covers the body with a length and a CRC-32, then the
 * body. A reader refuses a file of another kind, of a version it does not
 * know, cut short, with bytes after the body, or whose body fails the CRC.
 *
 * Header, 32 bytes, little endian:
 *
 *   offset size
 *        0    8  magic, 8 ASCII bytes naming the kind of file
 *        8    4  format version, u32
 *       12    4  flags, u32; none are defined, must be 0
 *       16    8  body length in bytes, u64
 *       24    4  CRC-32 of the body (zlib.crc32), u32
 *       28    4  reserved, written as 0
 *       32       body
 */
export const FRAME_HEADER_LENGTH = 32;

/** What is wrong with a framed file; each kind of file maps these to its own error. */
export type FrameProblem = 'format' | 'truncated' | 'version' | 'checksum';

export interface FrameKind {
  /** 8 ASCII bytes. */
  readonly magic: string;
  /** The format version this build writes and reads. */
  readonly version: number;
  /** What the file is, for messages: "snapshot", "cluster id state". */
  readonly what: string;
  /** Throws the kind's own error for a problem. */
  fail(problem: FrameProblem, message: string): never;
}

export interface FrameHeader {
  readonly version: number;
  readonly bodyLength: number;
  readonly crc: number;
}

/** Header and body parts, ready to be written in order; `version` lets tools and tests write other versions. */
export function frame(kind: FrameKind, body: Uint8Array | readonly Uint8Array[], version = kind.version): Uint8Array[] {
  const parts = body instanceof Uint8Array ? [body] : [...body];
  let crc = 0;
  let bodyLength = 0;
  for (const part of parts) {
    crc = extendCrc(part, crc);
    bodyLength += part.byteLength;
  }
  return [frameHeader(kind, version, bodyLength, crc), ...parts];
}

function frameHeader(kind: FrameKind, version: number, bodyLength: number, crc: number): Buffer {
  const header = Buffer.alloc(FRAME_HEADER_LENGTH);
  header.write(kind.magic, 0, 8, 'latin1');
  header.writeUInt32LE(version, 8);
  header.writeUInt32LE(0, 12);
  header.writeBigUInt64LE(BigInt(bodyLength), 16);
  header.writeUInt32LE(crc >>> 0, 24);
  header.writeUInt32LE(0, 28);
  return header;
}

/** True when `bytes` start with the kind's magic (or a prefix of it, for a file shorter than the magic). */
export function hasMagic(kind: FrameKind, bytes: Uint8Array): boolean {
  const prefix = Math.min(bytes.length, kind.magic.length);
  for (let i = 0; i < prefix; i++) if (bytes[i] !== kind.magic.charCodeAt(i)) return false;
  return true;
}

/**
 * Read and check the header of a whole file held in `bytes`: magic, version,
 * flags, and that exactly the body it announces follows. Does not check the
 * CRC (see checkFrameCrc), so a caller that computed it while reading saves
 * a pass.
 */
export function readFrameHeader(kind: FrameKind, bytes: Uint8Array): FrameHeader {
  const { what } = kind;
  if (!hasMagic(kind, bytes)) kind.fail('format', `not a upi-risk ${what} (bad magic bytes)`);
  if (bytes.length < FRAME_HEADER_LENGTH) {
    kind.fail('truncated', `${what} is truncated: ${bytes.length} bytes, shorter than the ${FRAME_HEADER_LENGTH}-byte header`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, FRAME_HEADER_LENGTH);
  const version = view.getUint32(8, true);
  if (version !== kind.version) {
    kind.fail('version', `${what} format version ${version} is not supported: this build reads version ${kind.version}`);
  }
  const flags = view.getUint32(12, true);
  const bodyLength = Number(view.getBigUint64(16, true));
  const crc = view.getUint32(24, true);
  const available = bytes.length - FRAME_HEADER_LENGTH;
  if (available < bodyLength) {
    kind.fail('truncated', `${what} is truncated: the header announces a ${bodyLength}-byte body, ${available} bytes follow it`);
  }
  if (available > bodyLength) {
    kind.fail('format', `${what} has ${available - bodyLength} unexpected bytes after its ${bodyLength}-byte body`);
  }
  if (flags !== 0) kind.fail('format', `${what} header has unknown flags 0x${flags.toString(16)}`);
  return { version, bodyLength, crc };
}

/** Compare the body's CRC-32 (computed here unless given) with the one the header records. */
export function checkFrameCrc(kind: FrameKind, header: FrameHeader, body: Uint8Array, bodyCrc?: number): void {
  const actual = (bodyCrc ?? crc32(body)) >>> 0;
  if (actual !== header.crc) {
    kind.fail('checksum', `${kind.what} checksum mismatch: the header records CRC-32 ${hex32(header.crc)}, the body has ${hex32(actual)}`);
  }
}

function hex32(n: number): string {
  return `0x${(n >>> 0).toString(16).padStart(8, '0')}`;
}
