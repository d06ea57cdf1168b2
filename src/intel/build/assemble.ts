import { SOURCE_CATEGORIES, SOURCE_RANK, RISK_CATEGORIES, RISK_RANK } from '../../vpa/categories.js';
import {
  NO_CLUSTER,
  SOURCE_FLAG_SCREENSHOT,
  type SnapshotData,
  type SnapshotMeta,
} from '../../engine/snapshot-data.js';
import { buildSlots } from '../../engine/vpa-index.js';
import { rangeSize, sortedIdsSize, writeRange, writeSortedIds } from '../../engine/roaring-portable.js';
import { findClusters } from '../clustering.js';
import { assignClusterNumbers, type ClusterIdState } from '../cluster-ids.js';
import { clusterConfidence, vpaConfidence } from '../scoring.js';
import { dominant, type AggregateResult } from './phases.js';
import { ByteInterner, compareByteRanges } from './byte-interner.js';

const SOURCE_COUNT = SOURCE_CATEGORIES.length;
const RISK_COUNT = RISK_CATEGORIES.length;

export interface AssembleOptions {
  readonly urlMemberCap: number;
  readonly scoredAt: number;
  readonly previousClusterIds: ClusterIdState;
  readonly meta: Omit<
    SnapshotMeta,
    'vpaCount' | 'urlCount' | 'clusterCount' | 'sourceCount' | 'evidenceCount' | 'urlMemberCap' | 'scoredAt'
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
 */
export function assembleSnapshot(partials: readonly AggregateResult[], options: AssembleOptions): AssembleResult {
  const t = concatenate(partials);
  const n = t.vpaCount;

  // url → VPAs (temporary ids), counting sort by url.
  const urlCount = t.urlCount;
  const urlMemberOffsets = new Uint32Array(urlCount + 1);
  for (let s = 0; s < t.sourceCount; s++) urlMemberOffsets[t.sourceUrl[s]! + 1]!++;
  for (let u = 0; u < urlCount; u++) urlMemberOffsets[u + 1]! += urlMemberOffsets[u]!;
  const urlMembers = new Uint32Array(t.sourceCount);
  const fill = urlMemberOffsets.slice(0, urlCount);
  for (let v = 0; v < n; v++) {
    for (let s = t.sourceOffsets[v]!; s < t.sourceOffsets[v + 1]!; s++) urlMembers[fill[t.sourceUrl[s]!]!++] = v;
  }

  const components = findClusters(n, { offsets: urlMemberOffsets, vpas: urlMembers }, options.urlMemberCap);
  const keyOf = (v: number) => t.keyText.toString('latin1', t.keyOffsets[v]!, t.keyOffsets[v + 1]!);
  const assigned = assignClusterNumbers(components, keyOf, options.previousClusterIds);

  // Cluster ordinals in ascending public number, so lookups by number are a binary search.
  const clusterCount = components.count;
  const componentsByNumber = Array.from({ length: clusterCount }, (_, c) => c).sort(
    (a, b) => assigned.numbers[a]! - assigned.numbers[b]!,
  );
  const ordinalOfComponent = new Uint32Array(clusterCount);
  componentsByNumber.forEach((component, ordinal) => {
    ordinalOfComponent[component] = ordinal;
  });

  // Final order: clustered VPAs by (cluster ordinal, key), then the rest in partition order.
  const clusterStart = new Uint32Array(clusterCount + 1);
  for (let v = 0; v < n; v++) {
    const c = components.of[v]!;
    if (c >= 0) clusterStart[ordinalOfComponent[c]! + 1]!++;
  }
  for (let k = 0; k < clusterCount; k++) clusterStart[k + 1]! += clusterStart[k]!;
  const clusteredCount = clusterStart[clusterCount]!;
  const finalToTemp = new Uint32Array(n);
  const next = clusterStart.slice(0, clusterCount);
  let loose = clusteredCount;
  for (let v = 0; v < n; v++) {
    const c = components.of[v]!;
    if (c >= 0) finalToTemp[next[ordinalOfComponent[c]!]!++] = v;
    else finalToTemp[loose++] = v;
  }
  for (let k = 0; k < clusterCount; k++) {
    const members = finalToTemp.subarray(clusterStart[k]!, clusterStart[k + 1]!);
    members.sort((a, b) => compareByteRanges(t.keyBytes, t.keyOffsets[a]!, t.keyOffsets[a + 1]!, t.keyBytes, t.keyOffsets[b]!, t.keyOffsets[b + 1]!));
  }
  const tempToFinal = new Uint32Array(n);
  for (let f = 0; f < n; f++) tempToFinal[finalToTemp[f]!] = f;

  // Per-VPA arrays in final order.
  const keyOffsets = new Uint32Array(n + 1);
  for (let f = 0; f < n; f++) {
    const v = finalToTemp[f]!;
    keyOffsets[f + 1] = keyOffsets[f]! + t.keyOffsets[v + 1]! - t.keyOffsets[v]!;
  }
  const keyBytes = new Uint8Array(keyOffsets[n]!);
  const firstSeen = new Float64Array(n);
  const confidence = new Uint16Array(n);
  const riskCategory = new Uint8Array(n);
  const evidenceCount = new Uint32Array(n);
  const vpaCluster = new Uint32Array(n).fill(NO_CLUSTER);
  const sourceOffsets = new Uint32Array(n + 1);
  const sourceUrl = new Uint32Array(t.sourceCount);
  const sourceCapturedAt = new Float64Array(t.sourceCount);
  const sourceFlags = new Uint8Array(t.sourceCount);
  let totalEvidence = 0;
  for (let f = 0; f < n; f++) {
    const v = finalToTemp[f]!;
    keyBytes.set(t.keyBytes.subarray(t.keyOffsets[v]!, t.keyOffsets[v + 1]!), keyOffsets[f]!);
    firstSeen[f] = t.firstSeen[v]!;
    riskCategory[f] = t.riskCategory[v]!;
    evidenceCount[f] = t.evidenceCount[v]!;
    totalEvidence += t.evidenceCount[v]!;
    const c = components.of[v]!;
    if (c >= 0) vpaCluster[f] = ordinalOfComponent[c]!;
    let out = sourceOffsets[f]!;
    let peers = 0;
    const from = t.sourceOffsets[v]!;
    const to = t.sourceOffsets[v + 1]!;
    for (let s = from; s < to; s++, out++) {
      const u = t.sourceUrl[s]!;
      sourceUrl[out] = u;
      sourceCapturedAt[out] = t.sourceCapturedAt[s]!;
      sourceFlags[out] = t.sourceScreenshot[s]! === 1 ? SOURCE_FLAG_SCREENSHOT : 0;
      peers = Math.max(peers, urlMemberOffsets[u + 1]! - urlMemberOffsets[u]! - 1);
    }
    sourceOffsets[f + 1] = out;
    confidence[f] = vpaConfidence({
      evidenceWeight: t.evidenceWeight[v]!,
      distinctUrls: to - from,
      distinctSourceCategories: popcount(t.categoryMask[v]!),
      peers,
    });
  }

  // Per-url category and member bitmaps (final ids).
  const urlCategory = new Uint8Array(urlCount);
  for (let u = 0; u < urlCount; u++) urlCategory[u] = dominant(t.urlCategoryCounts, u * SOURCE_COUNT, SOURCE_COUNT, SOURCE_RANK);
  // Members of each url in final ids, sorted, then serialised into one blob.
  const urlFinal = new Uint32Array(t.sourceCount);
  for (let u = 0; u < urlCount; u++) {
    const from = urlMemberOffsets[u]!;
    const to = urlMemberOffsets[u + 1]!;
    for (let i = from; i < to; i++) urlFinal[i] = tempToFinal[urlMembers[i]!]!;
    if (to - from > 1) urlFinal.subarray(from, to).sort();
  }
  const urlMembersOffsets = new Uint32Array(urlCount + 1);
  for (let u = 0; u < urlCount; u++) {
    urlMembersOffsets[u + 1] = urlMembersOffsets[u]! + sortedIdsSize(urlFinal, urlMemberOffsets[u]!, urlMemberOffsets[u + 1]!);
  }
  const urlMembersBlob = new Uint8Array(urlMembersOffsets[urlCount]!);
  for (let u = 0; u < urlCount; u++) {
    writeSortedIds(urlFinal, urlMemberOffsets[u]!, urlMemberOffsets[u + 1]!, urlMembersBlob, urlMembersOffsets[u]!);
  }

  // Per-cluster figures.
  const clusterNumber = new Uint32Array(clusterCount);
  const clusterCreatedAt = new Float64Array(clusterCount);
  const clusterLastUpdated = new Float64Array(clusterCount);
  const clusterRiskCategory = new Uint8Array(clusterCount);
  const clusterConfidenceArray = new Uint16Array(clusterCount);
  const clusterEvidenceCount = new Uint32Array(clusterCount);
  const clusterMembersOffsets = new Uint32Array(clusterCount + 1);
  for (let k = 0; k < clusterCount; k++) {
    clusterMembersOffsets[k + 1] = clusterMembersOffsets[k]! + rangeSize(clusterStart[k]!, clusterStart[k + 1]!);
  }
  const clusterMembersBlob = new Uint8Array(clusterMembersOffsets[clusterCount]!);
  const urlStamp = new Int32Array(urlCount).fill(-1);
  const riskTally = new Uint32Array(RISK_COUNT);
  for (let k = 0; k < clusterCount; k++) {
    clusterNumber[k] = assigned.numbers[componentsByNumber[k]!]!;
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

  const urlBytes = t.urlBytes;
  const data: SnapshotData = {
    meta: {
      ...options.meta,
      scoredAt: options.scoredAt,
      urlMemberCap: options.urlMemberCap,
      vpaCount: n,
      urlCount,
      clusterCount,
      sourceCount: t.sourceCount,
      evidenceCount: totalEvidence,
    },
    slots: buildSlots(keyBytes, keyOffsets, n),
    keyBytes,
    keyOffsets,
    firstSeen,
    confidence,
    riskCategory,
    evidenceCount,
    vpaCluster,
    sourceOffsets,
    sourceUrl,
    sourceCapturedAt,
    sourceFlags,
    urlBytes: urlBytes.bytes,
    urlOffsets: urlBytes.offsets,
    urlCategory,
    urlMembersBlob,
    urlMembersOffsets,
    clusterNumber,
    clusterCreatedAt,
    clusterLastUpdated,
    clusterRiskCategory,
    clusterConfidence: clusterConfidenceArray,
    clusterEvidenceCount,
    clusterMembersBlob,
    clusterMembersOffsets,
  };
  return { data, clusterIds: assigned.state };
}

interface Concatenated {
  vpaCount: number;
  sourceCount: number;
  /** Keys in temporary order, as bytes: strings are made only for the few uses that need them. */
  keyBytes: Uint8Array;
  keyOffsets: Uint32Array;
  keyText: Buffer;
  firstSeen: Float64Array;
  evidenceCount: Uint32Array;
  riskCategory: Uint8Array;
  evidenceWeight: Float64Array;
  categoryMask: Uint8Array;
  sourceOffsets: Uint32Array;
  /** Global url id per source. */
  sourceUrl: Uint32Array;
  sourceCapturedAt: Float64Array;
  sourceScreenshot: Uint8Array;
  urlCount: number;
  urlCategoryCounts: Uint32Array;
  urlBytes: { bytes: Uint8Array; offsets: Uint32Array };
}

/** Join partitions into temporary VPA ids (partition order) and intern urls across partitions. */
function concatenate(partials: readonly AggregateResult[]): Concatenated {
  let n = 0;
  let sourceCount = 0;
  let keyLength = 0;
  let localUrls = 0;
  let urlByteTotal = 0;
  for (const p of partials) {
    n += p.vpaCount;
    sourceCount += p.sourceOffsets[p.vpaCount]!;
    keyLength += p.keyBytes.byteLength;
    localUrls += p.urlOffsets.length - 1;
    urlByteTotal += p.urlBytes.byteLength;
  }
  const keyBytes = new Uint8Array(keyLength);
  const keyOffsets = new Uint32Array(n + 1);
  const firstSeen = new Float64Array(n);
  const evidenceCount = new Uint32Array(n);
  const riskCategory = new Uint8Array(n);
  const evidenceWeight = new Float64Array(n);
  const categoryMask = new Uint8Array(n);
  const sourceOffsets = new Uint32Array(n + 1);
  const sourceUrl = new Uint32Array(sourceCount);
  const sourceCapturedAt = new Float64Array(sourceCount);
  const sourceScreenshot = new Uint8Array(sourceCount);
  // A url seen in several partitions is interned once per partition, not once per source.
  const urls = new ByteInterner(localUrls, urlByteTotal);
  let urlCounts = new Uint32Array(Math.max(1, localUrls) * SOURCE_COUNT);

  let v = 0;
  let s = 0;
  let keyAt = 0;
  for (const p of partials) {
    keyBytes.set(p.keyBytes, keyAt);
    for (let i = 0; i < p.vpaCount; i++) {
      keyOffsets[v + i] = keyAt + p.keyOffsets[i]!;
      sourceOffsets[v + i] = s + p.sourceOffsets[i]!;
    }
    keyAt += p.keyBytes.byteLength;
    firstSeen.set(p.firstSeen, v);
    evidenceCount.set(p.evidenceCount, v);
    riskCategory.set(p.riskCategory, v);
    evidenceWeight.set(p.evidenceWeight, v);
    categoryMask.set(p.categoryMask, v);
    sourceCapturedAt.set(p.sourceCapturedAt, s);
    sourceScreenshot.set(p.sourceScreenshot, s);
    const local = p.urlOffsets.length - 1;
    const globalOf = new Uint32Array(local);
    for (let u = 0; u < local; u++) globalOf[u] = urls.intern(p.urlBytes, p.urlOffsets[u]!, p.urlOffsets[u + 1]!);
    const partialSources = p.sourceOffsets[p.vpaCount]!;
    for (let k = 0; k < partialSources; k++, s++) {
      const id = globalOf[p.sourceUrl[k]!]!;
      sourceUrl[s] = id;
      for (let c = 0; c < SOURCE_COUNT; c++) urlCounts[id * SOURCE_COUNT + c]! += p.sourceCategoryCounts[k * SOURCE_COUNT + c]!;
    }
    v += p.vpaCount;
  }
  keyOffsets[n] = keyAt;
  sourceOffsets[n] = s;
  const urlTable = urls.finish();
  if (urlCounts.length > urls.size * SOURCE_COUNT) urlCounts = urlCounts.subarray(0, urls.size * SOURCE_COUNT);

  return {
    vpaCount: n,
    sourceCount,
    keyBytes,
    keyOffsets,
    keyText: Buffer.from(keyBytes.buffer, keyBytes.byteOffset, keyBytes.byteLength),
    firstSeen,
    evidenceCount,
    riskCategory,
    evidenceWeight,
    categoryMask,
    sourceOffsets,
    sourceUrl,
    sourceCapturedAt,
    sourceScreenshot,
    urlCount: urls.size,
    urlCategoryCounts: urlCounts,
    urlBytes: urlTable,
  };
}

function popcount(mask: number): number {
  let count = 0;
  for (let m = mask; m !== 0; m &= m - 1) count++;
  return count;
}
