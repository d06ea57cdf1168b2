/**
 * A copy of src/vpa/vpa-hash.ts: h(upi), the hash range lookups and the mirror name VPAs by.
 * Written by scripts/generate-client-sources.ts; do not edit:
 * `npm run generate:client` rewrites this file.
 */

/**
 * h(upi): SHA-256 of a VPA's canonical form (lower-cased; the grammar is
 * ASCII, so its UTF-8 bytes are its char codes), the hash that range
 * lookups and the local mirror name VPAs by (docs/api.md, "Private
 * lookups"). Written out here rather than through node:crypto because it is
 * on two lookup paths: a range answer hashes every VPA it names, and a
 * mirror's `check` hashes each payee; node:crypto's per-call cost is several
 * times the hash's own (bench/MEASUREMENTS.md, "VPA hashes"). Any string of
 * char codes below 256 is hashed as those bytes; the caller passes VPAs.
 */

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** The message schedule of the block being hashed, reused. */
const W = new Int32Array(64);
/** The hash state while hashing, reused. */
const H = new Int32Array(8);
const HEX = '0123456789abcdef';

/** The words of h(upi) into `out` (8 words, big-endian as SHA-256 defines them, so word 0 holds the first 8 hex digits). Allocation-free. */
export function vpaHashWords(upi: string, out: Uint32Array): Uint32Array {
  H[0] = 0x6a09e667;
  H[1] = 0xbb67ae85;
  H[2] = 0x3c6ef372;
  H[3] = 0xa54ff53a;
  H[4] = 0x510e527f;
  H[5] = 0x9b05688c;
  H[6] = 0x1f83d9ab;
  H[7] = 0x5be0cd19;
  const length = upi.length;
  // The message, the 0x80 byte and the 64-bit bit length, in whole blocks of 64 bytes.
  const blocks = ((length + 8) >>> 6) + 1;
  for (let block = 0; block < blocks; block++) {
    const base = block << 6;
    for (let w = 0, i = base; w < 16; w++, i += 4) {
      W[w] =
        i + 4 <= length
          ? (lower(upi.charCodeAt(i)) << 24) | (lower(upi.charCodeAt(i + 1)) << 16) | (lower(upi.charCodeAt(i + 2)) << 8) | lower(upi.charCodeAt(i + 3))
          : (messageByte(upi, length, i) << 24) | (messageByte(upi, length, i + 1) << 16) | (messageByte(upi, length, i + 2) << 8) | messageByte(upi, length, i + 3);
    }
    if (block === blocks - 1) {
      // The length in bits; VPAs are far below 2^29 bytes, so the high word is 0.
      W[14] = 0;
      W[15] = length << 3;
    }
    compress();
  }
  for (let i = 0; i < 8; i++) out[i] = H[i]! >>> 0;
  return out;
}

/** Byte `i` of the padded message: the canonical VPA's bytes, then 0x80, then zeros. */
function messageByte(upi: string, length: number, i: number): number {
  return i < length ? lower(upi.charCodeAt(i)) : i === length ? 0x80 : 0;
}

/** A char code of the canonical form: A-Z to a-z. */
function lower(c: number): number {
  return c >= 65 && c <= 90 ? c | 0x20 : c & 0xff;
}

function compress(): void {
  for (let t = 16; t < 64; t++) {
    const w15 = W[t - 15]!;
    const w2 = W[t - 2]!;
    const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
    const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
    W[t] = (W[t - 16]! + s0 + W[t - 7]! + s1) | 0;
  }
  let a = H[0]!;
  let b = H[1]!;
  let c = H[2]!;
  let d = H[3]!;
  let e = H[4]!;
  let f = H[5]!;
  let g = H[6]!;
  let h = H[7]!;
  for (let t = 0; t < 64; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const ch = (e & f) ^ (~e & g);
    const t1 = (h + S1 + ch + K[t]! + W[t]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (S0 + maj) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  H[0] = (H[0]! + a) | 0;
  H[1] = (H[1]! + b) | 0;
  H[2] = (H[2]! + c) | 0;
  H[3] = (H[3]! + d) | 0;
  H[4] = (H[4]! + e) | 0;
  H[5] = (H[5]! + f) | 0;
  H[6] = (H[6]! + g) | 0;
  H[7] = (H[7]! + h) | 0;
}

/** h(upi) as 64 lowercase hex digits. */
export function vpaHashHex(upi: string): string {
  return wordsHex(vpaHashWords(upi, new Uint32Array(8)), 0, 64);
}

/** Hex digits [from, to) of a hash given as its 8 words. */
export function wordsHex(words: Uint32Array, from: number, to: number): string {
  let text = '';
  for (let i = from; i < to; i++) text += HEX[(words[i >>> 3]! >>> (28 - ((i & 7) << 2))) & 15];
  return text;
}
