/**
 * A byte buffer an answer is written into and handed to uWebSockets.js as
 * it is, reused for the next answer.
 *
 * A JavaScript string given to uWebSockets.js is flattened by V8 if it was
 * built by joining (every answer is), then measured and copied out as UTF-8
 * on each call (`String::Utf8Length`, `String::WriteUtf8`); the joined
 * pieces, the flat copy and the text of every number are garbage for the
 * next scavenge. A typed array is read in place. Under single-lookup load
 * the string path was a large share of what a serving thread allocated per
 * request, though the CPU per request was the same either way
 * (bench/MEASUREMENTS.md, "Allocation per single lookup" and "The request
 * path: allocation and native calls"): the bytes cut the garbage at no cost.
 *
 * uWebSockets.js copies what it is given before the call returns (into
 * the socket, or into its own buffer when the socket is full), so the same
 * memory can be written again for the next answer. A view is needed per
 * call; one view per length is made once and kept, so writing an answer
 * allocates nothing once the lengths seen have come up.
 */
/** Digit characters by value, '0'..'9' then 'a'..'z'. */
const DIGITS = Uint8Array.from('0123456789abcdefghijklmnopqrstuvwxyz', (c) => c.charCodeAt(0));

const ZERO_DIGIT = DIGITS[0]!;
const UTF8 = new TextEncoder();

export class ByteScratch {
  readonly #bytes: Uint8Array;
  /** `#bytes.subarray(0, n)` by `n`, made when first needed. */
  readonly #views: (Uint8Array | undefined)[] = [];
  #length = 0;

  constructor(capacity: number) {
    this.#bytes = new Uint8Array(capacity);
  }

  get length(): number {
    return this.#length;
  }

  get capacity(): number {
    return this.#bytes.length;
  }

  /** Start again from empty. */
  clear(): this {
    this.#length = 0;
    return this;
  }

  /** Keep the first `length` bytes written and drop the rest: a prefix that repeats need not be written again. */
  truncate(length: number): this {
    if (length < 0 || length > this.#length) throw new RangeError(`cannot truncate ${this.#length} bytes to ${length}`);
    this.#length = length;
    return this;
  }

  /**
   * The buffer itself, with room for `extra` bytes after `length`, for a
   * writer that puts many small pieces with the `put*` functions below and
   * then calls `commit` once: one bounds check for the whole answer, and no
   * method call per piece (a long writer calls more methods than V8 will
   * inline, and each call was most of the cost of its piece).
   */
  room(extra: number): Uint8Array {
    this.#reserve(extra);
    return this.#bytes;
  }

  /** After `room`: the bytes up to `end` are written. */
  commit(end: number): this {
    if (!(end >= this.#length && end <= this.#bytes.length)) throw new RangeError(`cannot commit ${end} of ${this.#bytes.length} bytes after ${this.#length}`);
    this.#length = end;
    return this;
  }

  /** Append `source`'s bytes. */
  bytes(source: Uint8Array): this {
    this.#reserve(source.length);
    this.#length = putBytes(this.#bytes, this.#length, source, 0, source.length);
    return this;
  }

  /** Append `text` as UTF-8; ASCII text (what answers mostly are) is copied char by char. */
  text(text: string): this {
    const n = text.length;
    this.#reserve(n);
    const bytes = this.#bytes;
    const start = this.#length;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c > 0x7f) return this.#utf8(text);
      bytes[start + i] = c;
    }
    this.#length = start + n;
    return this;
  }

  /** Append the decimal digits of `n`, as `String(n)` writes them; whole numbers are written digit by digit. */
  decimal(n: number): this {
    if (!isDigitable(n)) return this.text(String(n));
    this.#reserve(digitCount(n, 10));
    this.#length = putDigits(this.#bytes, this.#length, n, 10, 1);
    return this;
  }

  /** Append the base-36 digits of a whole number `n` (`n.toString(36)`). */
  base36(n: number): this {
    if (!isDigitable(n)) return this.text(n.toString(36));
    this.#reserve(digitCount(n, 36));
    this.#length = putDigits(this.#bytes, this.#length, n, 36, 1);
    return this;
  }

  /** What has been written since the last `clear`. Valid until the next write: hand it on at once. */
  view(): Uint8Array {
    const n = this.#length;
    let view = this.#views[n];
    if (view === undefined) {
      view = this.#bytes.subarray(0, n);
      this.#views[n] = view;
    }
    return view;
  }

  #utf8(text: string): this {
    return this.bytes(UTF8.encode(text));
  }

  #reserve(extra: number): void {
    // A typed array drops writes past its end without a word: refuse instead of answering truncated text.
    if (this.#length + extra > this.#bytes.length) {
      throw new RangeError(`answer larger than its ${this.#bytes.length}-byte buffer`);
    }
  }
}

/**
 * The bytes of text every char of which is below 0x80 (the constant pieces
 * of answers), as a plain Uint8Array: the put functions and the snapshot's
 * arrays then all see one kind of array.
 */
export function asciiBytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  putAscii(bytes, 0, text);
  return bytes;
}

/** Whether `putDigits` can write `n`: a whole number from 0 to Number.MAX_SAFE_INTEGER. */
export function isDigitable(n: number): boolean {
  return n >= 0 && n <= Number.MAX_SAFE_INTEGER && Number.isInteger(n);
}

/**
 * The `put*` functions write into a buffer from `ByteScratch.room` at `at`
 * and return where they stopped; the caller has made room for what they
 * write.
 */

/** `source[from..to)`. */
export function putBytes(target: Uint8Array, at: number, source: Uint8Array, from: number, to: number): number {
  const n = to - from;
  // TypedArray.prototype.set costs about as much as a loop over 12 bytes, and a part of an array, whose view must be
  // made first, as much as one over 24: shorter copies go by the loop (bench/MEASUREMENTS.md, "Range records in hash order").
  const whole = from === 0 && to === source.length;
  if (n > (whole ? 12 : 24)) target.set(whole ? source : source.subarray(from, to), at);
  else for (let i = 0; i < n; i++) target[at + i] = source[from + i]!;
  return at + n;
}

/**
 * The whole of a constant piece (an answer's fixed text): by
 * TypedArray.prototype.set past a dozen bytes, as putBytes decides. A byte
 * loop for every piece cost a flagged batch item about 4,500 instructions
 * (bench/MEASUREMENTS.md, "Instructions per request").
 */
export function putPiece(target: Uint8Array, at: number, piece: Uint8Array): number {
  return putBytes(target, at, piece, 0, piece.length);
}

/** Text every char of which is known to be below 0x80 (digits, enum values, checked VPAs). */
export function putAscii(target: Uint8Array, at: number, text: string): number {
  const n = text.length;
  for (let i = 0; i < n; i++) target[at + i] = text.charCodeAt(i);
  return at + n;
}

/**
 * The digits of a whole number `n` (isDigitable) in `radix`, with leading
 * zeros up to `width` digits: `n.toString(radix).padStart(width, '0')`.
 */
export function putDigits(target: Uint8Array, at: number, n: number, radix: number, width: number): number {
  const end = at + Math.max(digitCount(n, radix), width);
  let to = end;
  let rest = n;
  // Past 2^31 the integer operations below would wrap: divide as doubles until then.
  while (rest > 0x7fffffff) {
    const next = Math.floor(rest / radix);
    target[--to] = DIGITS[rest - next * radix]!;
    rest = next;
  }
  do {
    const next = (rest / radix) | 0;
    target[--to] = DIGITS[rest - next * radix]!;
    rest = next;
  } while (rest > 0);
  while (to > at) target[--to] = ZERO_DIGIT;
  return end;
}

/** How many digits a whole number `n` ≥ 0 has in `radix`. */
function digitCount(n: number, radix: number): number {
  let count = 1;
  for (let power = radix; power <= n; power *= radix) count++;
  return count;
}
