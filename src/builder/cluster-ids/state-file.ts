import { readFile } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { Packr, Unpackr } from 'msgpackr';
import { writeFileAtomic } from '../../common/atomic-file.js';
import { ClusterStateError } from '../../common/errors.js';
import { checkFrameCrc, frame, readFrameHeader, FRAME_HEADER_LENGTH, type FrameKind } from '../../common/file-framing.js';
import { compareEntries, hashBytes, asBytes, plainBytes, uint32FromBytes } from './key-bytes.js';
import { MAX_NUMBER, PackedClusterIdState, emptyClusterIdState, type ClusterIdState } from './state.js';

/**
 * The cluster id state file: the service's file framing
 * (src/common/file-framing.ts) with magic "UPIRCIDS", then a msgpack body
 * { nextNumber, keyBytes: bin, keyOffsets: bin (Uint32 LE), numbers: bin (Uint32 LE) }.
 * The arrays travel as raw bytes, so millions of keys cost three bin fields
 * rather than millions of msgpack values; the uint32 arrays are native
 * typed-array bytes, little-endian on every platform the service runs on.
 * Entries are in (hashBytes(key), key bytes) order, so the hash function is
 * part of the format: changing it needs a new version.
 *
 * Version history: 2 moved to the shared 32-byte framing. 1 had a 16-byte
 * header of its own (magic "UPCI", version, u32 body length, CRC-32) over
 * the same body; it is still read, so an upgraded server keeps its cluster
 * numbers, and the next build writes version 2.
 */
const FORMAT_VERSION = 2;

const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

/** Read the state; a missing file is the empty state of a first build. */
export async function readClusterIdState(path: string): Promise<ClusterIdState> {
  let file: Buffer;
  try {
    file = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyClusterIdState();
    throw error;
  }
  return decodeState(path, file);
}

/** Persist the state atomically (a crash leaves the old file or the new one). */
export async function writeClusterIdState(path: string, state: ClusterIdState): Promise<void> {
  if (!(state instanceof PackedClusterIdState)) {
    throw new TypeError('writeClusterIdState needs a state from emptyClusterIdState, assignClusterNumbers or readClusterIdState');
  }
  const body = packr.pack({
    nextNumber: state.nextNumber,
    keyBytes: state.keyBytes,
    keyOffsets: asBytes(state.keyOffsets),
    numbers: asBytes(state.numbers),
  });
  await writeFileAtomic(path, frame(stateFrame(path), body));
}

function stateFrame(path: string): FrameKind {
  return {
    magic: 'UPIRCIDS',
    version: FORMAT_VERSION,
    what: 'cluster id state',
    fail(_problem, message) {
      throw new ClusterStateError(`cluster id state ${path} is unusable: ${message}`);
    },
  };
}

const LEGACY_MAGIC = 0x49435055; // "UPCI" read as uint32 LE
const LEGACY_HEADER_BYTES = 16;

/** The body of a version 1 file, checked as version 1 readers did. */
function legacyBody(file: Uint8Array, fail: (why: string) => never): Uint8Array {
  if (file.length < LEGACY_HEADER_BYTES) fail(`truncated (${file.length} bytes)`);
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const version = view.getUint32(4, true);
  if (version !== 1) fail(`unknown format version ${version} (this build reads version ${FORMAT_VERSION}, and 1)`);
  const bodyLength = view.getUint32(8, true);
  if (file.length - LEGACY_HEADER_BYTES !== bodyLength) fail(`body is ${file.length - LEGACY_HEADER_BYTES} bytes, header says ${bodyLength}`);
  const body = file.subarray(LEGACY_HEADER_BYTES);
  if (crc32(body) !== view.getUint32(12, true)) fail('checksum mismatch');
  return body;
}

function decodeState(path: string, file: Uint8Array): ClusterIdState {
  const fail: (why: string, cause?: unknown) => never = (why, cause) => {
    throw new ClusterStateError(`cluster id state ${path} is unusable: ${why}`, cause === undefined ? undefined : { cause });
  };
  let body: Uint8Array;
  if (file.length >= 4 && new DataView(file.buffer, file.byteOffset, 4).getUint32(0, true) === LEGACY_MAGIC) {
    body = legacyBody(file, fail);
  } else {
    const kind = stateFrame(path);
    const header = readFrameHeader(kind, file);
    body = file.subarray(FRAME_HEADER_LENGTH);
    checkFrameCrc(kind, header, body);
  }

  let decoded: unknown;
  try {
    decoded = unpackr.unpack(body);
  } catch (error) {
    fail('body is not valid msgpack', error);
  }
  if (decoded === null || typeof decoded !== 'object') fail('body is not a map');
  const { nextNumber, keyBytes, keyOffsets: offsetBytes, numbers: numberBytes } = decoded as Record<string, unknown>;
  if (typeof nextNumber !== 'number' || !Number.isInteger(nextNumber) || nextNumber < 1 || nextNumber > MAX_NUMBER + 1) {
    fail('nextNumber is missing or not a positive integer');
  }
  const next = nextNumber as number;
  if (!(keyBytes instanceof Uint8Array)) fail('keyBytes is missing');
  if (!(offsetBytes instanceof Uint8Array) || offsetBytes.length % 4 !== 0) fail('keyOffsets is missing or not whole uint32s');
  if (!(numberBytes instanceof Uint8Array) || numberBytes.length % 4 !== 0) fail('numbers is missing or not whole uint32s');
  const keys = plainBytes(keyBytes as Uint8Array);
  const offsets = uint32FromBytes(offsetBytes as Uint8Array);
  const numbers = uint32FromBytes(numberBytes as Uint8Array);
  if (offsets.length !== numbers.length + 1) fail(`${numbers.length} numbers but ${offsets.length} key offsets`);
  if (offsets[0] !== 0) fail('keyOffsets does not start at 0');
  for (let i = 1; i < offsets.length; i++) {
    if (offsets[i]! < offsets[i - 1]!) fail(`keyOffsets decreases at ${i}`);
  }
  if (offsets[offsets.length - 1] !== keys.length) fail('keyOffsets does not end at the key bytes length');
  for (let i = 0; i < numbers.length; i++) {
    const n = numbers[i]!;
    if (n === 0 || n >= next) fail(`number ${n} at entry ${i} is outside 1..${next - 1}`);
  }
  // Hashes are not stored: recomputing them is one sequential pass, and
  // checking the (hash, key) order also catches duplicates and any damage the
  // checksum could not (a file written by a faulty build).
  const hashes = new Uint32Array(numbers.length);
  for (let e = 0; e < numbers.length; e++) {
    const hash = hashBytes(keys, offsets[e]!, offsets[e + 1]!);
    hashes[e] = hash;
    if (e > 0) {
      const before = hashes[e - 1]!;
      if (hash < before || (hash === before && compareEntries(keys, offsets, e - 1, e) >= 0)) {
        fail(`entries out of order or repeated at entry ${e}`);
      }
    }
  }
  return new PackedClusterIdState(next, keys, offsets, numbers, hashes);
}

