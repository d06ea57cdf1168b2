import { Packr, Unpackr } from 'msgpackr';
import { NO_CLUSTER, type SnapshotData } from '../engine/snapshot-data.js';
import type { SnapshotView } from '../engine/snapshot-view.js';
import type { Source, VpaVerdict } from '../engine/verdict.js';
import { SOURCE_CATEGORIES } from '../vpa/categories.js';

/**
 * The detail of a FLAGGED answer that the change log keeps beside its
 * status, risk category, confidence and cluster: what else the answer's
 * JSON holds (change-log.ts). Kept as MessagePack, an array of
 * [cluster_size, first_seen, last_seen, evidence_count, sources], each
 * source [url, category, captured_at, screenshot_available], so that the
 * answer is written again exactly as it was served (answer-json.ts).
 *
 * Whether the detail changed is told without making it: a 64-bit
 * fingerprint of the columns it is made from and of the cluster's number
 * (`detailPrint`), the same for the same answer in a snapshot and in a
 * delta.
 */
export type AnswerDetail = Pick<VpaVerdict, 'cluster_size' | 'first_seen' | 'last_seen' | 'sources' | 'evidence_count'>;

/** The longest detail kept: hundreds of thousands of sources, far past any VPA's; a longer one stops the history (logged). */
export const MAX_DETAIL_BYTES = 64 << 20;

const packr = new Packr({ useRecords: false, moreTypes: false });
const unpackr = new Unpackr({ useRecords: false, moreTypes: false, mapsAsObjects: false });

/** The detail of the flagged VPA `id` of `view`. */
export function detailOf(view: SnapshotView, id: number): AnswerDetail {
  const v = view.flaggedVerdict(id, '');
  return { cluster_size: v.cluster_size, first_seen: v.first_seen, last_seen: v.last_seen, sources: v.sources, evidence_count: v.evidence_count };
}

export function encodeDetail(detail: AnswerDetail): Buffer {
  const sources = detail.sources.map((s) => [s.url, s.category, s.captured_at, s.screenshot_available]);
  const bytes = packr.pack([detail.cluster_size, detail.first_seen, detail.last_seen, detail.evidence_count, sources]);
  if (bytes.length > MAX_DETAIL_BYTES) throw new RangeError(`an answer's detail of ${bytes.length} bytes, past the ${MAX_DETAIL_BYTES} kept`);
  return bytes;
}

/** The detail in `bytes`, or null when they are not one encodeDetail writes. */
export function decodeDetail(bytes: Uint8Array): AnswerDetail | null {
  let value: unknown;
  try {
    value = unpackr.unpack(bytes);
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 5) return null;
  const [size, first, last, count, rawSources] = value as unknown[];
  if (!isCount(size) || !isTime(first) || !isTime(last) || !isCount(count) || !Array.isArray(rawSources) || rawSources.length === 0) return null;
  const sources: Source[] = [];
  for (const raw of rawSources as unknown[]) {
    if (!Array.isArray(raw) || raw.length !== 4) return null;
    const [url, category, captured, screenshot] = raw as unknown[];
    if (typeof url !== 'string' || !(SOURCE_CATEGORIES as readonly unknown[]).includes(category) || !isTime(captured) || typeof screenshot !== 'boolean') return null;
    sources.push({ url, category: category as Source['category'], captured_at: captured, screenshot_available: screenshot });
  }
  return { cluster_size: size, first_seen: first, last_seen: last, sources, evidence_count: count };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** An RFC 3339 instant as formatIso writes it. */
function isTime(value: unknown): value is string {
  return typeof value === 'string' && /^[+-]?\d{4,6}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/.test(value);
}

const wordsOfFloat = new Float64Array(1);
const wordsOf = new Uint32Array(wordsOfFloat.buffer);

/** FNV-1a steps over 32-bit words, two of them with different bases: a 64-bit fingerprint. */
class Print {
  a = 0x811c9dc5;
  b = 0x050c5d1f;

  word(value: number): void {
    this.a = Math.imul(this.a ^ value, 0x01000193);
    this.b = Math.imul(this.b ^ value, 0x01000193) ^ (this.b >>> 15);
  }

  float(value: number): void {
    wordsOfFloat[0] = value;
    this.word(wordsOf[0]!);
    this.word(wordsOf[1]!);
  }
}

const print = new Print();

/** Each url's 64-bit fingerprint of its text, made on first use: a url is read once a snapshot, not once a VPA it names. */
interface UrlPrints {
  readonly prints: Uint32Array;
  readonly made: Uint8Array;
}

const urlPrints = new WeakMap<SnapshotData, UrlPrints>();

function urlPrintsOf(data: SnapshotData): UrlPrints {
  let found = urlPrints.get(data);
  if (found === undefined) {
    found = { prints: new Uint32Array(2 * data.meta.urlCount), made: new Uint8Array(data.meta.urlCount) };
    urlPrints.set(data, found);
  }
  return found;
}

const urlPrint = new Print();

function makeUrlPrint(data: SnapshotData, urls: UrlPrints, url: number): void {
  urlPrint.a = 0x811c9dc5;
  urlPrint.b = 0x050c5d1f;
  const bytes = data.urlBytes;
  for (let i = data.urlOffsets[url]!, to = data.urlOffsets[url + 1]!; i < to; i++) urlPrint.word(bytes[i]!);
  urls.prints[2 * url] = urlPrint.a >>> 0;
  urls.prints[2 * url + 1] = urlPrint.b >>> 0;
  urls.made[url] = 1;
}

/**
 * The fingerprint of the detail of the flagged VPA `id` of `data`, which
 * `view` answers (a snapshot, or a delta's overlay with its snapshot's
 * clusters): in `out`, [a, b], neither both 0. Read off the columns, not
 * the answer's text, since a pass over every VPA of a snapshot makes one
 * for each.
 */
export function detailPrint(view: SnapshotView, data: SnapshotData, id: number, out: Uint32Array): void {
  print.a = 0x811c9dc5;
  print.b = 0x050c5d1f;
  print.word(data.evidenceCount[id]!);
  print.float(data.firstSeen[id]!);
  const cluster = data.vpaCluster[id]!;
  print.word(cluster === NO_CLUSTER ? 0 : data.clusterNumber[cluster]!);
  print.word(cluster === NO_CLUSTER ? 0 : view.clusterSize(cluster));
  const urls = urlPrintsOf(data);
  for (let s = data.sourceOffsets[id]!, end = data.sourceOffsets[id + 1]!; s < end; s++) {
    const url = data.sourceUrl[s]!;
    if (urls.made[url] === 0) makeUrlPrint(data, urls, url);
    print.word(urls.prints[2 * url]!);
    print.word(urls.prints[2 * url + 1]!);
    print.word(0x100 + data.urlCategory[url]!);
    print.float(data.sourceCapturedAt[s]!);
    print.word(data.sourceFlags[s]!);
  }
  out[0] = print.a >>> 0;
  out[1] = print.b >>> 0;
  if (out[0] === 0 && out[1] === 0) out[1] = 1;
}
