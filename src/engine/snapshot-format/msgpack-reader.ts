import { ErrorCode, SnapshotError } from '../../common/errors.js';

/** Just enough MessagePack to walk the body's framing without touching the array bytes. */
export class MsgpackReader {
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
