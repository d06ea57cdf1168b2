/**
 * The output of `COPY (SELECT one_bytea_column ...) TO STDOUT (FORMAT
 * binary)`, read as it streams in: each row's bytes are handed on in the
 * pieces the connection delivers them in, never gathered into one value
 * and never through the hex text a bytea takes in a query's result.
 *
 * The format (PostgreSQL's COPY documentation, "Binary Format"): an
 * 11-byte signature, a 32-bit flags field, a 32-bit header extension
 * length and that many bytes; then per row a 16-bit field count and per
 * field a 32-bit length (-1 for NULL) and the bytes; a field count of -1
 * ends it. Every integer is big-endian.
 */
export class BinaryCopyColumn {
  /** Rows read whole. */
  rows = 0;
  readonly #onBytes: (piece: Buffer) => void;
  #state = State.Header;
  /** Header bytes gathered across pieces: at most HEADER_BYTES. */
  readonly #held = Buffer.alloc(HEADER_BYTES);
  #heldLength = 0;
  /** Bytes still to come of the header extension or of the current field. */
  #remaining = 0;

  /** `onBytes` gets every row's bytes in order, as views of the pieces pushed (not copies). */
  constructor(onBytes: (piece: Buffer) => void) {
    this.#onBytes = onBytes;
  }

  /** Read the next piece of the COPY output; throws on anything that breaks the format above or has more than one column. */
  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      switch (this.#state) {
        case State.Header:
          at = this.#gather(chunk, at, HEADER_BYTES);
          if (this.#heldLength < HEADER_BYTES) break;
          if (!this.#held.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new Error('the COPY output does not start with the binary signature');
          this.#remaining = this.#held.readUInt32BE(SIGNATURE.length + 4);
          this.#heldLength = 0;
          this.#state = State.Extension;
          break;
        case State.Extension: {
          const skipped = Math.min(this.#remaining, chunk.length - at);
          at += skipped;
          this.#remaining -= skipped;
          if (this.#remaining === 0) this.#state = State.Row;
          break;
        }
        case State.Row: {
          at = this.#gather(chunk, at, 2);
          if (this.#heldLength < 2) break;
          const fields = this.#held.readInt16BE(0);
          if (fields === -1) {
            this.#state = State.End;
          } else if (fields !== 1) {
            throw new Error(`a COPY row has ${fields} fields; one was asked for`);
          } else {
            this.#state = State.Length;
          }
          this.#heldLength = 0;
          break;
        }
        case State.Length: {
          at = this.#gather(chunk, at, 4);
          if (this.#heldLength < 4) break;
          const length = this.#held.readInt32BE(0);
          if (length < 0) throw new Error('a COPY row has a NULL field');
          this.#heldLength = 0;
          this.#remaining = length;
          this.#state = State.Bytes;
          if (length === 0) this.#rowDone();
          break;
        }
        case State.Bytes: {
          const take = Math.min(this.#remaining, chunk.length - at);
          this.#onBytes(chunk.subarray(at, at + take));
          at += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#rowDone();
          break;
        }
        case State.End:
          throw new Error('the COPY output goes on after its trailer');
      }
    }
  }

  /** Whether the trailer was read: the output is whole. */
  get complete(): boolean {
    return this.#state === State.End;
  }

  #rowDone(): void {
    this.rows++;
    this.#state = State.Row;
  }

  /** Gather header bytes up to `wanted` held; returns where reading `chunk` goes on. */
  #gather(chunk: Buffer, at: number, wanted: number): number {
    const take = Math.min(wanted - this.#heldLength, chunk.length - at);
    chunk.copy(this.#held, this.#heldLength, at, at + take);
    this.#heldLength += take;
    return at + take;
  }
}

const enum State {
  Header,
  Extension,
  Row,
  Length,
  Bytes,
  End,
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** The signature, the flags and the extension's length. */
const HEADER_BYTES = SIGNATURE.length + 8;
