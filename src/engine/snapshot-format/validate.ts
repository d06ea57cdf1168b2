/**
 * Checks shared by both directions: what is encoded and what is decoded must
 * be a snapshot every lookup can answer from. Constant-time checks (classes,
 * lengths against the meta counts) come before linear ones (offsets, ranges).
 */
import { RISK_CATEGORIES, RISK_RANK, SOURCE_CATEGORIES, dominant } from '../../vpa/categories.js';
import {
  ARRAY_FIELDS,
  COLUMNS,
  CONFIDENCE_SCALE,
  MIXED_RISK_STRIDE,
  NO_CLUSTER,
  columnsCounting,
  type ArrayField,
  type SnapshotData,
  type SnapshotMeta,
} from '../snapshot-data.js';
import { portableProblem } from '../roaring-portable.js';
import { checkIndexArrays, ENTRY_WORDS } from '../vpa-index.js';
import { checkUrlSlots, isUrlSlotCapacity, URL_SLOTS_MIN_CAPACITY } from '../url-lookup.js';
import { formatError } from './format.js';

export function readMeta(value: unknown): SnapshotMeta {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) formatError('snapshot meta is not a map');
  const raw = value as Record<string, unknown>;
  const evidenceFiles = raw.evidenceFiles;
  const meta = {
    id: raw.id,
    createdAt: raw.createdAt,
    dataAsOf: raw.dataAsOf,
    scoredAt: raw.scoredAt,
    evidenceMaxAgeMs: raw.evidenceMaxAgeMs ?? 0,
    correctionSequence: raw.correctionSequence ?? 0,
    evidenceFiles: Array.isArray(evidenceFiles) ? [...(evidenceFiles as unknown[])] : evidenceFiles,
    urlMemberCap: raw.urlMemberCap,
    vpaCount: raw.vpaCount,
    urlCount: raw.urlCount,
    clusterCount: raw.clusterCount,
    sourceCount: raw.sourceCount,
    evidenceCount: raw.evidenceCount,
    skippedLines: raw.skippedLines,
  };
  validateMeta(meta, 'snapshot is malformed');
  return meta as SnapshotMeta;
}

const TIME_FIELDS = ['createdAt', 'dataAsOf', 'scoredAt'] as const;
const COUNT_FIELDS = ['vpaCount', 'urlCount', 'clusterCount', 'sourceCount', 'evidenceCount', 'skippedLines', 'evidenceMaxAgeMs', 'correctionSequence'] as const;

const SNAPSHOT_ID_TEXT = /^[\x21-\x7e]{1,64}$/;

export function validateMeta(meta: { readonly [K in keyof SnapshotMeta]: unknown }, context: string): void {
  const bad = (what: string): never => formatError(`${context}: meta.${what}`);
  // The id is sent as the X-Data-Version header: nothing but visible ASCII may reach a header line.
  if (typeof meta.id !== 'string' || !SNAPSHOT_ID_TEXT.test(meta.id)) bad('id is not 1 to 64 visible ASCII characters');
  for (const name of TIME_FIELDS) {
    const v = meta[name];
    // In Date's range (MAX_TIME_VALUE), or no answer could write it as ISO text: the snapshot would load and fail every answer.
    if (typeof v !== 'number' || !(v >= -MAX_TIME_VALUE && v <= MAX_TIME_VALUE)) bad(`${name} is not a time in Date's range`);
  }
  const files = meta.evidenceFiles;
  if (!Array.isArray(files) || !files.every((f) => typeof f === 'string')) bad('evidenceFiles is not a list of strings');
  const cap = meta.urlMemberCap;
  if (typeof cap !== 'number' || Number.isNaN(cap) || cap < 0) bad('urlMemberCap is not a non-negative number');
  for (const name of COUNT_FIELDS) {
    const v = meta[name];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) bad(`${name} is not a non-negative integer`);
  }
  // Offsets arrays hold count + 1 uint32 entries.
  for (const name of ['vpaCount', 'urlCount', 'clusterCount', 'sourceCount'] as const) {
    if ((meta[name] as number) >= 0xffffffff) bad(`${name} is too large for 32-bit ids`);
  }
}

export function validateArrayClasses(data: SnapshotData): void {
  for (const field of ARRAY_FIELDS) {
    const Type = COLUMNS[field].type;
    const array: unknown = data[field];
    if (!(array instanceof Type)) {
      const actual = typeof array === 'object' && array !== null ? array.constructor.name : typeof array;
      formatError(`cannot encode snapshot: ${field} is ${actual}, expected ${Type.name}`);
    }
  }
}

// The columns of each length the meta's counts set (snapshot-data.ts, COLUMNS), found once.
const PER_VPA = columnsCounting('vpas');
const PER_VPA_OFFSETS = columnsCounting('vpas + 1');
const PER_SOURCE = columnsCounting('sources');
const PER_URL = columnsCounting('urls');
const PER_URL_OFFSETS = columnsCounting('urls + 1');
const PER_CLUSTER = columnsCounting('clusters');
const PER_CLUSTER_OFFSETS = columnsCounting('clusters + 1');

/** Array lengths against the meta counts: constant time. */
export function validateLengths(meta: SnapshotMeta, lengthOf: (field: ArrayField) => number, context: string): void {
  const { vpaCount, sourceCount, urlCount, clusterCount } = meta;
  const expect = (field: ArrayField, length: number, why: string): void => {
    const actual = lengthOf(field);
    if (actual !== length) formatError(`${context}: ${field} has ${actual} entries, expected ${length} (${why})`);
  };
  for (const field of PER_VPA) expect(field, vpaCount, 'meta.vpaCount');
  const mixed = lengthOf('mixedRiskVpas');
  if (mixed > vpaCount) formatError(`${context}: mixedRiskVpas has ${mixed} entries, more than meta.vpaCount (${vpaCount})`);
  expect('mixedRiskCounts', mixed * MIXED_RISK_STRIDE, `${MIXED_RISK_STRIDE} for each of the ${mixed} mixedRiskVpas`);
  for (const field of PER_VPA_OFFSETS) expect(field, vpaCount + 1, 'meta.vpaCount + 1');
  for (const field of PER_SOURCE) expect(field, sourceCount, 'meta.sourceCount');
  for (const field of PER_URL) expect(field, urlCount, 'meta.urlCount');
  for (const field of PER_URL_OFFSETS) expect(field, urlCount + 1, 'meta.urlCount + 1');
  const urlSlots = lengthOf('urlSlots');
  if (!isUrlSlotCapacity(urlSlots, urlCount)) {
    formatError(
      `${context}: urlSlots has ${urlSlots} slots, expected a power of two of at least ${URL_SLOTS_MIN_CAPACITY} and twice meta.urlCount (${urlCount})`,
    );
  }
  for (const field of PER_CLUSTER) expect(field, clusterCount, 'meta.clusterCount');
  for (const field of PER_CLUSTER_OFFSETS) expect(field, clusterCount + 1, 'meta.clusterCount + 1');

  const capacity = lengthOf('slotTags');
  // At least one empty slot, or a probe for an absent key would never end.
  if (capacity <= vpaCount) formatError(`${context}: slotTags has ${capacity} slots, expected more than meta.vpaCount (${vpaCount})`);
  expect('slotEntries', capacity * ENTRY_WORDS, `${ENTRY_WORDS} words for each of the ${capacity} slots`);
}

/**
 * Everything lookups index by: lengths, offsets ascending from 0 to the end
 * of their blob, ids and codes in range, one slot per VPA holding its key,
 * well formed (checkIndexArrays, 0.6–0.8 s at 10M VPAs). Linear in the
 * snapshot size: each check is a tight scan over one array of one class
 * (monomorphic, so it stays fast even in a freshly started thread), and only
 * a failure pays for finding and describing the bad entry.
 */
export function validateStructure(data: SnapshotData, context: string): void {
  const { meta } = data;
  validateLengths(meta, (field) => data[field].length, context);
  const bad = (what: string): never => formatError(`${context}: ${what}`);

  checkOffsets(data.sourceOffsets, meta.sourceCount, 'sourceOffsets', 'meta.sourceCount', bad);
  // A VPA is flagged on evidence: its answer names at least one source, the newest being its last_seen.
  const sourceless = firstNotAscending(data.sourceOffsets, true);
  if (sourceless >= 0) bad(`VPA ${sourceless - 1} has no sources (sourceOffsets[${sourceless}] is ${data.sourceOffsets[sourceless]})`);
  checkOffsets(data.urlOffsets, data.urlBytes.length, 'urlOffsets', 'urlBytes', bad);
  checkOffsets(data.urlMembersOffsets, data.urlMembersBlob.length, 'urlMembersOffsets', 'urlMembersBlob', bad);
  checkOffsets(data.clusterMembersOffsets, data.clusterMembersBlob.length, 'clusterMembersOffsets', 'clusterMembersBlob', bad);

  const below = (values: ArrayLike<number>, max: number, limit: number, name: string, limitName: string): void => {
    if (values.length === 0 || max < limit) return;
    const i = Array.prototype.findIndex.call(values, (v: number) => v >= limit);
    bad(`${name}[${i}] is ${values[i]}, not below ${limitName} (${limit})`);
  };
  const risks = RISK_CATEGORIES.length;
  const sources = SOURCE_CATEGORIES.length;
  below(data.sourceUrl, max32(data.sourceUrl), meta.urlCount, 'sourceUrl', 'meta.urlCount');
  below(data.riskCategory, max8(data.riskCategory), risks, 'riskCategory', 'the number of risk categories');
  below(data.clusterRiskCategory, max8(data.clusterRiskCategory), risks, 'clusterRiskCategory', 'the number of risk categories');
  below(data.urlCategory, max8(data.urlCategory), sources, 'urlCategory', 'the number of source categories');
  below(data.confidence, max16(data.confidence), CONFIDENCE_SCALE + 1, 'confidence', 'CONFIDENCE_SCALE + 1');
  below(data.clusterConfidence, max16(data.clusterConfidence), CONFIDENCE_SCALE + 1, 'clusterConfidence', 'CONFIDENCE_SCALE + 1');

  for (const field of ['firstSeen', 'sourceCapturedAt', 'clusterCreatedAt', 'clusterLastUpdated'] as const) {
    const i = firstNonTimestamp(data[field]);
    if (i >= 0) bad(`${field}[${i}] is ${data[field][i]}, not a whole number of ms within the dates an answer can name`);
  }

  const clusterCount = meta.clusterCount;
  const stray = firstClusterOutOfRange(data.vpaCluster, clusterCount);
  if (stray >= 0) bad(`vpaCluster[${stray}] is ${data.vpaCluster[stray]}, but there are ${clusterCount} clusters`);

  const unordered = firstNotAscending(data.clusterNumber, true);
  if (unordered >= 0) bad(`clusterNumber is not strictly ascending at ${unordered}`);

  // Clusters' member bitmaps, which every answer naming a cluster reads (its size) and a cluster answer decodes:
  // well formed, of VPA ids (portableProblem). The urls' are not walked here: one a url is 1-2 s at 10M.
  const members = data.clusterMembersOffsets;
  for (let c = 0; c + 1 < members.length; c++) {
    const problem = portableProblem(data.clusterMembersBlob.subarray(members[c]!, members[c + 1]!), meta.vpaCount);
    if (problem !== null) bad(`the members of cluster ${c} are no bitmap of VPA ids: ${problem}`);
  }

  const slotProblem = checkIndexArrays(data);
  if (slotProblem !== undefined) bad(slotProblem);

  validateMergeColumns(data, bad);
  const urlProblem = checkUrlSlots(data);
  if (urlProblem !== undefined) bad(urlProblem);
}

/**
 * What merging new evidence into a VPA's answer reads: each VPA's Σ weight
 * units (a whole number between 2^30 and 2^32 per evidence item, since every
 * item weighs between a quarter and one), its source categories, and the
 * risk counts of VPAs with several risk categories, which must add up to
 * their evidence count and agree with their risk category.
 */
function validateMergeColumns(data: SnapshotData, bad: (what: string) => never): void {
  const weight = firstBadWeight(data.evidenceWeight, data.evidenceCount);
  if (weight >= 0) {
    bad(`evidenceWeight[${weight}] is ${data.evidenceWeight[weight]}, not a whole number of units for ${data.evidenceCount[weight]} evidence items`);
  }
  const mask = firstBadMask(data.sourceCategoryMask, 1 << SOURCE_CATEGORIES.length);
  if (mask >= 0) bad(`sourceCategoryMask[${mask}] is ${data.sourceCategoryMask[mask]}, not a non-empty set of source categories`);

  const vpas = data.mixedRiskVpas;
  const unordered = firstNotAscending(vpas, true);
  if (unordered >= 0) bad(`mixedRiskVpas is not strictly ascending at ${unordered}`);
  const vpaCount = data.meta.vpaCount;
  if (vpas.length > 0 && vpas[vpas.length - 1]! >= vpaCount) {
    bad(`mixedRiskVpas[${vpas.length - 1}] is ${vpas[vpas.length - 1]}, not below meta.vpaCount (${vpaCount})`);
  }
  const counts = data.mixedRiskCounts;
  for (let k = 0; k < vpas.length; k++) {
    const id = vpas[k]!;
    const at = k * MIXED_RISK_STRIDE;
    let sum = 0;
    let nonZero = 0;
    for (let c = 0; c < MIXED_RISK_STRIDE; c++) {
      const count = counts[at + c]!;
      sum += count;
      if (count !== 0) nonZero++;
    }
    if (sum !== data.evidenceCount[id]) bad(`mixedRiskCounts of VPA ${id} add up to ${sum}, but its evidenceCount is ${data.evidenceCount[id]}`);
    if (nonZero < 2) bad(`mixedRiskCounts of VPA ${id} name fewer than two risk categories, but it is listed as having several`);
    const best = dominant(counts, at, MIXED_RISK_STRIDE, RISK_RANK);
    if (best !== data.riskCategory[id]) bad(`mixedRiskCounts of VPA ${id} make ${best} its risk category, but riskCategory is ${data.riskCategory[id]}`);
  }
}

/** Weight units of one evidence item: a quarter to all of 2^32 (builder/scoring.ts, recencyWeightUnits). */
const MIN_ITEM_UNITS = 2 ** 30;
const MAX_ITEM_UNITS = 2 ** 32;
/**
 * Slack on those bounds for a VPA whose sum passed 2^53 (over 2^21 items),
 * where a double no longer adds every integer exactly.
 */
const SUM_SLACK = 1e-6;

/** Index of the first weight that is not a whole, positive number within its items' bounds; -1 when there is none. */
function firstBadWeight(weights: Float64Array, counts: Uint32Array): number {
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i]!;
    const n = counts[i]!;
    // NaN fails every comparison; an infinity is caught by the upper bound.
    if (!(w > 0) || Math.floor(w) !== w || !(w >= n * MIN_ITEM_UNITS * (1 - SUM_SLACK)) || !(w <= n * MAX_ITEM_UNITS * (1 + SUM_SLACK))) {
      return i;
    }
  }
  return -1;
}

/** Index of the first mask that is 0 or has a bit past `limit`; -1 when there is none. */
function firstBadMask(masks: Uint8Array, limit: number): number {
  for (let i = 0; i < masks.length; i++) {
    const m = masks[i]!;
    if (m === 0 || m >= limit) return i;
  }
  return -1;
}

function checkOffsets(
  offsets: Uint32Array,
  end: number,
  name: string,
  endName: string,
  bad: (what: string) => never,
): void {
  if (offsets[0] !== 0) bad(`${name}[0] is ${offsets[0]}, expected 0`);
  const i = firstNotAscending(offsets, false);
  if (i >= 0) bad(`${name} decreases at ${i} (${offsets[i - 1]} then ${offsets[i]})`);
  const last = offsets[offsets.length - 1]!;
  if (last !== end) bad(`${name} ends at ${last}, but ${endName} is ${end}`);
}

/** Index of the first entry below (or, when strict, equal to) its predecessor; -1 when there is none. */
function firstNotAscending(values: Uint32Array, strict: boolean): number {
  const n = values.length;
  let previous = n > 0 ? values[0]! : 0;
  if (strict) {
    for (let i = 1; i < n; i++) {
      const v = values[i]!;
      if (v <= previous) return i;
      previous = v;
    }
  } else {
    for (let i = 1; i < n; i++) {
      const v = values[i]!;
      if (v < previous) return i;
      previous = v;
    }
  }
  return -1;
}

/** Date's range, ±10^8 days around 1970 (ECMA-262 time values): past it no ISO text exists for an answer. */
const MAX_TIME_VALUE = 8.64e15;

/** Index of the first value that is not a whole number of ms in Date's range (NaN included); -1 when there is none. */
function firstNonTimestamp(values: Float64Array): number {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!(v >= -MAX_TIME_VALUE && v <= MAX_TIME_VALUE) || Math.floor(v) !== v) return i;
  }
  return -1;
}

function firstClusterOutOfRange(vpaCluster: Uint32Array, clusterCount: number): number {
  for (let i = 0; i < vpaCluster.length; i++) {
    const c = vpaCluster[i]!;
    if (c >= clusterCount && c !== NO_CLUSTER) return i;
  }
  return -1;
}

function max8(values: Uint8Array): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > max) max = values[i]!;
  return max;
}

function max16(values: Uint16Array): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > max) max = values[i]!;
  return max;
}

function max32(values: Uint32Array): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > max) max = values[i]!;
  return max;
}
