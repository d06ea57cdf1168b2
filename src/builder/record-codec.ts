/**
 * Binary form of a validated evidence record, as it moves between build
 * phases. Records are appended to per-partition byte buffers that are
 * transferred (not cloned) between worker threads, so millions of records
 * cross threads as a handful of ArrayBuffers.
 *
 * Layout, little endian, 23-byte fixed part then the strings:
 *   u32 chunk   u32 line     order of appearance: (chunk, line) ascending is ingestion order
 *   f64 capturedAt (epoch ms)
 *   u8  flags   bits 0-1 source category, 2-4 risk category, 5 screenshot
 *   u16 upi bytes, u16 url bytes, u16 evidence_id bytes
 *   upi (ASCII, lower-cased) | url (UTF-8) | evidence_id (UTF-8)
 */
export const FIXED_BYTES = 23;

/**
 * Buffer's own encoders without the argument juggling of `write(string,
 * offset, encoding)`, which showed up as a tenth of parse time in profiles.
 * They are long-standing (serialisers such as msgpackr use them) but
 * undocumented, so the choice is made once here with a public fallback.
 */
interface StringCodec {
  latin1Write(buffer: Buffer, text: string, at: number): number;
  utf8Write(buffer: Buffer, text: string, at: number): number;
}

interface BufferInternals {
  latin1Write(text: string, at: number): number;
  utf8Write(text: string, at: number): number;
}

const internals = Buffer.prototype as unknown as Partial<BufferInternals>;
const codec: StringCodec =
  typeof internals.utf8Write === 'function' && typeof internals.latin1Write === 'function'
    ? {
        latin1Write: (b, text, at) => (b as unknown as BufferInternals).latin1Write(text, at),
        utf8Write: (b, text, at) => (b as unknown as BufferInternals).utf8Write(text, at),
      }
    : {
        latin1Write: (b, text, at) => b.write(text, at, 'latin1'),
        utf8Write: (b, text, at) => b.write(text, at, 'utf8'),
      };
const OFFSET_CAPTURED = 8;
const OFFSET_FLAGS = 16;
const OFFSET_UPI_LENGTH = 17;
const OFFSET_URL_LENGTH = 19;
const OFFSET_ID_LENGTH = 21;

export const FLAG_SCREENSHOT = 1 << 5;

export function packFlags(sourceCategory: number, riskCategory: number, screenshot: boolean): number {
  return sourceCategory | (riskCategory << 2) | (screenshot ? FLAG_SCREENSHOT : 0);
}

/** A growable byte buffer of records for one partition. */
export class RecordWriter {
  #buffer: Buffer;
  #view: DataView;
  #length = 0;

  constructor(initialBytes = 64 * 1024) {
    this.#buffer = Buffer.allocUnsafeSlow(initialBytes);
    this.#view = new DataView(this.#buffer.buffer, this.#buffer.byteOffset, this.#buffer.byteLength);
  }

  get byteLength(): number {
    return this.#length;
  }

  append(chunk: number, line: number, capturedAt: number, flags: number, upi: string, url: string, evidenceId: string): void {
    // Worst case UTF-8 is 3 bytes per UTF-16 unit; the upi is ASCII.
    this.#reserve(FIXED_BYTES + upi.length + 3 * (url.length + evidenceId.length));
    const start = this.#length;
    const view = this.#view;
    const buffer = this.#buffer;
    view.setUint32(start, chunk, true);
    view.setUint32(start + 4, line, true);
    view.setFloat64(start + OFFSET_CAPTURED, capturedAt, true);
    buffer[start + OFFSET_FLAGS] = flags;
    let at = start + FIXED_BYTES;
    const upiBytes = codec.latin1Write(buffer, upi, at);
    at += upiBytes;
    const urlBytes = codec.utf8Write(buffer, url, at);
    at += urlBytes;
    const idBytes = codec.utf8Write(buffer, evidenceId, at);
    at += idBytes;
    view.setUint16(start + OFFSET_UPI_LENGTH, upiBytes, true);
    view.setUint16(start + OFFSET_URL_LENGTH, urlBytes, true);
    view.setUint16(start + OFFSET_ID_LENGTH, idBytes, true);
    this.#length = at;
  }

  /** Append already encoded records (one or several whole ones) verbatim. */
  appendRaw(source: Uint8Array, start: number, end: number): void {
    this.#reserve(end - start);
    this.#buffer.set(source.subarray(start, end), this.#length);
    this.#length += end - start;
  }

  /**
   * Append one encoded record without its evidence id (its id length set
   * to 0). Once deduplicated, nothing reads a record's id: its own table
   * of ids seen keeps them, and the records a builder keeps between builds
   * are smaller by the id's bytes.
   */
  appendWithoutId(source: Uint8Array, start: number, idStart: number): void {
    const at = this.#length;
    this.appendRaw(source, start, idStart);
    this.#view.setUint16(at + OFFSET_ID_LENGTH, 0, true);
  }

  /** The records as an exactly sized, transferable ArrayBuffer. */
  finish(): ArrayBuffer {
    const out = new ArrayBuffer(this.#length);
    new Uint8Array(out).set(this.#buffer.subarray(0, this.#length));
    return out;
  }

  /**
   * The records in shared memory, exactly sized: for records that several
   * builds read (a build keeps its deduplicated records for the next one),
   * which a transfer would take away from the thread keeping them.
   */
  finishShared(): SharedArrayBuffer {
    const out = new SharedArrayBuffer(this.#length);
    new Uint8Array(out).set(this.#buffer.subarray(0, this.#length));
    return out;
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes <= this.#buffer.byteLength) return;
    let size = this.#buffer.byteLength * 2;
    while (size < this.#length + bytes) size *= 2;
    const next = Buffer.allocUnsafeSlow(size);
    this.#buffer.copy(next, 0, 0, this.#length);
    this.#buffer = next;
    this.#view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }
}

/**
 * Cursor over a buffer of records. `next()` advances and exposes the current
 * record's fixed fields and the byte ranges of its strings, which the build
 * compares and interns as bytes without decoding them.
 */
export class RecordReader {
  readonly #bytes: Buffer;
  readonly #view: DataView;
  #at = 0;
  #start = 0;
  #end = 0;
  #upiStart = 0;
  #urlStart = 0;
  #idStart = 0;

  /** Over the records of `buffer`, from byte `from` (the start of a record; default 0). */
  constructor(buffer: ArrayBufferLike, from = 0) {
    this.#bytes = Buffer.from(buffer);
    this.#view = new DataView(buffer);
    this.#at = from;
  }

  next(): boolean {
    if (this.#at >= this.#bytes.byteLength) return false;
    const start = this.#at;
    const view = this.#view;
    this.#start = start;
    this.#upiStart = start + FIXED_BYTES;
    this.#urlStart = this.#upiStart + view.getUint16(start + OFFSET_UPI_LENGTH, true);
    this.#idStart = this.#urlStart + view.getUint16(start + OFFSET_URL_LENGTH, true);
    this.#end = this.#idStart + view.getUint16(start + OFFSET_ID_LENGTH, true);
    this.#at = this.#end;
    return true;
  }

  /** The chunk the record was read from: its place in ingestion order, with the line. */
  get chunk(): number {
    return this.#view.getUint32(this.#start, true);
  }

  get capturedAt(): number {
    return this.#view.getFloat64(this.#start + OFFSET_CAPTURED, true);
  }

  get flags(): number {
    return this.#bytes[this.#start + OFFSET_FLAGS]!;
  }

  /** The whole buffer; with the offsets below, fields can be used as bytes without decoding. */
  get raw(): Uint8Array {
    return this.#bytes;
  }

  get upiStart(): number {
    return this.#upiStart;
  }

  get urlStart(): number {
    return this.#urlStart;
  }

  get idStart(): number {
    return this.#idStart;
  }

  get rawStart(): number {
    return this.#start;
  }

  get rawEnd(): number {
    return this.#end;
  }
}

/**
 * FNV-1a over UTF-16 code units: spreads strings over partitions. It is
 * independent of the index hash on purpose: partitioning is internal to one
 * build and never stored.
 */
export function partitionOf(text: string, partitions: number): number {
  return fnv1a(text) % partitions;
}

/** partitionOf over the bytes of a string, when only its UTF-8 bytes are at hand (same result for ASCII). */
export function partitionOfBytes(bytes: Uint8Array, start: number, end: number, partitions: number): number {
  return fnv1aBytes(bytes, start, end) % partitions;
}

/** FNV-1a over bytes [start, end): partitionOfBytes's hash, unreduced. */
export function fnv1aBytes(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    hash ^= bytes[i]!;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The chunk of the record at `at` (the first four bytes): with its line, its place in ingestion order. */
export function chunkAt(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

/**
 * The length of the VPA of the record that starts at `at` in `bytes`, read
 * from the bytes as RecordReader reads it through a DataView: for tight
 * passes over many records that look at few of them.
 */
export function upiLengthAt(bytes: Uint8Array, at: number): number {
  return bytes[at + OFFSET_UPI_LENGTH]! | (bytes[at + OFFSET_UPI_LENGTH + 1]! << 8);
}

/** Where the record that starts at `at` in `bytes` ends (upiLengthAt says why bytes). */
export function recordEndAt(bytes: Uint8Array, at: number): number {
  const urlLength = bytes[at + OFFSET_URL_LENGTH]! | (bytes[at + OFFSET_URL_LENGTH + 1]! << 8);
  const idLength = bytes[at + OFFSET_ID_LENGTH]! | (bytes[at + OFFSET_ID_LENGTH + 1]! << 8);
  return at + FIXED_BYTES + upiLengthAt(bytes, at) + urlLength + idLength;
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
