import { SOURCE_CATEGORIES, SOURCE_RANK, RISK_CATEGORIES, RISK_RANK, dominant } from '../vpa/categories.js';
import {
  NO_CLUSTER,
  SOURCE_FLAG_SCREENSHOT,
  type SnapshotData,
  type SnapshotMeta,
} from '../engine/snapshot-data.js';
import { buildIndexArrays, renumberIndex, type IndexArrays } from '../engine/vpa-index.js';
import { rangeSize, sortedIdsSize, writeRange, writeSortedIds } from '../engine/roaring-portable.js';
import { findClusters, type Components, type UrlMembership } from './clustering.js';
import { assignClusterNumbers } from './cluster-ids/numbering.js';
import type { ClusterIdState } from './cluster-ids/state.js';
import { categoriesIn, clusterConfidence, vpaConfidence, WEIGHT_UNITS } from './scoring.js';
import type { AggregateResult } from './phases.js';
import { ByteInterner, compareByteRanges } from './byte-interner.js';
import { freshSharedArrays } from '../engine/shared-arrays.js';
import { buildUrlSlots } from '../engine/url-lookup.js';
import { freshArrays, type ArrayAllocator } from '../common/scratch-arrays.js';
import { snapshotData, type SnapshotParts } from './snapshot-parts.js';

const SOURCE_COUNT = SOURCE_CATEGORIES.length;
const RISK_COUNT = RISK_CATEGORIES.length;

export interface AssembleOptions {
  readonly urlMemberCap: number;
  readonly scoredAt: number;
  readonly previousClusterIds: ClusterIdState;
  /**
   * Where the working arrays (url membership, the union-find, the
   * orderings) come from; none of the snapshot's arrays do, nor the keys
   * and the concatenated rows' values, which go before the task ends
   * (rowsCopied).
   */
  readonly scratch?: ArrayAllocator;
  /**
   * Where the snapshot's own arrays come from: shared memory, one buffer
   * per array (freshSharedArrays, the default, or ReusedSharedArrays over
   * a replaced snapshot's buffers). The index's too, when it is built here.
   */
  readonly snapshotArrays?: ArrayAllocator;
  /** SnapshotMeta.evidenceMaxAgeMs: what the partials were aggregated with (default 0, evidence never expires). */
  readonly evidenceMaxAgeMs?: number;
  /** SnapshotMeta.correctionSequence: the corrections the partials were aggregated under (default 0). */
  readonly correctionSequence?: number;
  /**
   * Called as each partial is copied into the joined rows and let go: the
   * assembly empties the array of partials it is given, one at a time, so
   * that what collects them then gives each one's memory back before the
   * next is copied, and none is in memory beside the snapshot's arrays.
   */
  readonly partialCopied?: () => void;
  /**
   * Called once the VPA columns are laid out and the concatenated rows
   * they were copied from let go, and the keys too (each in memory of its
   * own, not `scratch`): what collects them then gives their memory back
   * before the url and cluster columns take more.
   */
  readonly rowsCopied?: () => void;
  readonly meta: Omit<
    SnapshotMeta,
    'vpaCount' | 'urlCount' | 'clusterCount' | 'sourceCount' | 'evidenceCount' | 'urlMemberCap' | 'scoredAt' | 'evidenceMaxAgeMs' | 'correctionSequence'
  >;
}

export interface AssembleResult {
  readonly data: SnapshotData;
  readonly clusterIds: ClusterIdState;
}

/**
 * Final build phase: join the per-partition VPA rows into one snapshot.
 * Interns urls, forms clusters, assigns stable cluster numbers, orders VPAs
 * so each cluster is a contiguous id range, scores, and lays everything out
 * in the snapshot's typed arrays. Single-threaded by nature (clusters span
 * partitions); runs on a pool thread so a serving thread never waits on it.
 *
 * Every array of the snapshot is allocated in shared memory (each in a
 * SharedArrayBuffer of its own), so a server serves it as assembled:
 * copying it there took a second snapshot's worth of fresh memory and
 * seconds (bench/MEASUREMENTS.md, 'Assembling the snapshot in shared memory').
 * `partials` is emptied as they are copied (AssembleOptions.partialCopied).
 */
export function assembleSnapshot(partials: AggregateResult[], options: AssembleOptions): AssembleResult {
  const t = concatenate(partials, options);
  // No local holds the keys: they go once planned (planSnapshot).
  const index = buildIndexArrays(keysOf(t).bytes, keysOf(t).offsets, t.vpaCount, { arrays: options.snapshotArrays ?? freshSharedArrays });
  const plan = planSnapshot(t, options);
  return finishSnapshot(plan, snapshotColumns(plan, options), renumberIndex(index, plan.order.tempToFinal), options);
}

/**
 * assembleSnapshot with the index built by `buildIndex` on another thread
 * meanwhile. It is handed the keys as soon as they are gathered, in shared
 * memory (to read, not to change), and builds while this thread forms the
 * clusters, orders the VPAs and lays out the other columns; the index is
 * then renumbered to the final order, one pass over its slots: quicker
 * than building the index in line, or beside the columns once the final
 * order is known (bench/MEASUREMENTS.md, 'Assembling the snapshot in shared
 * memory').
 */
export async function assembleSnapshotIndexedElsewhere(
  partials: AggregateResult[],
  options: AssembleOptions,
  buildIndex: (keyBytes: Uint8Array, keyOffsets: Uint32Array, count: number) => Promise<IndexArrays>,
): Promise<AssembleResult> {
  const t = concatenate(partials, options);
  const index = buildIndex(keysOf(t).bytes, keysOf(t).offsets, t.vpaCount);
  let plan: SnapshotPlan;
  let columns: SnapshotColumns;
  try {
    plan = planSnapshot(t, options);
    columns = snapshotColumns(plan, options);
  } catch (error) {
    // A failed build gives its error once the other thread is done with the keys, not while it reads them.
    await index.catch(() => {});
    throw error;
  }
  return finishSnapshot(plan, columns, renumberIndex(await index, plan.order.tempToFinal), options);
}

/** What the columns are laid out from: VPAs with their clusters and their final order. */
interface SnapshotPlan {
  readonly t: Concatenated;
  readonly membership: UrlMembership;
  readonly components: Components;
  readonly assigned: ReturnType<typeof assignClusterNumbers>;
  readonly order: FinalOrder;
  readonly scratch: ArrayAllocator;
  readonly snapshotArrays: ArrayAllocator;
}

function planSnapshot(t: Concatenated, options: AssembleOptions): SnapshotPlan {
  // Each pass is its own function: V8 optimises a long function with many
  // loops one loop at a time (on-stack replacement) and deoptimises at the
  // next, which in one function holding every pass cost more than the work.
  const scratch = options.scratch ?? freshArrays;
  const membership = membersByUrl(t, scratch);
  const components = findClusters(t.vpaCount, membership, options.urlMemberCap, scratch);
  const keys = keysOf(t);
  const keyOf = (v: number) => keys.text.toString('latin1', keys.offsets[v]!, keys.offsets[v + 1]!);
  const assigned = assignClusterNumbers(components, keyOf, options.previousClusterIds);
  const order = finalOrder(t.vpaCount, keys, components, assigned.numbers, scratch);
  // Nothing reads the keys after this (an index built elsewhere holds its own reference): they go with the rows.
  t.keys = undefined;
  return { t, membership, components, assigned, order, scratch, snapshotArrays: options.snapshotArrays ?? freshSharedArrays };
}

interface SnapshotColumns {
  readonly vpas: VpaColumns;
  readonly mixedRisks: ReturnType<typeof mixedRiskColumns>;
  readonly urls: ReturnType<typeof urlColumns>;
  readonly clusters: ReturnType<typeof clusterColumns>;
}

function snapshotColumns(plan: SnapshotPlan, options: AssembleOptions): SnapshotColumns {
  const { t, order, membership, assigned, scratch, snapshotArrays } = plan;
  // Before the rows go: the url counts, each url's category made, go with them.
  const urlCategory = urlCategories(t, snapshotArrays);
  const vpas = vpaColumnsLettingGoOfRows(plan);
  options.rowsCopied?.();
  const mixedRisks = mixedRiskColumns(t, order.tempToFinal, scratch, snapshotArrays);
  const urls = urlColumns(t, membership, order.tempToFinal, urlCategory, snapshotArrays);
  const clusters = clusterColumns(order, vpas, assigned.numbers, t.urlCount, scratch, snapshotArrays);
  return { vpas, mixedRisks, urls, clusters };
}

function finishSnapshot(plan: SnapshotPlan, columns: SnapshotColumns, index: IndexArrays, options: AssembleOptions): AssembleResult {
  const { t, order, assigned } = plan;
  const { vpas, mixedRisks, urls, clusters } = columns;
  const n = t.vpaCount;
  const meta: SnapshotMeta = {
    ...options.meta,
    scoredAt: options.scoredAt,
    evidenceMaxAgeMs: options.evidenceMaxAgeMs ?? 0,
    correctionSequence: options.correctionSequence ?? 0,
    urlMemberCap: options.urlMemberCap,
    vpaCount: n,
    urlCount: t.urlCount,
    clusterCount: order.clusterCount,
    sourceCount: t.sourceCount,
    evidenceCount: vpas.totalEvidence,
  };
  const data = snapshotData({ meta, index, vpas, mixedRisks, sources: vpas, urls, clusters });
  return { data, clusterIds: assigned.state };
}

/** url → VPAs (temporary ids), by counting sort on url. */
function membersByUrl(t: Concatenated, scratch: ArrayAllocator): UrlMembership {
  const urlCount = t.urlCount;
  const { sourceUrl, sourceOffsets } = rowsOf(t);
  const offsets = scratch.zeroed(Uint32Array, urlCount + 1);
  for (let s = 0; s < t.sourceCount; s++) offsets[sourceUrl[s]! + 1]!++;
  for (let u = 0; u < urlCount; u++) offsets[u + 1]! += offsets[u]!;
  const vpas = scratch.zeroed(Uint32Array, t.sourceCount);
  const fill = scratch.zeroed(Uint32Array, urlCount);
  fill.set(offsets.subarray(0, urlCount));
  for (let v = 0; v < t.vpaCount; v++) {
    for (let s = sourceOffsets[v]!; s < sourceOffsets[v + 1]!; s++) vpas[fill[sourceUrl[s]!]!++] = v;
  }
  return { offsets, vpas };
}

interface FinalOrder {
  readonly clusterCount: number;
  /** Component of each cluster ordinal; ordinals ascend with the public number, so lookups by number are a binary search. */
  readonly componentsByNumber: Uint32Array;
  readonly ordinalOfComponent: Uint32Array;
  /** Cluster k's members are final ids [clusterStart[k], clusterStart[k+1]). */
  readonly clusterStart: Uint32Array;
  readonly finalToTemp: Uint32Array;
  readonly tempToFinal: Uint32Array;
}

/** Final VPA order: clustered VPAs by (cluster ordinal, key), then the rest in partition order. */
function finalOrder(n: number, keys: Keys, components: Components, numbers: Uint32Array, scratch: ArrayAllocator): FinalOrder {
  const of = components.of;
  const clusterCount = components.count;
  const componentsByNumber = scratch.zeroed(Uint32Array, clusterCount);
  for (let c = 0; c < clusterCount; c++) componentsByNumber[c] = c;
  componentsByNumber.sort((a, b) => numbers[a]! - numbers[b]!);
  const ordinalOfComponent = scratch.zeroed(Uint32Array, clusterCount);
  for (let k = 0; k < clusterCount; k++) ordinalOfComponent[componentsByNumber[k]!] = k;

  const clusterStart = scratch.zeroed(Uint32Array, clusterCount + 1);
  for (let v = 0; v < n; v++) {
    const c = of[v]!;
    if (c >= 0) clusterStart[ordinalOfComponent[c]! + 1]!++;
  }
  for (let k = 0; k < clusterCount; k++) clusterStart[k + 1]! += clusterStart[k]!;
  const finalToTemp = scratch.zeroed(Uint32Array, n);
  const next = scratch.zeroed(Uint32Array, clusterCount);
  next.set(clusterStart.subarray(0, clusterCount));
  let loose = clusterStart[clusterCount]!;
  for (let v = 0; v < n; v++) {
    const c = of[v]!;
    if (c >= 0) finalToTemp[next[ordinalOfComponent[c]!]!++] = v;
    else finalToTemp[loose++] = v;
  }
  const keyBytes = keys.bytes;
  const keyOffsets = keys.offsets;
  const byKey = (a: number, b: number) =>
    compareByteRanges(keyBytes, keyOffsets[a]!, keyOffsets[a + 1]!, keyBytes, keyOffsets[b]!, keyOffsets[b + 1]!);
  for (let k = 0; k < clusterCount; k++) {
    if (clusterStart[k + 1]! - clusterStart[k]! > 1) finalToTemp.subarray(clusterStart[k]!, clusterStart[k + 1]!).sort(byKey);
  }
  const tempToFinal = scratch.zeroed(Uint32Array, n);
  for (let f = 0; f < n; f++) tempToFinal[finalToTemp[f]!] = f;
  return { clusterCount, componentsByNumber, ordinalOfComponent, clusterStart, finalToTemp, tempToFinal };
}

type VpaColumns = SnapshotParts['vpas'] & SnapshotParts['sources'] & { readonly totalEvidence: number };

/** vpaColumns, and the rows let go: in a frame of its own, so that nothing of the caller's holds them once it returns. */
function vpaColumnsLettingGoOfRows(plan: SnapshotPlan): VpaColumns {
  const { t, order, components, membership, snapshotArrays } = plan;
  const vpas = vpaColumns(rowsOf(t), order, components.of, membership.offsets, snapshotArrays);
  t.rows = undefined;
  return vpas;
}

/** Per-VPA fields and sources in final order, with each VPA's confidence. */
function vpaColumns(t: RowValues, order: FinalOrder, componentOf: Int32Array, urlMemberOffsets: Uint32Array, snapshotArrays: ArrayAllocator): VpaColumns {
  const n = t.vpaCount;
  const { finalToTemp, ordinalOfComponent } = order;
  const firstSeen = snapshotArrays.zeroed(Float64Array, n);
  const riskCategory = snapshotArrays.zeroed(Uint8Array, n);
  const evidenceCount = snapshotArrays.zeroed(Uint32Array, n);
  const vpaCluster = snapshotArrays.zeroed(Uint32Array, n).fill(NO_CLUSTER);
  const evidenceWeight = snapshotArrays.zeroed(Float64Array, n);
  const sourceCategoryMask = snapshotArrays.zeroed(Uint8Array, n);
  let totalEvidence = 0;
  for (let f = 0; f < n; f++) {
    const v = finalToTemp[f]!;
    firstSeen[f] = t.firstSeen[v]!;
    riskCategory[f] = t.riskCategory[v]!;
    evidenceCount[f] = t.evidenceCount[v]!;
    totalEvidence += t.evidenceCount[v]!;
    evidenceWeight[f] = t.evidenceWeight[v]!;
    sourceCategoryMask[f] = t.categoryMask[v]!;
    const c = componentOf[v]!;
    if (c >= 0) vpaCluster[f] = ordinalOfComponent[c]!;
  }
  const sources = vpaSources(t, finalToTemp, urlMemberOffsets, snapshotArrays);
  return { firstSeen, riskCategory, evidenceCount, vpaCluster, evidenceWeight, sourceCategoryMask, totalEvidence, ...sources };
}

function vpaSources(t: RowValues, finalToTemp: Uint32Array, urlMemberOffsets: Uint32Array, snapshotArrays: ArrayAllocator) {
  const n = t.vpaCount;
  const fromOffsets = t.sourceOffsets;
  const fromUrl = t.sourceUrl;
  const fromCaptured = t.sourceCapturedAt;
  const fromScreenshot = t.sourceScreenshot;
  const confidence = snapshotArrays.zeroed(Uint16Array, n);
  const sourceOffsets = snapshotArrays.zeroed(Uint32Array, n + 1);
  const sourceUrl = snapshotArrays.zeroed(Uint32Array, t.sourceCount);
  const sourceCapturedAt = snapshotArrays.zeroed(Float64Array, t.sourceCount);
  const sourceFlags = snapshotArrays.zeroed(Uint8Array, t.sourceCount);
  let out = 0;
  for (let f = 0; f < n; f++) {
    const v = finalToTemp[f]!;
    let peers = 0;
    const from = fromOffsets[v]!;
    const to = fromOffsets[v + 1]!;
    for (let s = from; s < to; s++, out++) {
      const u = fromUrl[s]!;
      sourceUrl[out] = u;
      sourceCapturedAt[out] = fromCaptured[s]!;
      sourceFlags[out] = fromScreenshot[s]! === 1 ? SOURCE_FLAG_SCREENSHOT : 0;
      peers = Math.max(peers, urlMemberOffsets[u + 1]! - urlMemberOffsets[u]! - 1);
    }
    sourceOffsets[f + 1] = out;
    confidence[f] = vpaConfidence({
      // Dividing by a power of two is exact: the same real Σ w whatever order the units were summed in.
      evidenceWeight: t.evidenceWeight[v]! / WEIGHT_UNITS,
      distinctUrls: to - from,
      distinctSourceCategories: categoriesIn(t.categoryMask[v]!),
      peers,
    });
  }
  return { confidence, sourceOffsets, sourceUrl, sourceCapturedAt, sourceFlags };
}

/**
 * The risk counts of the VPAs with more than one risk category, by final
 * id: the partitions' lists (temporary ids ascending) renumbered and sorted.
 */
function mixedRiskColumns(t: Concatenated, tempToFinal: Uint32Array, scratch: ArrayAllocator, snapshotArrays: ArrayAllocator) {
  const m = t.mixedRisk.length;
  const finalIds = scratch.zeroed(Uint32Array, m);
  const rows = scratch.zeroed(Uint32Array, m);
  for (let k = 0; k < m; k++) {
    finalIds[k] = tempToFinal[t.mixedRisk[k]!]!;
    rows[k] = k;
  }
  // Final ids are distinct, so the order is the same however the sort runs.
  rows.sort((a, b) => finalIds[a]! - finalIds[b]!);
  const mixedRiskVpas = snapshotArrays.zeroed(Uint32Array, m);
  const mixedRiskCounts = snapshotArrays.zeroed(Uint32Array, m * RISK_COUNT);
  const from = t.mixedRiskCounts;
  for (let k = 0; k < m; k++) {
    const row = rows[k]!;
    mixedRiskVpas[k] = finalIds[row]!;
    for (let c = 0; c < RISK_COUNT; c++) mixedRiskCounts[k * RISK_COUNT + c] = from[row * RISK_COUNT + c]!;
  }
  return { mixedRiskVpas, mixedRiskCounts };
}

/** Per-url dominant category; the url counts it was made from let go. */
function urlCategories(t: Concatenated, snapshotArrays: ArrayAllocator): Uint8Array {
  const urlCount = t.urlCount;
  const counts = t.urlCategoryCounts;
  if (counts === undefined) throw new Error('the url counts were let go before their last use');
  const urlCategory = snapshotArrays.zeroed(Uint8Array, urlCount);
  for (let u = 0; u < urlCount; u++) urlCategory[u] = dominant(counts, u * SOURCE_COUNT, SOURCE_COUNT, SOURCE_RANK);
  t.urlCategoryCounts = undefined;
  return urlCategory;
}

/**
 * Each url's members (final ids) as a portable roaring bitmap in one blob.
 * The membership's VPAs are renumbered to final ids where they are: nothing
 * reads them after this.
 */
function urlColumns(t: Concatenated, membership: UrlMembership, tempToFinal: Uint32Array, urlCategory: Uint8Array, snapshotArrays: ArrayAllocator) {
  const urlCount = t.urlCount;
  const { offsets, vpas } = membership;
  const urlFinal = vpas;
  for (let i = 0; i < vpas.length; i++) urlFinal[i] = tempToFinal[vpas[i]!]!;
  for (let u = 0; u < urlCount; u++) {
    if (offsets[u + 1]! - offsets[u]! > 1) urlFinal.subarray(offsets[u]!, offsets[u + 1]!).sort();
  }
  const urlMembersOffsets = snapshotArrays.zeroed(Uint32Array, urlCount + 1);
  for (let u = 0; u < urlCount; u++) {
    urlMembersOffsets[u + 1] = urlMembersOffsets[u]! + sortedIdsSize(urlFinal, offsets[u]!, offsets[u + 1]!);
  }
  const urlMembersBlob = snapshotArrays.zeroed(Uint8Array, urlMembersOffsets[urlCount]!);
  for (let u = 0; u < urlCount; u++) writeSortedIds(urlFinal, offsets[u]!, offsets[u + 1]!, urlMembersBlob, urlMembersOffsets[u]!);
  const urlSlots = buildUrlSlots(t.urlBytes.bytes, t.urlBytes.offsets, snapshotArrays);
  return { urlBytes: t.urlBytes.bytes, urlOffsets: t.urlBytes.offsets, urlCategory, urlMembersBlob, urlMembersOffsets, urlSlots };
}

/** Per-cluster figures, by ordinal. */
function clusterColumns(order: FinalOrder, vpas: VpaColumns, numbers: Uint32Array, urlCount: number, scratch: ArrayAllocator, snapshotArrays: ArrayAllocator) {
  const { clusterCount, clusterStart, componentsByNumber } = order;
  const { firstSeen, confidence, evidenceCount, riskCategory, sourceOffsets, sourceUrl, sourceCapturedAt } = vpas;
  const clusterNumber = snapshotArrays.zeroed(Uint32Array, clusterCount);
  const clusterCreatedAt = snapshotArrays.zeroed(Float64Array, clusterCount);
  const clusterLastUpdated = snapshotArrays.zeroed(Float64Array, clusterCount);
  const clusterRiskCategory = snapshotArrays.zeroed(Uint8Array, clusterCount);
  const clusterConfidenceArray = snapshotArrays.zeroed(Uint16Array, clusterCount);
  const clusterEvidenceCount = snapshotArrays.zeroed(Uint32Array, clusterCount);
  const clusterMembersOffsets = snapshotArrays.zeroed(Uint32Array, clusterCount + 1);
  for (let k = 0; k < clusterCount; k++) {
    clusterMembersOffsets[k + 1] = clusterMembersOffsets[k]! + rangeSize(clusterStart[k]!, clusterStart[k + 1]!);
  }
  const clusterMembersBlob = snapshotArrays.zeroed(Uint8Array, clusterMembersOffsets[clusterCount]!);
  const urlStamp = scratch.zeroed(Int32Array, urlCount).fill(-1);
  const riskTally = new Uint32Array(RISK_COUNT);
  for (let k = 0; k < clusterCount; k++) {
    clusterNumber[k] = numbers[componentsByNumber[k]!]!;
    const start = clusterStart[k]!;
    const end = clusterStart[k + 1]!;
    let created = Number.POSITIVE_INFINITY;
    let updated = Number.NEGATIVE_INFINITY;
    let best = 0;
    let evidence = 0;
    let distinctUrls = 0;
    riskTally.fill(0);
    for (let f = start; f < end; f++) {
      created = Math.min(created, firstSeen[f]!);
      // Sources are newest first, so the first one is the VPA's last capture.
      updated = Math.max(updated, sourceCapturedAt[sourceOffsets[f]!]!);
      best = Math.max(best, confidence[f]!);
      evidence += evidenceCount[f]!;
      riskTally[riskCategory[f]!]!++;
      for (let s = sourceOffsets[f]!; s < sourceOffsets[f + 1]!; s++) {
        const u = sourceUrl[s]!;
        if (urlStamp[u] !== k) {
          urlStamp[u] = k;
          distinctUrls++;
        }
      }
    }
    clusterCreatedAt[k] = created;
    clusterLastUpdated[k] = updated;
    clusterRiskCategory[k] = dominant(riskTally, 0, RISK_COUNT, RISK_RANK);
    clusterConfidenceArray[k] = clusterConfidence(best, end - start, distinctUrls);
    clusterEvidenceCount[k] = evidence;
    // Members are one contiguous id run: a single run container.
    writeRange(start, end, clusterMembersBlob, clusterMembersOffsets[k]!);
  }
  return {
    clusterNumber,
    clusterCreatedAt,
    clusterLastUpdated,
    clusterRiskCategory,
    clusterConfidence: clusterConfidenceArray,
    clusterEvidenceCount,
    clusterMembersBlob,
    clusterMembersOffsets,
  };
}

interface Concatenated {
  vpaCount: number;
  sourceCount: number;
  /** Until the clusters are numbered and the final order made; then undefined, so that their memory goes with the rows'. */
  keys: Keys | undefined;
  /** Until the VPA columns are laid out from them; then undefined, so that their memory goes (AssembleOptions.rowsCopied). */
  rows: RowValues | undefined;
  /** Temporary ids (ascending) of the VPAs with more than one risk category. */
  mixedRisk: Uint32Array;
  /** RISK_COUNT counters per mixedRisk entry. */
  mixedRiskCounts: Uint32Array;
  urlCount: number;
  /** SOURCE_COUNT counters per url, in memory of their own; undefined once each url's category is made. */
  urlCategoryCounts: Uint32Array | undefined;
  urlBytes: { bytes: Uint8Array; offsets: Uint32Array };
}

/**
 * The concatenated rows' values, by temporary id and by source, that only
 * the VPA columns are laid out from: each array over memory of its own
 * (the scratch's cannot be given back before the task ends).
 */
interface RowValues {
  vpaCount: number;
  sourceCount: number;
  firstSeen: Float64Array;
  evidenceCount: Uint32Array;
  riskCategory: Uint8Array;
  /** Σ recencyWeightUnits per VPA. */
  evidenceWeight: Float64Array;
  categoryMask: Uint8Array;
  sourceOffsets: Uint32Array;
  /** Global url id per source. */
  sourceUrl: Uint32Array;
  sourceCapturedAt: Float64Array;
  sourceScreenshot: Uint8Array;
}

/**
 * The VPAs' keys in temporary order, as bytes (strings are made only for
 * the few uses that need them), in shared memory of their own: the index
 * may be built from them on another thread while this one reads them.
 */
interface Keys {
  readonly bytes: Uint8Array;
  readonly offsets: Uint32Array;
  readonly text: Buffer;
}

function keysOf(t: Concatenated): Keys {
  if (t.keys === undefined) throw new Error('the keys were let go before their last use');
  return t.keys;
}

function rowsOf(t: Concatenated): RowValues {
  if (t.rows === undefined) throw new Error('the concatenated rows were let go before their last use');
  return t.rows;
}

/**
 * Join partitions into temporary VPA ids (partition order) and intern urls
 * across partitions. `partials` is emptied as they are copied, one at a
 * time, so that each can go before the next is copied
 * (AssembleOptions.partialCopied).
 */
function concatenate(partials: AggregateResult[], options: AssembleOptions): Concatenated {
  const scratch = options.scratch ?? freshArrays;
  // Counted in a frame of its own, as each partial is copied: no variable of this one holds a partial.
  const { n, sourceCount, keyLength, localUrls, urlByteTotal, mixedTotal } = joinedSizes(partials);
  const into: Joined = {
    keyBytes: freshSharedArrays.zeroed(Uint8Array, keyLength),
    keyOffsets: freshSharedArrays.zeroed(Uint32Array, n + 1),
    rows: {
      vpaCount: n,
      sourceCount,
      firstSeen: freshArrays.zeroed(Float64Array, n),
      evidenceCount: freshArrays.zeroed(Uint32Array, n),
      riskCategory: freshArrays.zeroed(Uint8Array, n),
      evidenceWeight: freshArrays.zeroed(Float64Array, n),
      categoryMask: freshArrays.zeroed(Uint8Array, n),
      sourceOffsets: freshArrays.zeroed(Uint32Array, n + 1),
      sourceUrl: freshArrays.zeroed(Uint32Array, sourceCount),
      sourceCapturedAt: freshArrays.zeroed(Float64Array, sourceCount),
      sourceScreenshot: freshArrays.zeroed(Uint8Array, sourceCount),
    },
    mixedRisk: scratch.zeroed(Uint32Array, mixedTotal),
    mixedRiskCounts: scratch.zeroed(Uint32Array, mixedTotal * RISK_COUNT),
    // A url seen in several partitions is interned once per partition, not once per source. In memory of its own:
    // once its urls are copied into the snapshot's arrays (finish, below), nothing reads it, and it goes.
    urls: new ByteInterner(localUrls, urlByteTotal, freshArrays),
    // In memory of its own too: it goes with the rows (urlCategories).
    urlCounts: freshArrays.zeroed(Uint32Array, Math.max(1, localUrls) * SOURCE_COUNT),
    scratch,
    at: { v: 0, s: 0, keyAt: 0, mixed: 0 },
  };
  while (partials.length > 0) {
    copyFirstPartial(partials, into);
    options.partialCopied?.();
  }
  const { keyBytes, keyOffsets, rows, urls, at } = into;
  keyOffsets[n] = at.keyAt;
  rows.sourceOffsets[n] = at.s;
  const urlTable = urls.finish({ arrays: options.snapshotArrays ?? freshSharedArrays });
  const urlCount = urls.size;
  return {
    vpaCount: n,
    sourceCount,
    keys: { bytes: keyBytes, offsets: keyOffsets, text: Buffer.from(keyBytes.buffer, keyBytes.byteOffset, keyBytes.byteLength) },
    rows,
    mixedRisk: into.mixedRisk,
    mixedRiskCounts: into.mixedRiskCounts,
    urlCount,
    urlCategoryCounts: into.urlCounts.length > urlCount * SOURCE_COUNT ? into.urlCounts.subarray(0, urlCount * SOURCE_COUNT) : into.urlCounts,
    urlBytes: urlTable,
  };
}

function joinedSizes(partials: readonly AggregateResult[]) {
  let n = 0;
  let sourceCount = 0;
  let keyLength = 0;
  let localUrls = 0;
  let urlByteTotal = 0;
  let mixedTotal = 0;
  for (const p of partials) {
    n += p.vpaCount;
    mixedTotal += p.mixedRisk.length;
    sourceCount += p.sourceOffsets[p.vpaCount]!;
    keyLength += p.keyBytes.byteLength;
    localUrls += p.urlOffsets.length - 1;
    urlByteTotal += p.urlBytes.byteLength;
  }
  return { n, sourceCount, keyLength, localUrls, urlByteTotal, mixedTotal };
}

/** What the partials are joined into, and how far. */
interface Joined {
  readonly keyBytes: Uint8Array;
  readonly keyOffsets: Uint32Array;
  readonly rows: RowValues;
  readonly mixedRisk: Uint32Array;
  readonly mixedRiskCounts: Uint32Array;
  readonly urls: ByteInterner;
  readonly urlCounts: Uint32Array;
  readonly scratch: ArrayAllocator;
  /** The next VPA, source, key byte and mixed-risk entry. */
  readonly at: { v: number; s: number; keyAt: number; mixed: number };
}

/** Copy the first of `partials` and take it out: in a frame of its own, so that nothing of the caller's holds it once it returns. */
function copyFirstPartial(partials: AggregateResult[], into: Joined): void {
  const p = partials.shift()!;
  const { keyBytes, keyOffsets, rows, mixedRisk, mixedRiskCounts, urls, urlCounts, at } = into;
  const { v, keyAt } = at;
  keyBytes.set(p.keyBytes, keyAt);
  for (let i = 0; i < p.vpaCount; i++) {
    keyOffsets[v + i] = keyAt + p.keyOffsets[i]!;
    rows.sourceOffsets[v + i] = at.s + p.sourceOffsets[i]!;
  }
  at.keyAt += p.keyBytes.byteLength;
  rows.firstSeen.set(p.firstSeen, v);
  rows.evidenceCount.set(p.evidenceCount, v);
  rows.riskCategory.set(p.riskCategory, v);
  rows.evidenceWeight.set(p.evidenceWeight, v);
  rows.categoryMask.set(p.categoryMask, v);
  for (let k = 0; k < p.mixedRisk.length; k++) mixedRisk[at.mixed + k] = v + p.mixedRisk[k]!;
  mixedRiskCounts.set(p.mixedRiskCounts, at.mixed * RISK_COUNT);
  at.mixed += p.mixedRisk.length;
  rows.sourceCapturedAt.set(p.sourceCapturedAt, at.s);
  rows.sourceScreenshot.set(p.sourceScreenshot, at.s);
  const local = p.urlOffsets.length - 1;
  const globalOf = into.scratch.zeroed(Uint32Array, local);
  for (let u = 0; u < local; u++) globalOf[u] = urls.intern(p.urlBytes, p.urlOffsets[u]!, p.urlOffsets[u + 1]!);
  const partialSources = p.sourceOffsets[p.vpaCount]!;
  const sourceUrl = rows.sourceUrl;
  const counts = p.sourceCategoryCounts;
  let s = at.s;
  for (let k = 0; k < partialSources; k++, s++) {
    const id = globalOf[p.sourceUrl[k]!]!;
    sourceUrl[s] = id;
    for (let c = 0; c < SOURCE_COUNT; c++) urlCounts[id * SOURCE_COUNT + c]! += counts[k * SOURCE_COUNT + c]!;
  }
  at.s = s;
  at.v += p.vpaCount;
}
