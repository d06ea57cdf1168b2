/**
 * The snapshot file: the service's file framing (src/common/file-framing.ts:
 * a 32-byte header with magic "UPIRSNAP", the format version, the body's
 * length and CRC-32), then one MessagePack value, the body. This module
 * holds the format's definitions; encode.ts writes it, decode.ts reads it,
 * validate.ts checks what either direction sees.
 *
 * Body, format version 4: a MessagePack map that any MessagePack decoder reads
 *
 *   {
 *     "meta":   { ...SnapshotMeta },
 *     "arrays": {                                  (every ARRAY_FIELDS name, in that order)
 *       "<field>": {
 *         "type": "<typed array class name>",      e.g. "Uint32Array"
 *         "pad":  bin8 of 0..7 zero bytes,         so that `data` starts on an 8-byte boundary of the file
 *         "data": bin32 of the raw elements, little endian
 *       }, ...
 *     }
 *   }
 *
 * Why not msgpackr's own typed-array extension: it packs into one growing
 * buffer (the whole snapshot copied, more than once while growing) and copies
 * every array again on unpack to get an aligned buffer. Here the writer hands
 * the arrays' own bytes to the file untouched, and `pad` keeps every `data`
 * aligned, so a reader holding the file in one buffer (a SharedArrayBuffer
 * when the arrays go to other threads) takes typed-array views of it: no copy,
 * no per-array allocation. A body re-encoded by another tool (unaligned
 * `data`) still decodes; those arrays are copied.
 *
 * Version history: 4 adds per-VPA `evidenceWeight` (Σ recency weight in
 * units of 2^-32), `sourceCategoryMask` and the risk counts of VPAs with
 * more than one risk category (`mixedRiskVpas`, `mixedRiskCounts`), and
 * `urlSlots`, a table from url bytes to url id: what merging new evidence
 * into a VPA's answer exactly needs. 3 keeps each key's bytes in its slot: `slots` became
 * `slotTags` (16 bits a slot) and `slotEntries` ([id + 1, packed key] per
 * slot), over any number of slots, and `keyTails` and `vpaSlots` replace
 * `keyBytes` and `keyOffsets` (see vpa-index.ts). 2 had a tag per slot
 * followed by a pair [id + 1, key start] per slot over a power-of-two
 * table; 1 had a pair [hash, id + 1] per slot.
 */
import { ErrorCode, SnapshotError } from '../../common/errors.js';
import type { FrameKind, FrameProblem } from '../../common/file-framing.js';

export const SNAPSHOT_FORMAT_VERSION = 4;
export const SNAPSHOT_MAGIC = 'UPIRSNAP';
export { FRAME_HEADER_LENGTH as SNAPSHOT_HEADER_LENGTH } from '../../common/file-framing.js';

const PROBLEM_CODES = {
  format: ErrorCode.SNAPSHOT_FORMAT,
  truncated: ErrorCode.SNAPSHOT_TRUNCATED,
  version: ErrorCode.SNAPSHOT_VERSION,
  checksum: ErrorCode.SNAPSHOT_CHECKSUM,
} as const satisfies Record<FrameProblem, ErrorCode>;

/** The snapshot as a kind of framed file; its problems are SnapshotErrors. */
export const SNAPSHOT_FRAME: FrameKind = {
  magic: SNAPSHOT_MAGIC,
  version: SNAPSHOT_FORMAT_VERSION,
  what: 'snapshot',
  fail(problem, message) {
    throw new SnapshotError(PROBLEM_CODES[problem], message);
  },
};

/** Every array's data starts on a multiple of this in the file, so a reader can view it in place. */
export const DATA_ALIGNMENT = 8;

// Arrays are stored as this machine's bytes; the format says little endian.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function assertLittleEndian(): void {
  if (!LITTLE_ENDIAN) throw new Error('snapshot files store little-endian arrays; this machine is big endian');
}

export function formatError(message: string): never {
  throw new SnapshotError(ErrorCode.SNAPSHOT_FORMAT, message);
}

export function isSharedArrayBuffer(buffer: ArrayBufferLike): buffer is SharedArrayBuffer {
  return typeof SharedArrayBuffer === 'function' && buffer instanceof SharedArrayBuffer;
}

export function alignUp(n: number): number {
  return Math.ceil(n / DATA_ALIGNMENT) * DATA_ALIGNMENT;
}
