/**
 * A copy of src/mirror/mirror-format.ts: the local mirror's files and manifest.
 * Written by scripts/generate-client-sources.ts; do not edit:
 * `npm run generate:client` rewrites this file.
 */

/**
 * The local mirror's files and manifest (docs/api.md, "The mirror"): what
 * the service writes and `@upi-risk/client` reads. Pure and free of Node
 * imports, so the client ships a copy of this file
 * (scripts/generate-client-sources.ts).
 *
 * An entry names one flagged VPA in MIRROR_ENTRY_BYTES bytes: the first 8
 * bytes of h(upi) (SHA-256 of its canonical form), then one byte holding its
 * risk category's code in the high four bits and its confidence band's in
 * the low four. An entry set is sorted by those 8 bytes, with no two
 * entries sharing them (two VPAs that would, about one chance in 10^5 among
 * 10M, keep the greater entry).
 *
 * A file (full or diff), all integers little endian:
 *
 *   0   8  magic "UPIRMIRR"
 *   8   1  format version (1)
 *   9   1  kind: 1 full, 2 diff
 *   10  2  zero
 *   12  4  entries: a full file's entries, a diff's entries added or changed
 *   16  4  removed: a diff's prefixes removed (0 in a full file)
 *   20  4  zero
 *   24     entries × 9 bytes, ascending
 *          removed × 8 bytes, ascending
 *
 * and nothing after. The manifest's `sha256` is SHA-256 of the entry set a
 * client holds once a file is applied, written as a full file's entries
 * (setDigestBytes), so a client checks what it built, not what it fetched.
 */

export const MIRROR_MAGIC = 'UPIRMIRR';
export const MIRROR_FORMAT_VERSION = 1;
export const MIRROR_HEADER_BYTES = 24;
/** Bytes of the hash an entry keeps: two flagged VPAs of 10M share them with probability about 2.7e-6, one lookup hits a wrong one with about 5e-13. */
export const MIRROR_PREFIX_BYTES = 8;
export const MIRROR_ENTRY_BYTES = MIRROR_PREFIX_BYTES + 1;
export const MIRROR_KIND_FULL = 1;
export const MIRROR_KIND_DIFF = 2;

/** Risk categories by their code in an entry: the API's names, in the service's order (src/vpa/categories.ts). */
export const MIRROR_RISK_CATEGORIES = ['mule', 'gambling', 'phishing', 'scam', 'nbfc_impersonation'] as const;
/** Confidence bands by their code in an entry: the bands of a FLAGGED verdict (src/api/advice.ts). */
export const MIRROR_BANDS = ['high', 'medium', 'low'] as const;

/** Why a mirror file or manifest was refused. */
export type MirrorProblem = 'format' | 'truncated' | 'order';

export class MirrorFormatError extends Error {
  override readonly name = 'MirrorFormatError';
  readonly problem: MirrorProblem;
  constructor(problem: MirrorProblem, message: string) {
    super(message);
    this.problem = problem;
  }
}

/**
 * A sorted entry set: entry i is (hi[i], lo[i]) for the prefix's two
 * big-endian words and meta[i]; `count` of each array are used.
 */
export interface MirrorEntries {
  readonly count: number;
  readonly hi: Uint32Array;
  readonly lo: Uint32Array;
  readonly meta: Uint8Array;
}

/** Prefixes alone (a diff's removed ones), sorted. */
export interface MirrorPrefixes {
  readonly count: number;
  readonly hi: Uint32Array;
  readonly lo: Uint32Array;
}

export interface MirrorFile {
  readonly kind: typeof MIRROR_KIND_FULL | typeof MIRROR_KIND_DIFF;
  readonly entries: MirrorEntries;
  readonly removed: MirrorPrefixes;
}

export const NO_PREFIXES: MirrorPrefixes = { count: 0, hi: new Uint32Array(0), lo: new Uint32Array(0) };

/** The entry byte of a risk category code and band code. */
export function packMeta(riskCode: number, bandCode: number): number {
  return ((riskCode & 15) << 4) | (bandCode & 15);
}

/** Orders prefixes (hi, lo): negative, zero or positive. */
export function comparePrefixes(hiA: number, loA: number, hiB: number, loB: number): number {
  return hiA !== hiB ? (hiA < hiB ? -1 : 1) : loA !== loB ? (loA < loB ? -1 : 1) : 0;
}

export function emptyEntries(capacity = 0): { count: number; hi: Uint32Array; lo: Uint32Array; meta: Uint8Array } {
  return { count: 0, hi: new Uint32Array(capacity), lo: new Uint32Array(capacity), meta: new Uint8Array(capacity) };
}

/** Write a file of `kind`, into zeroed bytes from `allocate`. Throws RangeError when a list is out of order (a writer's bug, never a file to ship). */
export function encodeMirrorFile(
  kind: MirrorFile['kind'],
  entries: MirrorEntries,
  removed: MirrorPrefixes = NO_PREFIXES,
  allocate: (length: number) => Uint8Array = (length) => new Uint8Array(length),
): Uint8Array {
  if (kind === MIRROR_KIND_FULL && removed.count > 0) throw new RangeError('a full mirror file removes nothing');
  const bytes = allocate(MIRROR_HEADER_BYTES + entries.count * MIRROR_ENTRY_BYTES + removed.count * MIRROR_PREFIX_BYTES);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  writeMirrorHeader(bytes, kind, entries.count, removed.count);
  let at = MIRROR_HEADER_BYTES;
  for (let i = 0; i < entries.count; i++) {
    if (i > 0 && comparePrefixes(entries.hi[i - 1]!, entries.lo[i - 1]!, entries.hi[i]!, entries.lo[i]!) >= 0) throw new RangeError(`mirror entry ${i} is out of order`);
    view.setUint32(at, entries.hi[i]!);
    view.setUint32(at + 4, entries.lo[i]!);
    bytes[at + 8] = entries.meta[i]!;
    at += MIRROR_ENTRY_BYTES;
  }
  for (let i = 0; i < removed.count; i++) {
    if (i > 0 && comparePrefixes(removed.hi[i - 1]!, removed.lo[i - 1]!, removed.hi[i]!, removed.lo[i]!) >= 0) throw new RangeError(`removed prefix ${i} is out of order`);
    view.setUint32(at, removed.hi[i]!);
    view.setUint32(at + 4, removed.lo[i]!);
    at += MIRROR_PREFIX_BYTES;
  }
  return bytes;
}

/** Write a file's header into its first MIRROR_HEADER_BYTES bytes, which are zero. */
export function writeMirrorHeader(bytes: Uint8Array, kind: MirrorFile['kind'], entries: number, removed: number): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, MIRROR_HEADER_BYTES);
  for (let i = 0; i < MIRROR_MAGIC.length; i++) bytes[i] = MIRROR_MAGIC.charCodeAt(i);
  bytes[8] = MIRROR_FORMAT_VERSION;
  bytes[9] = kind;
  view.setUint32(12, entries, true);
  view.setUint32(16, removed, true);
}

/** Read a file, checking its header, its length and the order of both lists; throws MirrorFormatError. */
export function decodeMirrorFile(bytes: Uint8Array): MirrorFile {
  if (bytes.length < MIRROR_HEADER_BYTES) throw new MirrorFormatError('truncated', `a mirror file of ${bytes.length} bytes is shorter than its header`);
  for (let i = 0; i < MIRROR_MAGIC.length; i++) {
    if (bytes[i] !== MIRROR_MAGIC.charCodeAt(i)) throw new MirrorFormatError('format', 'not a mirror file (bad magic)');
  }
  if (bytes[8] !== MIRROR_FORMAT_VERSION) throw new MirrorFormatError('format', `mirror file format ${bytes[8]} is not ${MIRROR_FORMAT_VERSION}`);
  const kind = bytes[9];
  if (kind !== MIRROR_KIND_FULL && kind !== MIRROR_KIND_DIFF) throw new MirrorFormatError('format', `unknown mirror file kind ${kind}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint16(10, true) !== 0 || view.getUint32(20, true) !== 0) throw new MirrorFormatError('format', 'reserved header bytes are not zero');
  const entryCount = view.getUint32(12, true);
  const removedCount = view.getUint32(16, true);
  if (kind === MIRROR_KIND_FULL && removedCount !== 0) throw new MirrorFormatError('format', 'a full mirror file removes nothing');
  const expected = MIRROR_HEADER_BYTES + entryCount * MIRROR_ENTRY_BYTES + removedCount * MIRROR_PREFIX_BYTES;
  if (bytes.length < expected) throw new MirrorFormatError('truncated', `a mirror file of ${bytes.length} bytes, its header promising ${expected}`);
  if (bytes.length > expected) throw new MirrorFormatError('format', `a mirror file of ${bytes.length} bytes, its header promising ${expected}`);
  const entries = emptyEntries(entryCount);
  let at = MIRROR_HEADER_BYTES;
  for (let i = 0; i < entryCount; i++, at += MIRROR_ENTRY_BYTES) {
    entries.hi[i] = view.getUint32(at);
    entries.lo[i] = view.getUint32(at + 4);
    entries.meta[i] = bytes[at + 8]!;
    checkMeta(entries.meta[i]!, i);
    if (i > 0 && comparePrefixes(entries.hi[i - 1]!, entries.lo[i - 1]!, entries.hi[i]!, entries.lo[i]!) >= 0) {
      throw new MirrorFormatError('order', `mirror entry ${i} is not after entry ${i - 1}`);
    }
  }
  entries.count = entryCount;
  const removed = { count: removedCount, hi: new Uint32Array(removedCount), lo: new Uint32Array(removedCount) };
  for (let i = 0; i < removedCount; i++, at += MIRROR_PREFIX_BYTES) {
    removed.hi[i] = view.getUint32(at);
    removed.lo[i] = view.getUint32(at + 4);
    if (i > 0 && comparePrefixes(removed.hi[i - 1]!, removed.lo[i - 1]!, removed.hi[i]!, removed.lo[i]!) >= 0) {
      throw new MirrorFormatError('order', `removed prefix ${i} is not after prefix ${i - 1}`);
    }
  }
  return { kind, entries, removed };
}

function checkMeta(meta: number, i: number): void {
  if (meta >> 4 >= MIRROR_RISK_CATEGORIES.length || (meta & 15) >= MIRROR_BANDS.length) {
    throw new MirrorFormatError('format', `mirror entry ${i} has an unknown risk category or band (${meta})`);
  }
}

/**
 * `base` with a diff applied: its removed prefixes taken out, its entries
 * put in (replacing an entry of the same prefix). A removed prefix the base
 * does not hold, or one the diff also adds, is refused: such a diff was made
 * for another state.
 */
export function applyMirrorDiff(base: MirrorEntries, diff: MirrorFile): MirrorEntries {
  const { entries: add, removed } = diff;
  const out = emptyEntries(base.count + add.count);
  let b = 0;
  let a = 0;
  let r = 0;
  let n = 0;
  while (b < base.count || a < add.count) {
    const takeBase = a >= add.count || (b < base.count && comparePrefixes(base.hi[b]!, base.lo[b]!, add.hi[a]!, add.lo[a]!) < 0);
    const hi = takeBase ? base.hi[b]! : add.hi[a]!;
    const lo = takeBase ? base.lo[b]! : add.lo[a]!;
    // Removed prefixes before this one are ones the base does not hold.
    while (r < removed.count && comparePrefixes(removed.hi[r]!, removed.lo[r]!, hi, lo) < 0) {
      throw new MirrorFormatError('format', 'the diff removes an entry the mirror does not hold');
    }
    const isRemoved = r < removed.count && removed.hi[r] === hi && removed.lo[r] === lo;
    if (takeBase) {
      b++;
      if (isRemoved) {
        r++;
        continue;
      }
      out.hi[n] = hi;
      out.lo[n] = lo;
      out.meta[n++] = base.meta[b - 1]!;
    } else {
      if (isRemoved) throw new MirrorFormatError('format', 'the diff both removes and adds one entry');
      // An entry of the same prefix in the base is replaced.
      if (b < base.count && base.hi[b] === hi && base.lo[b] === lo) b++;
      out.hi[n] = hi;
      out.lo[n] = lo;
      out.meta[n++] = add.meta[a++]!;
    }
  }
  if (r < removed.count) throw new MirrorFormatError('format', 'the diff removes an entry the mirror does not hold');
  out.count = n;
  return out;
}

/** Index of the entry with this prefix, or -1. */
export function findMirrorEntry(entries: MirrorEntries, hi: number, lo: number): number {
  let low = 0;
  let high = entries.count - 1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    const h = entries.hi[mid]!;
    const l = entries.lo[mid]!;
    if (h < hi || (h === hi && l < lo)) low = mid + 1;
    else if (h === hi && l === lo) return mid;
    else high = mid - 1;
  }
  return -1;
}

/** The bytes `sha256` hashes: the set as a full file's entries, in order, in pieces of at most `chunkEntries`. */
export function* setDigestBytes(entries: MirrorEntries, chunkEntries = 65_536): Generator<Uint8Array> {
  for (let from = 0; from < entries.count; from += chunkEntries) {
    const to = Math.min(entries.count, from + chunkEntries);
    const chunk = new Uint8Array((to - from) * MIRROR_ENTRY_BYTES);
    const view = new DataView(chunk.buffer);
    for (let i = from, at = 0; i < to; i++, at += MIRROR_ENTRY_BYTES) {
      view.setUint32(at, entries.hi[i]!);
      view.setUint32(at + 4, entries.lo[i]!);
      chunk[at + 8] = entries.meta[i]!;
    }
    yield chunk;
  }
}

/** A mirror manifest, as GET /v1/mirror/manifest serves it. */
export interface MirrorManifest {
  readonly version: number;
  readonly created_at: string;
  readonly count: number;
  readonly sha256: string;
  readonly full: { readonly url: string; readonly bytes: number };
  readonly diffs: readonly { readonly from: number; readonly url: string; readonly bytes: number }[];
  readonly signature: string;
}

/**
 * The text a manifest's signature is over: JSON with no whitespace of every
 * field but `signature`, keys in this order, `full`'s as url then bytes and
 * each diff's as from, url, bytes.
 */
export function manifestSigningText(m: Omit<MirrorManifest, 'signature'>): string {
  return JSON.stringify({
    version: m.version,
    created_at: m.created_at,
    count: m.count,
    sha256: m.sha256,
    full: { url: m.full.url, bytes: m.full.bytes },
    diffs: m.diffs.map((d) => ({ from: d.from, url: d.url, bytes: d.bytes })),
  });
}

/** A manifest read from JSON, its every field checked; throws MirrorFormatError. */
export function parseManifest(value: unknown): MirrorManifest {
  const m = value as Record<string, unknown> | null;
  const bad = (what: string): never => {
    throw new MirrorFormatError('format', `mirror manifest: ${what}`);
  };
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return bad('not an object');
  if (!isCount(m['version'])) bad('"version" is not a whole number');
  if (typeof m['created_at'] !== 'string' || Number.isNaN(Date.parse(m['created_at']))) bad('"created_at" is not a time');
  if (!isCount(m['count'])) bad('"count" is not a whole number');
  if (typeof m['sha256'] !== 'string' || !/^[0-9a-f]{64}$/.test(m['sha256'])) bad('"sha256" is not 64 hex digits');
  if (typeof m['signature'] !== 'string' || m['signature'].length === 0) bad('"signature" is missing');
  const full = m['full'] as Record<string, unknown> | null;
  if (typeof full !== 'object' || full === null || typeof full['url'] !== 'string' || !isCount(full['bytes'])) bad('"full" is not {url, bytes}');
  if (!Array.isArray(m['diffs'])) bad('"diffs" is not a list');
  for (const d of m['diffs'] as unknown[]) {
    const diff = d as Record<string, unknown> | null;
    if (typeof diff !== 'object' || diff === null || !isCount(diff['from']) || typeof diff['url'] !== 'string' || !isCount(diff['bytes'])) {
      bad('a diff is not {from, url, bytes}');
    }
  }
  return m as unknown as MirrorManifest;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
