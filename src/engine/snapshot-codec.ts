/**
 * The snapshot file: a fixed binary header, then one MessagePack value (the
 * body) covered by a CRC-32.
 *
 * Header, 32 bytes, little endian:
 *
 *   offset size
 *        0    8  magic "UPIRSNAP"
 *        8    4  format version, u32 (SNAPSHOT_FORMAT_VERSION)
 *       12    4  flags, u32; none are defined, must be 0
 *       16    8  body length in bytes, u64
 *       24    4  CRC-32 of the body (zlib.crc32), u32
 *       28    4  reserved, written as 0
 *       32       body
 *
 * Body, format version 3: a MessagePack map that any MessagePack decoder reads
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
 * Version history: 3 keeps each key's bytes in its slot: `slots` became
 * `slotTags` (16 bits a slot) and `slotEntries` ([id + 1, packed key] per
 * slot), over any number of slots, and `keyTails` and `vpaSlots` replace
 * `keyBytes` and `keyOffsets` (see vpa-index.ts). 2 had a tag per slot
 * followed by a pair [id + 1, key start] per slot over a power-of-two
 * table; 1 had a pair [hash, id + 1] per slot.
 */
import { crc32 } from 'node:zlib';
import { Packr, Unpackr } from 'msgpackr';
import { ErrorCode, SnapshotError, type SnapshotErrorCode } from '../common/errors.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../vpa/categories.js';
import {
  ARRAY_FIELDS,
  CONFIDENCE_SCALE,
  NO_CLUSTER,
  type ArrayField,
  type SnapshotData,
  type SnapshotMeta,
} from './snapshot-data.js';
import { checkIndexArrays, ENTRY_WORDS } from './vpa-index.js';

export const SNAPSHOT_FORMAT_VERSION = 3;
export const SNAPSHOT_MAGIC = 'UPIRSNAP';
export const SNAPSHOT_HEADER_LENGTH = 32;

/** The typed-array class each field must have, in the file and in memory. */
export const ARRAY_FIELD_TYPES = {
  slotTags: Uint16Array,
  slotEntries: Uint32Array,
  keyTails: Uint32Array,
  vpaSlots: Uint32Array,
  firstSeen: Float64Array,
  confidence: Uint16Array,
  riskCategory: Uint8Array,
  evidenceCount: Uint32Array,
  vpaCluster: Uint32Array,
  sourceOffsets: Uint32Array,
  sourceUrl: Uint32Array,
  sourceCapturedAt: Float64Array,
  sourceFlags: Uint8Array,
  urlBytes: Uint8Array,
  urlOffsets: Uint32Array,
  urlCategory: Uint8Array,
  urlMembersBlob: Uint8Array,
  urlMembersOffsets: Uint32Array,
  clusterNumber: Uint32Array,
  clusterCreatedAt: Float64Array,
  clusterLastUpdated: Float64Array,
  clusterRiskCategory: Uint8Array,
  clusterConfidence: Uint16Array,
  clusterEvidenceCount: Uint32Array,
  clusterMembersBlob: Uint8Array,
  clusterMembersOffsets: Uint32Array,
} as const satisfies Record<ArrayField, TypedArrayClass>;

type TypedArrayClass =
  | Uint8ArrayConstructor
  | Uint16ArrayConstructor
  | Uint32ArrayConstructor
  | Float64ArrayConstructor;
type AnyTypedArray = Uint8Array | Uint16Array | Uint32Array | Float64Array;

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

const MAGIC_BYTES = Buffer.from(SNAPSHOT_MAGIC, 'latin1');
const DATA_ALIGNMENT = 8;
const MAX_BIN32 = 0xffffffff;

// Arrays are stored as this machine's bytes; the format says little endian.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

const metaPackr = new Packr({ useRecords: false });
const metaUnpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

// ---------------------------------------------------------------------------
// Encoding

/**
 * Encode `data` as snapshot file bytes, in parts to be written in order. The
 * big parts are views of `data`'s own arrays (nothing is copied), so write
 * them before changing `data`. Checks `data` the same way decoding does, so
 * a snapshot that could not be loaded is never written.
 */
export function encodeSnapshot(data: SnapshotData): Uint8Array[] {
  assertLittleEndian();
  validateArrayClasses(data);
  validateMeta(data.meta, 'cannot encode snapshot');
  validateStructure(data, 'cannot encode snapshot');

  const body: Uint8Array[] = [];
  const w = new PartWriter(body, SNAPSHOT_HEADER_LENGTH);
  w.mapHeader(2);
  w.str('meta');
  w.raw(Buffer.from(metaPackr.pack(plainMeta(data.meta)))); // pack() hands out a reused buffer: copy
  w.str('arrays');
  w.mapHeader(ARRAY_FIELDS.length);
  for (const field of ARRAY_FIELDS) {
    const array = data[field];
    if (array.byteLength > MAX_BIN32) {
      formatError(`cannot encode snapshot: ${field} has ${array.byteLength} bytes, more than one msgpack bin holds`);
    }
    w.str(field);
    w.mapHeader(3);
    w.str('type');
    w.str(ARRAY_FIELD_TYPES[field].name);
    w.str('pad');
    // After the pad bytes come fixstr "data" (5 bytes) and the bin32 header (5 bytes).
    const padding = (DATA_ALIGNMENT - ((w.position + 2 + 10) % DATA_ALIGNMENT)) % DATA_ALIGNMENT;
    w.binHeader8(padding);
    w.zeros(padding);
    w.str('data');
    w.binHeader32(array.byteLength);
    w.external(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
  }
  w.flush();

  let crc = 0;
  let bodyLength = 0;
  for (const part of body) {
    crc = crc32(part, crc);
    bodyLength += part.byteLength;
  }
  return [snapshotHeader(SNAPSHOT_FORMAT_VERSION, bodyLength, crc), ...body];
}

/**
 * Frame an already encoded body with a header carrying its length and CRC.
 * For tools and tests that build or re-encode bodies; `version` lets them
 * write other versions.
 */
export function frameSnapshotBody(body: Uint8Array | readonly Uint8Array[], version = SNAPSHOT_FORMAT_VERSION): Uint8Array[] {
  const parts = body instanceof Uint8Array ? [body] : [...body];
  let crc = 0;
  let bodyLength = 0;
  for (const part of parts) {
    crc = crc32(part, crc);
    bodyLength += part.byteLength;
  }
  return [snapshotHeader(version, bodyLength, crc), ...parts];
}

function snapshotHeader(version: number, bodyLength: number, crc: number): Buffer {
  const header = Buffer.alloc(SNAPSHOT_HEADER_LENGTH);
  MAGIC_BYTES.copy(header, 0);
  header.writeUInt32LE(version, 8);
  header.writeUInt32LE(0, 12);
  header.writeBigUInt64LE(BigInt(bodyLength), 16);
  header.writeUInt32LE(crc >>> 0, 24);
  header.writeUInt32LE(0, 28);
  return header;
}

/** Only the fields the format defines, so stray properties never reach the file. */
function plainMeta(meta: SnapshotMeta): SnapshotMeta {
  return {
    id: meta.id,
    createdAt: meta.createdAt,
    dataAsOf: meta.dataAsOf,
    scoredAt: meta.scoredAt,
    evidenceFiles: [...meta.evidenceFiles],
    urlMemberCap: meta.urlMemberCap,
    vpaCount: meta.vpaCount,
    urlCount: meta.urlCount,
    clusterCount: meta.clusterCount,
    sourceCount: meta.sourceCount,
    evidenceCount: meta.evidenceCount,
    skippedLines: meta.skippedLines,
  };
}

/** Collects small msgpack framing into shared chunks and big array bytes as their own parts. */
class PartWriter {
  private chunk = Buffer.allocUnsafe(4096);
  private used = 0;
  /** Offset in the file of the next byte written. */
  position: number;

  constructor(
    private readonly parts: Uint8Array[],
    start: number,
  ) {
    this.position = start;
  }

  private room(n: number): void {
    if (this.used + n <= this.chunk.length) return;
    this.flush();
    if (n > this.chunk.length) this.chunk = Buffer.allocUnsafe(Math.max(4096, n));
  }

  /** Emit what is buffered as a part; the rest of the chunk stays in use for what follows. */
  flush(): void {
    if (this.used > 0) this.parts.push(this.chunk.subarray(0, this.used));
    this.chunk = this.chunk.subarray(this.used);
    this.used = 0;
  }

  private byte(b: number): void {
    this.room(1);
    this.chunk[this.used++] = b;
    this.position++;
  }

  mapHeader(count: number): void {
    if (count < 16) {
      this.byte(0x80 | count);
    } else {
      this.room(3);
      this.chunk[this.used] = 0xde;
      this.chunk.writeUInt16BE(count, this.used + 1);
      this.used += 3;
      this.position += 3;
    }
  }

  str(text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length < 32) {
      this.byte(0xa0 | bytes.length);
    } else {
      this.byte(0xd9);
      this.byte(bytes.length);
    }
    this.raw(bytes);
  }

  binHeader8(length: number): void {
    this.byte(0xc4);
    this.byte(length);
  }

  binHeader32(length: number): void {
    this.room(5);
    this.chunk[this.used] = 0xc6;
    this.chunk.writeUInt32BE(length, this.used + 1);
    this.used += 5;
    this.position += 5;
  }

  zeros(n: number): void {
    this.room(n);
    this.chunk.fill(0, this.used, this.used + n);
    this.used += n;
    this.position += n;
  }

  raw(bytes: Uint8Array): void {
    this.room(bytes.length);
    this.chunk.set(bytes, this.used);
    this.used += bytes.length;
    this.position += bytes.length;
  }

  /** A part written as it is, not copied. */
  external(bytes: Uint8Array): void {
    this.flush();
    if (bytes.byteLength > 0) this.parts.push(bytes);
    this.position += bytes.byteLength;
  }
}

// ---------------------------------------------------------------------------
// Decoding

export interface SnapshotHeader {
  readonly version: number;
  readonly flags: number;
  readonly bodyLength: number;
  readonly crc: number;
}

/**
 * Read and check the fixed header: magic, version, flags, and that the body
 * it announces is all there. Does not check the CRC.
 */
export function readSnapshotHeader(bytes: Uint8Array): SnapshotHeader {
  const prefix = Math.min(bytes.length, MAGIC_BYTES.length);
  for (let i = 0; i < prefix; i++) {
    if (bytes[i] !== MAGIC_BYTES[i]) fail(ErrorCode.SNAPSHOT_FORMAT, 'not a upi-risk snapshot (bad magic bytes)');
  }
  if (bytes.length < SNAPSHOT_HEADER_LENGTH) {
    fail(
      ErrorCode.SNAPSHOT_TRUNCATED,
      `snapshot is truncated: ${bytes.length} bytes, shorter than the ${SNAPSHOT_HEADER_LENGTH}-byte header`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, SNAPSHOT_HEADER_LENGTH);
  const version = view.getUint32(8, true);
  if (version !== SNAPSHOT_FORMAT_VERSION) {
    fail(
      ErrorCode.SNAPSHOT_VERSION,
      `snapshot format version ${version} is not supported: this build reads version ${SNAPSHOT_FORMAT_VERSION}`,
    );
  }
  const flags = view.getUint32(12, true);
  const bodyLength = Number(view.getBigUint64(16, true));
  const crc = view.getUint32(24, true);
  const available = bytes.length - SNAPSHOT_HEADER_LENGTH;
  if (available < bodyLength) {
    fail(
      ErrorCode.SNAPSHOT_TRUNCATED,
      `snapshot is truncated: the header announces a ${bodyLength}-byte body, ${available} bytes follow it`,
    );
  }
  if (available > bodyLength) {
    fail(ErrorCode.SNAPSHOT_FORMAT, `snapshot has ${available - bodyLength} unexpected bytes after its ${bodyLength}-byte body`);
  }
  if (flags !== 0) fail(ErrorCode.SNAPSHOT_FORMAT, `snapshot header has unknown flags 0x${flags.toString(16)}`);
  return { version, flags, bodyLength, crc };
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
  const body = bytes.subarray(SNAPSHOT_HEADER_LENGTH);
  const actual = (options.bodyCrc ?? crc32(body)) >>> 0;
  if (actual !== header.crc) {
    fail(
      ErrorCode.SNAPSHOT_CHECKSUM,
      `snapshot checksum mismatch: the header records CRC-32 ${hex32(header.crc)}, the body has ${hex32(actual)}`,
    );
  }
  return decodeBody(bytes, SNAPSHOT_HEADER_LENGTH, options.shared === true);
}

interface ArraySpan {
  type: string | undefined;
  start: number;
  byteLength: number;
}

function decodeBody(bytes: Uint8Array, bodyStart: number, shared: boolean): SnapshotData {
  const r: Reader = new Reader(bytes, bodyStart);
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
    const expected = ARRAY_FIELD_TYPES[field];
    if (span === undefined) formatError(`arrays.${field} is missing`);
    if (span.type === undefined) formatError(`arrays.${field} has no "type"`);
    if (span.type !== expected.name) formatError(`arrays.${field} has type ${span.type}, expected ${expected.name}`);
    if (span.start < 0) formatError(`arrays.${field} has no "data"`);
    if (span.byteLength % expected.BYTES_PER_ELEMENT !== 0) {
      formatError(`arrays.${field} has ${span.byteLength} bytes, not a whole number of ${expected.name} elements`);
    }
  }
  const elements = (field: ArrayField): number => found.get(field)!.byteLength / ARRAY_FIELD_TYPES[field].BYTES_PER_ELEMENT;
  validateLengths(meta, elements, 'snapshot is inconsistent');

  const arrays = materialize(bytes, found, shared);
  const data = { meta, ...arrays } as SnapshotData;
  validateStructure(data, 'snapshot is inconsistent');
  return data;
}

function readArraySpans(r: Reader): Map<string, ArraySpan> {
  const spans = new Map<string, ArraySpan>();
  const count = r.mapHeader('"arrays"');
  for (let i = 0; i < count; i++) {
    const field = r.str('an array name');
    if (!Object.hasOwn(ARRAY_FIELD_TYPES, field)) {
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

/**
 * `data` itself when every array of it is in shared memory already (as a
 * build assembles them), or else copyToSharedMemory(data): a snapshot of
 * 1.5 GiB at 10M VPAs is not copied to be served.
 */
export function toSharedMemory(data: SnapshotData): SnapshotData {
  return ARRAY_FIELDS.every((field) => isSharedArrayBuffer(data[field].buffer)) ? data : copyToSharedMemory(data);
}

/**
 * A copy of `data` whose arrays are views of one SharedArrayBuffer, so
 * posting it to other threads shares that memory instead of copying it
 * (the form loadSnapshotOffThread delivers). For a snapshot assembled in
 * memory, to serve it without a round trip through its file.
 */
export function copyToSharedMemory(data: SnapshotData): SnapshotData {
  let total = 0;
  for (const field of ARRAY_FIELDS) total += alignUp(data[field].byteLength);
  const target = new SharedArrayBuffer(total);
  const arrays = {} as Record<ArrayField, AnyTypedArray>;
  let at = 0;
  for (const field of ARRAY_FIELDS) {
    const source = data[field];
    new Uint8Array(target, at, source.byteLength).set(new Uint8Array(source.buffer, source.byteOffset, source.byteLength));
    // As in materialize: the constructors' signatures name ArrayBuffer only; shared memory is fine.
    arrays[field] = new ARRAY_FIELD_TYPES[field](target as unknown as ArrayBuffer, at, source.length);
    at += alignUp(source.byteLength);
  }
  return { ...data, ...arrays } as SnapshotData;
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
    const size = ARRAY_FIELD_TYPES[field].BYTES_PER_ELEMENT;
    if (!viewable || (base + span.start) % size !== 0) copyTotal += alignUp(span.byteLength);
  }
  // One allocation for every array that must be copied.
  const target = copyTotal === 0 ? null : shared ? new SharedArrayBuffer(copyTotal) : new ArrayBuffer(copyTotal);
  let at = 0;
  for (const field of ARRAY_FIELDS) {
    const span = spans.get(field)!;
    const Type = ARRAY_FIELD_TYPES[field];
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

/** Just enough MessagePack to walk the body's framing without touching the array bytes. */
class Reader {
  pos: number;

  constructor(
    private readonly bytes: Uint8Array,
    start: number,
  ) {
    this.pos = start;
  }

  fail(what: string): never {
    throw new SnapshotError(ErrorCode.SNAPSHOT_FORMAT, `snapshot body is malformed: ${what}`);
  }

  private need(n: number): void {
    if (this.pos + n > this.bytes.length) this.fail(`msgpack data ends inside a value at byte ${this.pos}`);
  }

  private u8(): number {
    this.need(1);
    return this.bytes[this.pos++]!;
  }

  private uint(n: 1 | 2 | 4): number {
    this.need(n);
    const b = this.bytes;
    const p = this.pos;
    this.pos += n;
    if (n === 1) return b[p]!;
    if (n === 2) return (b[p]! << 8) | b[p + 1]!;
    return ((b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!) >>> 0;
  }

  mapHeader(what: string): number {
    const t = this.u8();
    if (t >= 0x80 && t <= 0x8f) return t & 0x0f;
    if (t === 0xde) return this.uint(2);
    if (t === 0xdf) return this.uint(4);
    return this.fail(`${what} is not a map`);
  }

  str(what: string): string {
    const t = this.u8();
    let length: number;
    if (t >= 0xa0 && t <= 0xbf) length = t & 0x1f;
    else if (t === 0xd9) length = this.uint(1);
    else if (t === 0xda) length = this.uint(2);
    else if (t === 0xdb) length = this.uint(4);
    else return this.fail(`${what} is not a string`);
    this.need(length);
    const b = this.bytes;
    const start = this.pos;
    this.pos += length;
    // Works for bytes in a SharedArrayBuffer too, unlike TextDecoder.
    return Buffer.from(b.buffer, b.byteOffset + start, length).toString('utf8');
  }

  /** A bin value as [start, length] within the bytes. */
  bin(what: string): [number, number] {
    const t = this.u8();
    let length: number;
    if (t === 0xc4) length = this.uint(1);
    else if (t === 0xc5) length = this.uint(2);
    else if (t === 0xc6) length = this.uint(4);
    else return this.fail(`${what} is not binary data`);
    this.need(length);
    const start = this.pos;
    this.pos += length;
    return [start, length];
  }

  /** Step over one value of any type, nested ones included, without recursion. */
  skip(): void {
    let pending = 1;
    while (pending > 0) {
      pending--;
      const t = this.u8();
      if (t <= 0x7f || t >= 0xe0 || (t >= 0xc0 && t <= 0xc3 && t !== 0xc1)) continue; // fixint, nil, bool
      if (t >= 0x80 && t <= 0x8f) pending += 2 * (t & 0x0f);
      else if (t >= 0x90 && t <= 0x9f) pending += t & 0x0f;
      else if (t >= 0xa0 && t <= 0xbf) this.advance(t & 0x1f);
      else {
        switch (t) {
          case 0xc4: case 0xd9: this.advance(this.uint(1)); break; // bin8, str8
          case 0xc5: case 0xda: this.advance(this.uint(2)); break; // bin16, str16
          case 0xc6: case 0xdb: this.advance(this.uint(4)); break; // bin32, str32
          case 0xc7: this.advance(this.uint(1) + 1); break; // ext8
          case 0xc8: this.advance(this.uint(2) + 1); break; // ext16
          case 0xc9: this.advance(this.uint(4) + 1); break; // ext32
          case 0xca: this.advance(4); break; // float32
          case 0xcb: this.advance(8); break; // float64
          case 0xcc: case 0xd0: this.advance(1); break; // (u)int8
          case 0xcd: case 0xd1: this.advance(2); break;
          case 0xce: case 0xd2: this.advance(4); break;
          case 0xcf: case 0xd3: this.advance(8); break;
          case 0xd4: this.advance(2); break; // fixext 1..16
          case 0xd5: this.advance(3); break;
          case 0xd6: this.advance(5); break;
          case 0xd7: this.advance(9); break;
          case 0xd8: this.advance(17); break;
          case 0xdc: pending += this.uint(2); break; // array16
          case 0xdd: pending += this.uint(4); break; // array32
          case 0xde: pending += 2 * this.uint(2); break; // map16
          case 0xdf: pending += 2 * this.uint(4); break; // map32
          default: this.fail(`byte 0x${t.toString(16)} at ${this.pos - 1} starts no msgpack value`);
        }
      }
    }
  }

  private advance(n: number): void {
    this.need(n);
    this.pos += n;
  }
}

// ---------------------------------------------------------------------------
// Validation, shared by both directions

function readMeta(value: unknown): SnapshotMeta {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) formatError('snapshot meta is not a map');
  const raw = value as Record<string, unknown>;
  const evidenceFiles = raw.evidenceFiles;
  const meta = {
    id: raw.id,
    createdAt: raw.createdAt,
    dataAsOf: raw.dataAsOf,
    scoredAt: raw.scoredAt,
    evidenceFiles: Array.isArray(evidenceFiles) ? [...(evidenceFiles as unknown[])] : evidenceFiles,
    urlMemberCap: raw.urlMemberCap,
    vpaCount: raw.vpaCount,
    urlCount: raw.urlCount,
    clusterCount: raw.clusterCount,
    sourceCount: raw.sourceCount,
    evidenceCount: raw.evidenceCount,
    skippedLines: raw.skippedLines,
  };
  validateMeta(meta, 'snapshot is malformed');
  return meta as SnapshotMeta;
}

const TIME_FIELDS = ['createdAt', 'dataAsOf', 'scoredAt'] as const;
const COUNT_FIELDS = ['vpaCount', 'urlCount', 'clusterCount', 'sourceCount', 'evidenceCount', 'skippedLines'] as const;

const SNAPSHOT_ID_TEXT = /^[\x21-\x7e]{1,64}$/;

function validateMeta(meta: { readonly [K in keyof SnapshotMeta]: unknown }, context: string): void {
  const bad = (what: string): never => formatError(`${context}: meta.${what}`);
  // The id is sent as the X-Data-Version header: nothing but visible ASCII may reach a header line.
  if (typeof meta.id !== 'string' || !SNAPSHOT_ID_TEXT.test(meta.id)) bad('id is not 1 to 64 visible ASCII characters');
  for (const name of TIME_FIELDS) {
    const v = meta[name];
    if (typeof v !== 'number' || !Number.isFinite(v)) bad(`${name} is not a finite number`);
  }
  const files = meta.evidenceFiles;
  if (!Array.isArray(files) || !files.every((f) => typeof f === 'string')) bad('evidenceFiles is not a list of strings');
  const cap = meta.urlMemberCap;
  if (typeof cap !== 'number' || Number.isNaN(cap) || cap < 0) bad('urlMemberCap is not a non-negative number');
  for (const name of COUNT_FIELDS) {
    const v = meta[name];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) bad(`${name} is not a non-negative integer`);
  }
  // Offsets arrays hold count + 1 uint32 entries.
  for (const name of ['vpaCount', 'urlCount', 'clusterCount', 'sourceCount'] as const) {
    if ((meta[name] as number) >= 0xffffffff) bad(`${name} is too large for 32-bit ids`);
  }
}

function validateArrayClasses(data: SnapshotData): void {
  for (const field of ARRAY_FIELDS) {
    const Type = ARRAY_FIELD_TYPES[field];
    const array: unknown = data[field];
    if (!(array instanceof Type)) {
      const actual = typeof array === 'object' && array !== null ? array.constructor.name : typeof array;
      formatError(`cannot encode snapshot: ${field} is ${actual}, expected ${Type.name}`);
    }
  }
}

/** Array lengths against the meta counts: constant time. */
function validateLengths(meta: SnapshotMeta, lengthOf: (field: ArrayField) => number, context: string): void {
  const { vpaCount, sourceCount, urlCount, clusterCount } = meta;
  const expect = (field: ArrayField, length: number, why: string): void => {
    const actual = lengthOf(field);
    if (actual !== length) formatError(`${context}: ${field} has ${actual} entries, expected ${length} (${why})`);
  };
  for (const field of ['vpaSlots', 'firstSeen', 'confidence', 'riskCategory', 'evidenceCount', 'vpaCluster'] as const) {
    expect(field, vpaCount, 'meta.vpaCount');
  }
  expect('sourceOffsets', vpaCount + 1, 'meta.vpaCount + 1');
  for (const field of ['sourceUrl', 'sourceCapturedAt', 'sourceFlags'] as const) expect(field, sourceCount, 'meta.sourceCount');
  expect('urlCategory', urlCount, 'meta.urlCount');
  expect('urlOffsets', urlCount + 1, 'meta.urlCount + 1');
  expect('urlMembersOffsets', urlCount + 1, 'meta.urlCount + 1');
  for (const field of [
    'clusterNumber',
    'clusterCreatedAt',
    'clusterLastUpdated',
    'clusterRiskCategory',
    'clusterConfidence',
    'clusterEvidenceCount',
  ] as const) {
    expect(field, clusterCount, 'meta.clusterCount');
  }
  expect('clusterMembersOffsets', clusterCount + 1, 'meta.clusterCount + 1');

  const capacity = lengthOf('slotTags');
  // At least one empty slot, or a probe for an absent key would never end.
  if (capacity <= vpaCount) formatError(`${context}: slotTags has ${capacity} slots, expected more than meta.vpaCount (${vpaCount})`);
  expect('slotEntries', capacity * ENTRY_WORDS, `${ENTRY_WORDS} words for each of the ${capacity} slots`);
}

/**
 * Everything lookups index by: lengths, offsets ascending from 0 to the end
 * of their blob, ids and codes in range, one slot per VPA holding its key,
 * well formed (checkIndexArrays, 0.6–0.8 s at 10M VPAs). Linear in the
 * snapshot size: each check is a tight scan over one array of one class
 * (monomorphic, so it stays fast even in a freshly started thread), and only
 * a failure pays for finding and describing the bad entry.
 */
function validateStructure(data: SnapshotData, context: string): void {
  const { meta } = data;
  validateLengths(meta, (field) => data[field].length, context);
  const bad = (what: string): never => formatError(`${context}: ${what}`);

  checkOffsets(data.sourceOffsets, meta.sourceCount, 'sourceOffsets', 'meta.sourceCount', bad);
  // A VPA is flagged on evidence: its answer names at least one source, the newest being its last_seen.
  const sourceless = firstNotAscending(data.sourceOffsets, true);
  if (sourceless >= 0) bad(`VPA ${sourceless - 1} has no sources (sourceOffsets[${sourceless}] is ${data.sourceOffsets[sourceless]})`);
  checkOffsets(data.urlOffsets, data.urlBytes.length, 'urlOffsets', 'urlBytes', bad);
  checkOffsets(data.urlMembersOffsets, data.urlMembersBlob.length, 'urlMembersOffsets', 'urlMembersBlob', bad);
  checkOffsets(data.clusterMembersOffsets, data.clusterMembersBlob.length, 'clusterMembersOffsets', 'clusterMembersBlob', bad);

  const below = (values: ArrayLike<number>, max: number, limit: number, name: string, limitName: string): void => {
    if (values.length === 0 || max < limit) return;
    const i = Array.prototype.findIndex.call(values, (v: number) => v >= limit);
    bad(`${name}[${i}] is ${values[i]}, not below ${limitName} (${limit})`);
  };
  const risks = RISK_CATEGORIES.length;
  const sources = SOURCE_CATEGORIES.length;
  below(data.sourceUrl, max32(data.sourceUrl), meta.urlCount, 'sourceUrl', 'meta.urlCount');
  below(data.riskCategory, max8(data.riskCategory), risks, 'riskCategory', 'the number of risk categories');
  below(data.clusterRiskCategory, max8(data.clusterRiskCategory), risks, 'clusterRiskCategory', 'the number of risk categories');
  below(data.urlCategory, max8(data.urlCategory), sources, 'urlCategory', 'the number of source categories');
  below(data.confidence, max16(data.confidence), CONFIDENCE_SCALE + 1, 'confidence', 'CONFIDENCE_SCALE + 1');
  below(data.clusterConfidence, max16(data.clusterConfidence), CONFIDENCE_SCALE + 1, 'clusterConfidence', 'CONFIDENCE_SCALE + 1');

  for (const field of ['firstSeen', 'sourceCapturedAt', 'clusterCreatedAt', 'clusterLastUpdated'] as const) {
    const i = firstNonTimestamp(data[field]);
    if (i >= 0) bad(`${field}[${i}] is ${data[field][i]}, not a whole number of ms within the dates an answer can name`);
  }

  const clusterCount = meta.clusterCount;
  const stray = firstClusterOutOfRange(data.vpaCluster, clusterCount);
  if (stray >= 0) bad(`vpaCluster[${stray}] is ${data.vpaCluster[stray]}, but there are ${clusterCount} clusters`);

  const unordered = firstNotAscending(data.clusterNumber, true);
  if (unordered >= 0) bad(`clusterNumber is not strictly ascending at ${unordered}`);

  const slotProblem = checkIndexArrays(data);
  if (slotProblem !== undefined) bad(slotProblem);
}

function checkOffsets(
  offsets: Uint32Array,
  end: number,
  name: string,
  endName: string,
  bad: (what: string) => never,
): void {
  if (offsets[0] !== 0) bad(`${name}[0] is ${offsets[0]}, expected 0`);
  const i = firstNotAscending(offsets, false);
  if (i >= 0) bad(`${name} decreases at ${i} (${offsets[i - 1]} then ${offsets[i]})`);
  const last = offsets[offsets.length - 1]!;
  if (last !== end) bad(`${name} ends at ${last}, but ${endName} is ${end}`);
}

/** Index of the first entry below (or, when strict, equal to) its predecessor; -1 when there is none. */
function firstNotAscending(values: Uint32Array, strict: boolean): number {
  const n = values.length;
  let previous = n > 0 ? values[0]! : 0;
  if (strict) {
    for (let i = 1; i < n; i++) {
      const v = values[i]!;
      if (v <= previous) return i;
      previous = v;
    }
  } else {
    for (let i = 1; i < n; i++) {
      const v = values[i]!;
      if (v < previous) return i;
      previous = v;
    }
  }
  return -1;
}

/** Date's range, ±10^8 days around 1970 (ECMA-262 time values): past it no ISO text exists for an answer. */
const MAX_TIME_VALUE = 8.64e15;

/** Index of the first value that is not a whole number of ms in Date's range (NaN included); -1 when there is none. */
function firstNonTimestamp(values: Float64Array): number {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!(v >= -MAX_TIME_VALUE && v <= MAX_TIME_VALUE) || Math.floor(v) !== v) return i;
  }
  return -1;
}

function firstClusterOutOfRange(vpaCluster: Uint32Array, clusterCount: number): number {
  for (let i = 0; i < vpaCluster.length; i++) {
    const c = vpaCluster[i]!;
    if (c >= clusterCount && c !== NO_CLUSTER) return i;
  }
  return -1;
}

function max8(values: Uint8Array): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > max) max = values[i]!;
  return max;
}

function max16(values: Uint16Array): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > max) max = values[i]!;
  return max;
}

function max32(values: Uint32Array): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > max) max = values[i]!;
  return max;
}

// ---------------------------------------------------------------------------

function fail(code: SnapshotErrorCode, message: string): never {
  throw new SnapshotError(code, message);
}

function formatError(message: string): never {
  throw new SnapshotError(ErrorCode.SNAPSHOT_FORMAT, message);
}

function assertLittleEndian(): void {
  if (!LITTLE_ENDIAN) throw new Error('snapshot files store little-endian arrays; this machine is big endian');
}

function isSharedArrayBuffer(buffer: ArrayBufferLike): buffer is SharedArrayBuffer {
  return typeof SharedArrayBuffer === 'function' && buffer instanceof SharedArrayBuffer;
}

function alignUp(n: number): number {
  return Math.ceil(n / DATA_ALIGNMENT) * DATA_ALIGNMENT;
}

function hex32(n: number): string {
  return `0x${(n >>> 0).toString(16).padStart(8, '0')}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
