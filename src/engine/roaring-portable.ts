/**
 * Writer for roaring's portable serialisation (the RoaringFormatSpec shared
 * by the C, Java and Go libraries), for sets given as sorted distinct ids,
 * and the counting reads a cluster answer needs.
 *
 * The build writes one bitmap per url — hundreds of thousands to millions —
 * and a call through the native binding per bitmap added seconds to a build
 * (see bench/MEASUREMENTS.md, 'The request path: allocation and native
 * calls'). Writing the bytes here costs a fraction of that. Likewise
 * a cluster answer counts its members on each of their urls, a dozen or more
 * bitmaps, and deserialising each through the binding to count one range of
 * it cost most of the answer; the counts are read off the bytes here instead.
 * The members themselves are decoded here too, into a buffer the caller
 * reuses: a deserialised bitmap is a native object that the collector must
 * track and finalise, per cluster answer. Property tests check every shape
 * written here against the library's deserialiser, and every count and
 * decoded set against its own.
 *
 * Containers: array (≤ 4096 values, 2 bytes each) or bitmap (8 KiB); run
 * containers are written only for contiguous ranges (writeRange).
 */
const SERIAL_COOKIE_NO_RUNCONTAINER = 12346;
const SERIAL_COOKIE = 12347;
const NO_OFFSET_THRESHOLD = 4;
const ARRAY_CONTAINER_MAX = 4096;
const BITMAP_CONTAINER_BYTES = 8192;

/** Bytes needed for the sorted distinct ids values[start..end). */
export function sortedIdsSize(values: ArrayLike<number>, start: number, end: number): number {
  let size = 8;
  let i = start;
  while (i < end) {
    const key = values[i]! >>> 16;
    let j = i + 1;
    while (j < end && values[j]! >>> 16 === key) j++;
    const cardinality = j - i;
    size += 8 + (cardinality > ARRAY_CONTAINER_MAX ? BITMAP_CONTAINER_BYTES : 2 * cardinality);
    i = j;
  }
  return size;
}

/**
 * Write the sorted distinct ids values[start..end) at out[at..]; returns the
 * bytes written (= sortedIdsSize). `out` must be zero-filled where bitmap
 * containers land.
 */
export function writeSortedIds(values: ArrayLike<number>, start: number, end: number, out: Uint8Array, at: number): number {
  let containers = 0;
  for (let i = start; i < end; containers++) {
    const key = values[i]! >>> 16;
    i++;
    while (i < end && values[i]! >>> 16 === key) i++;
  }
  writeU32(out, at, SERIAL_COOKIE_NO_RUNCONTAINER);
  writeU32(out, at + 4, containers);
  let data = at + 8 + 8 * containers;
  let c = 0;
  for (let i = start; i < end; c++) {
    const key = values[i]! >>> 16;
    let j = i + 1;
    while (j < end && values[j]! >>> 16 === key) j++;
    const cardinality = j - i;
    writeU16(out, at + 8 + 4 * c, key);
    writeU16(out, at + 10 + 4 * c, cardinality - 1);
    writeU32(out, at + 8 + 4 * containers + 4 * c, data - at);
    if (cardinality > ARRAY_CONTAINER_MAX) {
      for (let v = i; v < j; v++) {
        const low = values[v]! & 0xffff;
        out[data + (low >>> 3)]! |= 1 << (low & 7);
      }
      data += BITMAP_CONTAINER_BYTES;
    } else {
      for (let v = i; v < j; v++, data += 2) writeU16(out, data, values[v]! & 0xffff);
    }
    i = j;
  }
  return data - at;
}

/** Bytes needed for the contiguous ids [from, to). */
export function rangeSize(from: number, to: number): number {
  if (from >= to) return 8;
  const k = ((to - 1) >>> 16) - (from >>> 16) + 1;
  return 4 + Math.ceil(k / 8) + 4 * k + (k >= NO_OFFSET_THRESHOLD ? 4 * k : 0) + 6 * k;
}

/** Write the ids [from, to) as one run container per 2^16 chunk; returns the bytes written. `out` must be zero-filled. */
export function writeRange(from: number, to: number, out: Uint8Array, at: number): number {
  if (from >= to) {
    writeU32(out, at, SERIAL_COOKIE_NO_RUNCONTAINER);
    writeU32(out, at + 4, 0);
    return 8;
  }
  const firstKey = from >>> 16;
  const k = ((to - 1) >>> 16) - firstKey + 1;
  writeU16(out, at, SERIAL_COOKIE);
  writeU16(out, at + 2, k - 1);
  const flags = at + 4;
  for (let c = 0; c < k; c++) out[flags + (c >>> 3)]! |= 1 << (c & 7);
  const header = flags + Math.ceil(k / 8);
  const offsets = header + 4 * k;
  let data = offsets + (k >= NO_OFFSET_THRESHOLD ? 4 * k : 0);
  for (let c = 0; c < k; c++) {
    const key = firstKey + c;
    const lo = Math.max(from, key * 65536);
    const hi = Math.min(to, (key + 1) * 65536);
    writeU16(out, header + 4 * c, key);
    writeU16(out, header + 4 * c + 2, hi - lo - 1);
    if (k >= NO_OFFSET_THRESHOLD) writeU32(out, offsets + 4 * c, data - at);
    writeU16(out, data, 1);
    writeU16(out, data + 2, lo & 0xffff);
    writeU16(out, data + 4, hi - lo - 1);
    data += 6;
  }
  return data - at;
}

/**
 * The layout of one serialised bitmap: where its containers' keys and
 * cardinalities are, and whether a container is a run container. Malformed
 * bytes throw RangeError (snapshots are checksummed, so this means a bug).
 */
interface Layout {
  readonly containers: number;
  /** Start of the descriptive header: per container [u16 key, u16 cardinality - 1]. */
  readonly header: number;
  /** Start of the run flags (one bit per container), or -1 without run containers. */
  readonly runFlags: number;
  /** Start of the first container's data. */
  readonly data: number;
}

function layout(bytes: Uint8Array): Layout {
  if (bytes.length < 4) throw new RangeError(`roaring bitmap of ${bytes.length} bytes`);
  const cookie = readU32(bytes, 0);
  let containers: number;
  let header: number;
  let runFlags = -1;
  let hasOffsets: boolean;
  if ((cookie & 0xffff) === SERIAL_COOKIE) {
    containers = (cookie >>> 16) + 1;
    runFlags = 4;
    header = 4 + ((containers + 7) >>> 3);
    hasOffsets = containers >= NO_OFFSET_THRESHOLD;
  } else if (cookie === SERIAL_COOKIE_NO_RUNCONTAINER) {
    if (bytes.length < 8) throw new RangeError('roaring bitmap header truncated');
    containers = readU32(bytes, 4);
    header = 8;
    hasOffsets = true;
  } else {
    throw new RangeError(`not a portable roaring bitmap (cookie ${cookie})`);
  }
  const data = header + 4 * containers + (hasOffsets ? 4 * containers : 0);
  if (data > bytes.length) throw new RangeError('roaring bitmap header truncated');
  return { containers, header, runFlags, data };
}

/**
 * Why `bytes` is not a serialised bitmap whose ids are all below `limit`,
 * or null when it is: its header, its containers filling the bytes exactly
 * in ascending key order, and its highest id, read from the last container
 * without decoding the rest. A snapshot's bitmaps are checked so at load:
 * the lookups that read them later (cardinalities, cluster members) would
 * otherwise throw, or allocate what a forged header asks.
 */
export function portableProblem(bytes: Uint8Array, limit: number): string | null {
  let l: Layout;
  try {
    l = layout(bytes);
  } catch (error) {
    return (error as Error).message;
  }
  let at = l.data;
  let highest = -1;
  for (let c = 0; c < l.containers; c++) {
    const key = readU16(bytes, l.header + 4 * c);
    if (c > 0 && key <= readU16(bytes, l.header + 4 * (c - 1))) return 'container keys are not ascending';
    let size: number;
    try {
      size = containerSize(bytes, l, c, at);
    } catch (error) {
      return (error as Error).message;
    }
    if (c === l.containers - 1) highest = key * 65536 + containerHighest(bytes, l, c, at, size);
    at += size;
  }
  if (at !== bytes.length) return `${bytes.length - at} bytes past its last container`;
  return highest >= limit ? `it holds id ${highest}, not below ${limit}` : null;
}

/** The highest low 16 bits container `c` (at `at`, `size` bytes) holds; -1 for none. */
function containerHighest(bytes: Uint8Array, l: Layout, c: number, at: number, size: number): number {
  if (isRun(bytes, l, c)) {
    const runs = readU16(bytes, at);
    return runs === 0 ? -1 : readU16(bytes, at + 2 + 4 * (runs - 1)) + readU16(bytes, at + 4 + 4 * (runs - 1));
  }
  if (size === BITMAP_CONTAINER_BYTES && readU16(bytes, l.header + 4 * c + 2) + 1 > ARRAY_CONTAINER_MAX) {
    for (let w = BITMAP_CONTAINER_BYTES / 4 - 1; w >= 0; w--) {
      const word = readU32(bytes, at + 4 * w);
      if (word !== 0) return 32 * w + 31 - Math.clz32(word);
    }
    return -1;
  }
  return size === 0 ? -1 : readU16(bytes, at + size - 2);
}

/** The number of ids in a serialised bitmap, from its header alone. */
export function portableCardinality(bytes: Uint8Array): number {
  const { containers, header } = layout(bytes);
  let count = 0;
  for (let c = 0; c < containers; c++) count += readU16(bytes, header + 4 * c + 2) + 1;
  return count;
}

/**
 * How many of the sorted distinct `ids` a serialised bitmap holds. A
 * contiguous run of ids (a cluster's members, as the build lays them out)
 * is counted per container without visiting the ids; any other set is
 * checked id by id.
 */
export function portableIntersectionCardinality(bytes: Uint8Array, ids: Uint32Array): number {
  const n = ids.length;
  if (n === 0) return 0;
  const first = ids[0]!;
  const last = ids[n - 1]!;
  if (last - first + 1 === n) return portableRangeCardinality(bytes, first, last + 1);
  const l = layout(bytes);
  let count = 0;
  let c = 0;
  let at = l.data;
  for (let i = 0; i < n && c < l.containers; ) {
    const key = readU16(bytes, l.header + 4 * c);
    const idKey = ids[i]! >>> 16;
    if (idKey < key) {
      i++;
      continue;
    }
    const size = containerSize(bytes, l, c, at);
    if (idKey === key) {
      // Every id of this 2^16 chunk against this container.
      for (; i < n && ids[i]! >>> 16 === key; i++) count += containerHas(bytes, l, c, at, ids[i]! & 0xffff) ? 1 : 0;
    }
    at += size;
    c++;
  }
  return count;
}

/** How many ids in [from, to) a serialised bitmap holds. */
export function portableRangeCardinality(bytes: Uint8Array, from: number, to: number): number {
  const l = layout(bytes);
  let count = 0;
  let at = l.data;
  for (let c = 0; c < l.containers; c++) {
    const key = readU16(bytes, l.header + 4 * c);
    const size = containerSize(bytes, l, c, at);
    const base = key * 65536;
    const lo = Math.max(from, base) - base;
    const hi = Math.min(to, base + 65536) - base;
    if (lo < hi) {
      const cardinality = readU16(bytes, l.header + 4 * c + 2) + 1;
      if (lo === 0 && hi === 65536) count += cardinality;
      else if (isRun(bytes, l, c)) count += runCount(bytes, at, lo, hi);
      else if (cardinality > ARRAY_CONTAINER_MAX) count += bitmapCount(bytes, at, lo, hi);
      else count += arrayRank(bytes, at, cardinality, hi) - arrayRank(bytes, at, cardinality, lo);
    }
    at += size;
  }
  return count;
}

/**
 * Decode the ids of a serialised bitmap, ascending, into out[0..]; returns
 * how many (= portableCardinality). Throws RangeError when `out` is too
 * short for them.
 */
export function portableDecode(bytes: Uint8Array, out: Uint32Array): number {
  const l = layout(bytes);
  let n = 0;
  let at = l.data;
  for (let c = 0; c < l.containers; c++) {
    const base = readU16(bytes, l.header + 4 * c) * 65536;
    const size = containerSize(bytes, l, c, at);
    const cardinality = readU16(bytes, l.header + 4 * c + 2) + 1;
    if (n + cardinality > out.length) throw new RangeError(`${n + cardinality} ids do not fit in ${out.length}`);
    if (isRun(bytes, l, c)) {
      const runs = readU16(bytes, at);
      const last = n + cardinality;
      for (let r = 0; r < runs; r++) {
        const start = base + readU16(bytes, at + 2 + 4 * r);
        const end = start + readU16(bytes, at + 4 + 4 * r);
        // Checked run by run: runs past the header's count would otherwise be walked, 2^32 ids at most, before the check below.
        if (n + (end - start + 1) > last) throw new RangeError('a container holds more ids than its header says');
        for (let v = start; v <= end; v++) out[n++] = v;
      }
    } else if (cardinality > ARRAY_CONTAINER_MAX) {
      for (let w = 0; w < BITMAP_CONTAINER_BYTES / 4; w++) {
        let word = readU32(bytes, at + 4 * w) | 0;
        while (word !== 0) {
          const lowest = word & -word;
          out[n++] = base + 32 * w + (31 - Math.clz32(lowest));
          word ^= lowest;
        }
      }
    } else {
      for (let i = 0; i < cardinality; i++) out[n++] = base + readU16(bytes, at + 2 * i);
    }
    // Writes past the end of a typed array are dropped; a container holding more than its header says is refused here.
    if (n > out.length) throw new RangeError('a container holds more ids than its header says');
    at += size;
  }
  return n;
}

function isRun(bytes: Uint8Array, l: Layout, c: number): boolean {
  return l.runFlags >= 0 && (bytes[l.runFlags + (c >>> 3)]! & (1 << (c & 7))) !== 0;
}

/** Bytes of container `c`, whose data starts at `at`. */
function containerSize(bytes: Uint8Array, l: Layout, c: number, at: number): number {
  let size: number;
  if (isRun(bytes, l, c)) {
    if (at + 2 > bytes.length) throw new RangeError('roaring bitmap truncated');
    size = 2 + 4 * readU16(bytes, at);
  } else {
    const cardinality = readU16(bytes, l.header + 4 * c + 2) + 1;
    size = cardinality > ARRAY_CONTAINER_MAX ? BITMAP_CONTAINER_BYTES : 2 * cardinality;
  }
  if (at + size > bytes.length) throw new RangeError('roaring bitmap truncated');
  return size;
}

function containerHas(bytes: Uint8Array, l: Layout, c: number, at: number, low: number): boolean {
  if (isRun(bytes, l, c)) return runCount(bytes, at, low, low + 1) === 1;
  const cardinality = readU16(bytes, l.header + 4 * c + 2) + 1;
  if (cardinality > ARRAY_CONTAINER_MAX) return (bytes[at + (low >>> 3)]! & (1 << (low & 7))) !== 0;
  const rank = arrayRank(bytes, at, cardinality, low);
  return rank < cardinality && readU16(bytes, at + 2 * rank) === low;
}

/** Values below `value` in the sorted u16 array container at `at` (binary search). */
function arrayRank(bytes: Uint8Array, at: number, cardinality: number, value: number): number {
  let lo = 0;
  let hi = cardinality;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (readU16(bytes, at + 2 * mid) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Set bits in [lo, hi) of the bitmap container at `at` (little-endian 64-bit words, read 32 bits at a time). */
function bitmapCount(bytes: Uint8Array, at: number, lo: number, hi: number): number {
  let count = 0;
  const lastWord = (hi - 1) >>> 5;
  for (let w = lo >>> 5; w <= lastWord; w++) {
    let word = readU32(bytes, at + 4 * w);
    if (w === lo >>> 5) word &= -1 << (lo & 31);
    if (w === lastWord && (hi & 31) !== 0) word &= (1 << (hi & 31)) - 1;
    count += popcount32(word);
  }
  return count;
}

/** Values in [lo, hi) covered by the run container at `at`: [u16 runs, then per run u16 start, u16 length - 1]. */
function runCount(bytes: Uint8Array, at: number, lo: number, hi: number): number {
  const runs = readU16(bytes, at);
  let count = 0;
  for (let r = 0; r < runs; r++) {
    const start = readU16(bytes, at + 2 + 4 * r);
    const end = start + readU16(bytes, at + 4 + 4 * r) + 1;
    if (start >= hi) break;
    const overlap = Math.min(end, hi) - Math.max(start, lo);
    if (overlap > 0) count += overlap;
  }
  return count;
}

function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

function readU16(bytes: Uint8Array, at: number): number {
  return bytes[at]! | (bytes[at + 1]! << 8);
}

function readU32(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

function writeU16(out: Uint8Array, at: number, value: number): void {
  out[at] = value & 0xff;
  out[at + 1] = (value >>> 8) & 0xff;
}

function writeU32(out: Uint8Array, at: number, value: number): void {
  out[at] = value & 0xff;
  out[at + 1] = (value >>> 8) & 0xff;
  out[at + 2] = (value >>> 16) & 0xff;
  out[at + 3] = (value >>> 24) & 0xff;
}
