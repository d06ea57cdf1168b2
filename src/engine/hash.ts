/**
 * The 32-bit key hash of the VPA index: MurmurHash3 (x86_32) over the
 * lower-cased ASCII bytes of a key, with HASH_SEED.
 *
 * The hash is part of the snapshot file format: slot tables store it and are
 * probed with it after loading, so any change to this function (seed,
 * constants, byte order, lower-casing) requires a snapshot version bump.
 *
 * Two entry points give identical results for the same key:
 * - `hashKeyBytes` over stored bytes, which are already lower-cased;
 * - `hashQuery` over a JS string, lower-casing ASCII A-Z on the fly
 *   (`hashQueryWords` is the same and also keeps the lower-cased chars).
 * A query with any code unit above 0x7F can never equal a key (keys are
 * ASCII), so `hashQuery` answers NON_ASCII_HASH for it instead of a hash.
 */

export const HASH_SEED = 0x5f3759df;

/** `hashQuery` result for a string that contains a non-ASCII code unit; real hashes are uint32, never negative. */
export const NON_ASCII_HASH = -1;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** Hash of the (lower-cased ASCII) bytes `bytes[start..end)`, as a uint32. */
export function hashKeyBytes(bytes: Uint8Array, start: number, end: number): number {
  const length = end - start;
  const blockEnd = start + (length & ~3);
  let h = HASH_SEED;
  let i = start;
  for (; i < blockEnd; i += 4) {
    h = mixBlock(h, bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
  }
  const rest = end - i;
  if (rest > 0) {
    let k = bytes[i]!;
    if (rest > 1) k |= bytes[i + 1]! << 8;
    if (rest > 2) k |= bytes[i + 2]! << 16;
    h = mixTail(h, k);
  }
  return fmix32(h ^ length);
}

/**
 * Hash of `query` lower-cased (ASCII A-Z only, so 'İ' or 'K' never fold
 * onto ASCII letters), as a uint32; NON_ASCII_HASH when the query contains a
 * code unit above 0x7F. Allocation-free. Equal to `hashKeyBytes` over the
 * lower-cased bytes of any ASCII query.
 */
export function hashQuery(query: string): number {
  const length = query.length;
  const blockEnd = length & ~3;
  let h = HASH_SEED;
  // OR of every code unit: above 0x7F means some char is non-ASCII
  let seen = 0;
  let i = 0;
  for (; i < blockEnd; i += 4) {
    const c0 = query.charCodeAt(i);
    const c1 = query.charCodeAt(i + 1);
    const c2 = query.charCodeAt(i + 2);
    const c3 = query.charCodeAt(i + 3);
    seen |= c0 | c1 | c2 | c3;
    h = mixBlock(h, lowerAsciiWord(c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)));
  }
  const rest = length - i;
  if (rest > 0) {
    let c = query.charCodeAt(i);
    seen |= c;
    let k = lowerChar(c);
    if (rest > 1) {
      c = query.charCodeAt(i + 1);
      seen |= c;
      k |= lowerChar(c) << 8;
    }
    if (rest > 2) {
      c = query.charCodeAt(i + 2);
      seen |= c;
      k |= lowerChar(c) << 16;
    }
    h = mixTail(h, k);
  }
  if (seen > 0x7f) return NON_ASCII_HASH;
  return fmix32(h ^ length);
}

/**
 * `hashQuery`, also leaving the lower-cased query in `words`, packed four
 * chars per word little-endian (as an Int32Array view would read the key
 * bytes), the last word holding the 1-3 tail chars, if any. Lets a lookup
 * compare the query a word at a time without reading its chars again.
 * `words` must hold at least ceil(query.length / 4) entries; its contents
 * are unspecified when the result is NON_ASCII_HASH.
 */
export function hashQueryWords(query: string, words: Int32Array): number {
  const length = query.length;
  const blockEnd = length & ~3;
  let h = HASH_SEED;
  let seen = 0;
  let i = 0;
  for (; i < blockEnd; i += 4) {
    const c0 = query.charCodeAt(i);
    const c1 = query.charCodeAt(i + 1);
    const c2 = query.charCodeAt(i + 2);
    const c3 = query.charCodeAt(i + 3);
    seen |= c0 | c1 | c2 | c3;
    const k = lowerAsciiWord(c0 | (c1 << 8) | (c2 << 16) | (c3 << 24));
    words[i >> 2] = k;
    h = mixBlock(h, k);
  }
  const rest = length - i;
  if (rest > 0) {
    let c = query.charCodeAt(i);
    seen |= c;
    let k = lowerChar(c);
    if (rest > 1) {
      c = query.charCodeAt(i + 1);
      seen |= c;
      k |= lowerChar(c) << 8;
    }
    if (rest > 2) {
      c = query.charCodeAt(i + 2);
      seen |= c;
      k |= lowerChar(c) << 16;
    }
    words[i >> 2] = k;
    h = mixTail(h, k);
  }
  if (seen > 0x7f) return NON_ASCII_HASH;
  return fmix32(h ^ length);
}

/**
 * Lower-case four packed ASCII bytes at once: a byte gains its 0x80 bit
 * from +0x3f iff it is >= 'A' and from +0x25 iff it is > 'Z', and no byte
 * carries into the next while all are below 0x80 (a word with a larger byte
 * belongs to a non-ASCII query, whose hash is discarded anyway).
 */
export function lowerAsciiWord(k: number): number {
  return k | (((k + 0x3f3f3f3f) & ~(k + 0x25252525) & 0x80808080) >>> 2);
}

function lowerChar(c: number): number {
  return c >= 65 && c <= 90 ? c | 32 : c;
}

function mixBlock(h: number, k: number): number {
  h ^= mixTail(0, k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** The key scramble; on its own it mixes the 1-3 tail bytes. */
function mixTail(h: number, k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return h ^ Math.imul(k, C2);
}

/**
 * MurmurHash3's finaliser (fmix32): an avalanche, so every input bit reaches
 * the low (slot) bits. The key hash mixes the length in first; the cluster
 * id tables (builder/cluster-ids) finish their FNV-1a hash with it.
 */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
