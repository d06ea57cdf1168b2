import { Packr } from 'msgpackr';
import { frame } from '../../common/file-framing.js';
import { ARRAY_FIELDS, COLUMNS, type SnapshotData, type SnapshotMeta } from '../snapshot-data.js';
import {
  DATA_ALIGNMENT,
  SNAPSHOT_FRAME,
  SNAPSHOT_HEADER_LENGTH,
  assertLittleEndian,
  formatError,
} from './format.js';
import { validateArrayClasses, validateMeta, validateStructure } from './validate.js';

const MAX_BIN32 = 0xffffffff;
const metaPackr = new Packr({ useRecords: false });

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
    w.str(COLUMNS[field].type.name);
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
  return frame(SNAPSHOT_FRAME, body);
}

/**
 * Frame an already encoded body with a header carrying its length and CRC.
 * For tools and tests that build or re-encode bodies; `version` lets them
 * write other versions.
 */
export function frameSnapshotBody(body: Uint8Array | readonly Uint8Array[], version = SNAPSHOT_FRAME.version): Uint8Array[] {
  return frame(SNAPSHOT_FRAME, body, version);
}


/** Only the fields the format defines, so stray properties never reach the file. */
function plainMeta(meta: SnapshotMeta): SnapshotMeta {
  return {
    id: meta.id,
    createdAt: meta.createdAt,
    dataAsOf: meta.dataAsOf,
    scoredAt: meta.scoredAt,
    evidenceMaxAgeMs: meta.evidenceMaxAgeMs,
    correctionSequence: meta.correctionSequence,
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

