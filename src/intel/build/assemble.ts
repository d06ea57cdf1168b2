import roaring from 'roaring';
import { SOURCE_CATEGORIES, SOURCE_RANK, RISK_CATEGORIES, RISK_RANK } from '../../vpa/categories.js';
import {
  NO_CLUSTER,
  SOURCE_FLAG_SCREENSHOT,
  type SnapshotData,
  type SnapshotMeta,
} from '../../engine/snapshot-data.js';
import { buildSlots } from '../../engine/vpa-index.js';
import { findClusters } from '../clustering.js';
import { assignClusterNumbers, type ClusterIdState } from '../cluster-ids.js';
import { clusterConfidence, vpaConfidence } from '../scoring.js';
import { dominant, type AggregateResult } from './phases.js';
import { compareCodeUnits } from '../../engine/verdict.js';

const { RoaringBitmap32 } = roaring;
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
  const urlCount = t.urlStrings.length;
  const urlMemberOffsets = new Uint32Array(urlCount + 1);
  for (let s = 0; s < t.sourceCount; s++) urlMemberOffsets[t.sourceUrl[s]! + 1]!++;
  for (let u = 0; u < urlCount; u++) urlMemberOffsets[u + 1]! += urlMemberOffsets[u]!;
  const urlMembers = new Uint32Array(t.sourceCount);
  const fill = urlMemberOffsets.slice(0, urlCount);
  for (let v = 0; v < n; v++) {
    for (let s = t.sourceOffsets[v]!; s < t.sourceOffsets[v + 1]!; s++) urlMembers[fill[t.sourceUrl[s]!]!++] = v;
  }

  const components = findClusters(n, { offsets: urlMemberOffsets, vpas: urlMembers }, options.urlMemberCap);
  const assigned = assignClusterNumbers(components, (v) => t.keys[v]!, options.previousClusterIds);

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
    members.sort((a, b) => compareCodeUnits(t.keys[a]!, t.keys[b]!));
  }
  const tempToFinal = new Uint32Array(n);
  for (let f = 0; f < n; f++) tempToFinal[finalToTemp[f]!] = f;

  // Per-VPA arrays in final order.
  const keyOffsets = new Uint32Array(n + 1);
  for (let f = 0; f < n; f++) keyOffsets[f + 1] = keyOffsets[f]! + t.keys[finalToTemp[f]!]!.length;
  const keyBuffer = Buffer.alloc(keyOffsets[n]!);
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
    keyBuffer.write(t.keys[v]!, keyOffsets[f]!, 'latin1');
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
  const urlBitmaps: Uint8Array[] = [];
  const urlMembersOffsets = new Uint32Array(urlCount + 1);
  for (let u = 0; u < urlCount; u++) {
    const members = urlMembers.subarray(urlMemberOffsets[u]!, urlMemberOffsets[u + 1]!);
    const finalIds = new Uint32Array(members.length);
    for (let i = 0; i < members.length; i++) finalIds[i] = tempToFinal[members[i]!]!;
    finalIds.sort();
    const bitmap = new RoaringBitmap32(finalIds);
    bitmap.runOptimize();
    const bytes = bitmap.serialize('portable');
    urlBitmaps.push(bytes);
    urlMembersOffsets[u + 1] = urlMembersOffsets[u]! + bytes.length;
  }

  // Per-cluster figures.
  const clusterNumber = new Uint32Array(clusterCount);
  const clusterCreatedAt = new Float64Array(clusterCount);
  const clusterLastUpdated = new Float64Array(clusterCount);
  const clusterRiskCategory = new Uint8Array(clusterCount);
  const clusterConfidenceArray = new Uint16Array(clusterCount);
  const clusterEvidenceCount = new Uint32Array(clusterCount);
  const clusterBitmaps: Uint8Array[] = [];
  const clusterMembersOffsets = new Uint32Array(clusterCount + 1);
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
    const bitmap = new RoaringBitmap32();
    bitmap.addRange(start, end);
    bitmap.runOptimize();
    const bytes = bitmap.serialize('portable');
    clusterBitmaps.push(bytes);
    clusterMembersOffsets[k + 1] = clusterMembersOffsets[k]! + bytes.length;
  }

  const keyBytes = new Uint8Array(keyBuffer.buffer, keyBuffer.byteOffset, keyBuffer.byteLength);
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
    urlMembersBlob: concatBytes(urlBitmaps, urlMembersOffsets[urlCount]!),
    urlMembersOffsets,
    clusterNumber,
    clusterCreatedAt,
    clusterLastUpdated,
    clusterRiskCategory,
    clusterConfidence: clusterConfidenceArray,
    clusterEvidenceCount,
    clusterMembersBlob: concatBytes(clusterBitmaps, clusterMembersOffsets[clusterCount]!),
    clusterMembersOffsets,
  };
  return { data, clusterIds: assigned.state };
}

interface Concatenated {
  vpaCount: number;
  sourceCount: number;
  keys: string[];
  firstSeen: Float64Array;
  evidenceCount: Uint32Array;
  riskCategory: Uint8Array;
  evidenceWeight: Float64Array;
  categoryMask: Uint8Array;
  sourceOffsets: Uint32Array;
  /** Interned url id per source. */
  sourceUrl: Uint32Array;
  sourceCapturedAt: Float64Array;
  sourceScreenshot: Uint8Array;
  urlStrings: string[];
  urlCategoryCounts: Uint32Array;
  urlBytes: { bytes: Uint8Array; offsets: Uint32Array };
}

/** Join partitions into temporary VPA ids (partition order) and intern urls. */
function concatenate(partials: readonly AggregateResult[]): Concatenated {
  let n = 0;
  let sourceCount = 0;
  for (const p of partials) {
    n += p.vpaCount;
    sourceCount += p.sourceOffsets[p.vpaCount]!;
  }
  const keys: string[] = new Array(n);
  const firstSeen = new Float64Array(n);
  const evidenceCount = new Uint32Array(n);
  const riskCategory = new Uint8Array(n);
  const evidenceWeight = new Float64Array(n);
  const categoryMask = new Uint8Array(n);
  const sourceOffsets = new Uint32Array(n + 1);
  const sourceUrl = new Uint32Array(sourceCount);
  const sourceCapturedAt = new Float64Array(sourceCount);
  const sourceScreenshot = new Uint8Array(sourceCount);
  const urlIds = new Map<string, number>();
  const urlStrings: string[] = [];
  let urlCounts = new Uint32Array(1024 * SOURCE_COUNT);

  let v = 0;
  let s = 0;
  for (const p of partials) {
    const keyText = Buffer.from(p.keyBytes.buffer, p.keyBytes.byteOffset, p.keyBytes.byteLength);
    const urlText = Buffer.from(p.sourceUrlBytes.buffer, p.sourceUrlBytes.byteOffset, p.sourceUrlBytes.byteLength);
    firstSeen.set(p.firstSeen, v);
    evidenceCount.set(p.evidenceCount, v);
    riskCategory.set(p.riskCategory, v);
    evidenceWeight.set(p.evidenceWeight, v);
    categoryMask.set(p.categoryMask, v);
    sourceCapturedAt.set(p.sourceCapturedAt, s);
    sourceScreenshot.set(p.sourceScreenshot, s);
    for (let i = 0; i < p.vpaCount; i++, v++) {
      keys[v] = keyText.toString('latin1', p.keyOffsets[i]!, p.keyOffsets[i + 1]!);
      sourceOffsets[v] = s + p.sourceOffsets[i]!;
    }
    const partialSources = p.sourceOffsets[p.vpaCount]!;
    for (let k = 0; k < partialSources; k++, s++) {
      const url = urlText.toString('utf8', p.sourceUrlOffsets[k]!, p.sourceUrlOffsets[k + 1]!);
      let id = urlIds.get(url);
      if (id === undefined) {
        id = urlStrings.length;
        urlIds.set(url, id);
        urlStrings.push(url);
        if ((id + 1) * SOURCE_COUNT > urlCounts.length) {
          const grown = new Uint32Array(urlCounts.length * 2);
          grown.set(urlCounts);
          urlCounts = grown;
        }
      }
      sourceUrl[s] = id;
      for (let c = 0; c < SOURCE_COUNT; c++) urlCounts[id * SOURCE_COUNT + c]! += p.sourceCategoryCounts[k * SOURCE_COUNT + c]!;
    }
  }
  sourceOffsets[n] = s;

  const urlOffsets = new Uint32Array(urlStrings.length + 1);
  for (let u = 0; u < urlStrings.length; u++) urlOffsets[u + 1] = urlOffsets[u]! + Buffer.byteLength(urlStrings[u]!, 'utf8');
  const urlBuffer = Buffer.alloc(urlOffsets[urlStrings.length]!);
  for (let u = 0; u < urlStrings.length; u++) urlBuffer.write(urlStrings[u]!, urlOffsets[u]!, 'utf8');

  return {
    vpaCount: n,
    sourceCount,
    keys,
    firstSeen,
    evidenceCount,
    riskCategory,
    evidenceWeight,
    categoryMask,
    sourceOffsets,
    sourceUrl,
    sourceCapturedAt,
    sourceScreenshot,
    urlStrings,
    urlCategoryCounts: urlCounts.subarray(0, urlStrings.length * SOURCE_COUNT),
    urlBytes: { bytes: new Uint8Array(urlBuffer.buffer, urlBuffer.byteOffset, urlBuffer.byteLength), offsets: urlOffsets },
  };
}

function concatBytes(parts: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

function popcount(mask: number): number {
  let count = 0;
  for (let m = mask; m !== 0; m &= m - 1) count++;
  return count;
}
