import { Unpackr } from 'msgpackr';
import { checkFrameCrc, readFrameHeader, type FrameHeader } from '../../common/file-framing.js';
import { ErrorCode, messageOf, SnapshotError } from '../../common/errors.js';
import { ARRAY_FIELDS, COLUMNS, type AnyTypedArray, type ArrayField, type SnapshotData } from '../snapshot-data.js';
import {
  SNAPSHOT_FRAME,
  SNAPSHOT_HEADER_LENGTH,
  alignUp,
  assertLittleEndian,
  formatError,
  isSharedArrayBuffer,
} from './format.js';
import { MsgpackReader } from './msgpack-reader.js';
import { readMeta, validateLengths, validateStructure } from './validate.js';

export interface DecodeOptions {
  /**
   * Put every array in a SharedArrayBuffer, so the result can be posted to
   * other threads without copying. Free when `bytes` is itself backed by a
   * SharedArrayBuffer (views of it); otherwise the arrays are copied into one.
   */
  readonly shared?: boolean;
  /**
   * CRC-32 of everything after the header, when the caller has already
   * computed it (while reading the file, say); saves a pass over the bytes.
   * It is still compared with the CRC the header records.
   */
  readonly bodyCrc?: number;
}

const metaUnpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

/**
 * Read and check the fixed header: magic, version, flags, and that the body
 * it announces is all there. Does not check the CRC.
 */
export function readSnapshotHeader(bytes: Uint8Array): FrameHeader {
  return readFrameHeader(SNAPSHOT_FRAME, bytes);
}

/**
 * Verify and decode a whole snapshot file held in `bytes`. Throws
 * SnapshotError (truncated, bad magic, unsupported version, checksum mismatch,
 * malformed or inconsistent body). The arrays of the result are views of
 * `bytes` wherever alignment allows, so `bytes` must not be reused afterwards.
 */
export function decodeSnapshot(bytes: Uint8Array, options: DecodeOptions = {}): SnapshotData {
  assertLittleEndian();
  const header = readSnapshotHeader(bytes);
  checkFrameCrc(SNAPSHOT_FRAME, header, bytes.subarray(SNAPSHOT_HEADER_LENGTH), options.bodyCrc);
  return decodeBody(bytes, SNAPSHOT_HEADER_LENGTH, options.shared === true);
}

interface ArraySpan {
  type: string | undefined;
  start: number;
  byteLength: number;
}

function decodeBody(bytes: Uint8Array, bodyStart: number, shared: boolean): SnapshotData {
  const r: MsgpackReader = new MsgpackReader(bytes, bodyStart);
  let metaRange: [number, number] | undefined;
  let spans: Map<string, ArraySpan> | undefined;
  const entries = r.mapHeader('the body');
  for (let i = 0; i < entries; i++) {
    const key = r.str('a body key');
    if (key === 'meta') {
      if (metaRange !== undefined) r.fail('body has two "meta" entries');
      const start = r.pos;
      r.skip();
      metaRange = [start, r.pos];
    } else if (key === 'arrays') {
      if (spans !== undefined) r.fail('body has two "arrays" entries');
      spans = readArraySpans(r);
    } else {
      r.skip();
    }
  }
  if (r.pos !== bytes.length) r.fail(`${bytes.length - r.pos} bytes follow the body's msgpack value`);
  if (metaRange === undefined) r.fail('body has no "meta" entry');
  if (spans === undefined) r.fail('body has no "arrays" entry');
  const found: Map<string, ArraySpan> = spans;

  let rawMeta: unknown;
  try {
    // A private copy: msgpackr keeps a reference to its source, and the meta bytes are tiny.
    rawMeta = metaUnpackr.unpack(Buffer.from(bytes.subarray(metaRange[0], metaRange[1])));
  } catch (error) {
    throw new SnapshotError(ErrorCode.SNAPSHOT_FORMAT, `snapshot meta is not valid msgpack: ${messageOf(error)}`, { cause: error });
  }
  const meta = readMeta(rawMeta);

  // Classes and lengths first, so a bad file is refused before anything is copied.
  for (const field of ARRAY_FIELDS) {
    const span = found.get(field);
    const expected = COLUMNS[field].type;
    if (span === undefined) formatError(`arrays.${field} is missing`);
    if (span.type === undefined) formatError(`arrays.${field} has no "type"`);
    if (span.type !== expected.name) formatError(`arrays.${field} has type ${span.type}, expected ${expected.name}`);
    if (span.start < 0) formatError(`arrays.${field} has no "data"`);
    if (span.byteLength % expected.BYTES_PER_ELEMENT !== 0) {
      formatError(`arrays.${field} has ${span.byteLength} bytes, not a whole number of ${expected.name} elements`);
    }
  }
  const elements = (field: ArrayField): number => found.get(field)!.byteLength / COLUMNS[field].type.BYTES_PER_ELEMENT;
  validateLengths(meta, elements, 'snapshot is inconsistent');

  const arrays = materialize(bytes, found, shared);
  const data = { meta, ...arrays } as SnapshotData;
  validateStructure(data, 'snapshot is inconsistent');
  return data;
}

function readArraySpans(r: MsgpackReader): Map<string, ArraySpan> {
  const spans = new Map<string, ArraySpan>();
  const count = r.mapHeader('"arrays"');
  for (let i = 0; i < count; i++) {
    const field = r.str('an array name');
    if (!Object.hasOwn(COLUMNS, field)) {
      r.skip(); // not an array this version reads
      continue;
    }
    if (spans.has(field)) r.fail(`arrays.${field} appears twice`);
    const span: ArraySpan = { type: undefined, start: -1, byteLength: 0 };
    const keys = r.mapHeader(`arrays.${field}`);
    for (let k = 0; k < keys; k++) {
      const key = r.str(`a key of arrays.${field}`);
      if (key === 'type') {
        span.type = r.str(`arrays.${field}.type`);
      } else if (key === 'data') {
        const [start, length] = r.bin(`arrays.${field}.data`);
        span.start = start;
        span.byteLength = length;
      } else {
        r.skip(); // "pad", or anything a later writer adds
      }
    }
    spans.set(field, span);
  }
  return spans;
}

/** Typed arrays over the data spans: views where aligned, copies otherwise (or into shared memory when asked). */
function materialize(bytes: Uint8Array, spans: Map<string, ArraySpan>, shared: boolean): Record<ArrayField, AnyTypedArray> {
  const source = bytes.buffer;
  const base = bytes.byteOffset;
  const sourceShared = isSharedArrayBuffer(source);
  const out = {} as Record<ArrayField, AnyTypedArray>;

  // Views are possible when the source memory is already the kind wanted.
  const viewable = !shared || sourceShared;
  let copyTotal = 0;
  for (const field of ARRAY_FIELDS) {
    const span = spans.get(field)!;
    const size = COLUMNS[field].type.BYTES_PER_ELEMENT;
    if (!viewable || (base + span.start) % size !== 0) copyTotal += alignUp(span.byteLength);
  }
  // One allocation for every array that must be copied.
  const target = copyTotal === 0 ? null : shared ? new SharedArrayBuffer(copyTotal) : new ArrayBuffer(copyTotal);
  let at = 0;
  for (const field of ARRAY_FIELDS) {
    const span = spans.get(field)!;
    const Type = COLUMNS[field].type;
    const size = Type.BYTES_PER_ELEMENT;
    const length = span.byteLength / size;
    if (viewable && (base + span.start) % size === 0) {
      // The union of constructors only accepts ArrayBuffer in its signature; views of shared memory are fine.
      out[field] = new Type(source as ArrayBuffer, base + span.start, length);
    } else {
      new Uint8Array(target!, at, span.byteLength).set(bytes.subarray(span.start, span.start + span.byteLength));
      out[field] = new Type(target! as ArrayBuffer, at, length);
      at += alignUp(span.byteLength);
    }
  }
  return out;
}
