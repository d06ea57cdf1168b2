import type { ArrayField, SnapshotData, SnapshotMeta } from '../engine/snapshot-data.js';
import type { IndexArrays } from '../engine/vpa-index.js';

/** A snapshot's columns in the groups its writers make them: a build (assemble.ts) and a delta merge (delta-merge.ts). */
export interface SnapshotParts {
  readonly meta: SnapshotMeta;
  /** SnapshotData.maxKeyLength: a delta merge knows it; a build leaves it to the loader. */
  readonly maxKeyLength?: number;
  readonly index: IndexArrays;
  readonly vpas: Pick<SnapshotData, 'firstSeen' | 'confidence' | 'riskCategory' | 'evidenceCount' | 'vpaCluster' | 'evidenceWeight' | 'sourceCategoryMask'>;
  readonly mixedRisks: Pick<SnapshotData, Extract<ArrayField, `mixedRisk${string}`>>;
  readonly sources: Pick<SnapshotData, 'sourceOffsets' | 'sourceUrl' | 'sourceCapturedAt' | 'sourceFlags'>;
  readonly urls: Pick<SnapshotData, Extract<ArrayField, `url${string}`>>;
  readonly clusters: Pick<SnapshotData, Extract<ArrayField, `cluster${string}`>>;
}

/**
 * The one place the builder writes a SnapshotData's fields, in COLUMNS
 * order (snapshot-data.ts), so a build's snapshot and a delta's overlay
 * have the same shape.
 */
export function snapshotData(parts: SnapshotParts): SnapshotData {
  const { index, vpas, mixedRisks, sources, urls, clusters } = parts;
  return {
    meta: parts.meta,
    ...(parts.maxKeyLength === undefined ? {} : { maxKeyLength: parts.maxKeyLength }),
    slotTags: index.slotTags,
    slotEntries: index.slotEntries,
    keyTails: index.keyTails,
    vpaSlots: index.vpaSlots,
    firstSeen: vpas.firstSeen,
    confidence: vpas.confidence,
    riskCategory: vpas.riskCategory,
    evidenceCount: vpas.evidenceCount,
    vpaCluster: vpas.vpaCluster,
    sourceOffsets: sources.sourceOffsets,
    evidenceWeight: vpas.evidenceWeight,
    sourceCategoryMask: vpas.sourceCategoryMask,
    mixedRiskVpas: mixedRisks.mixedRiskVpas,
    mixedRiskCounts: mixedRisks.mixedRiskCounts,
    sourceUrl: sources.sourceUrl,
    sourceCapturedAt: sources.sourceCapturedAt,
    sourceFlags: sources.sourceFlags,
    urlBytes: urls.urlBytes,
    urlOffsets: urls.urlOffsets,
    urlCategory: urls.urlCategory,
    urlMembersBlob: urls.urlMembersBlob,
    urlMembersOffsets: urls.urlMembersOffsets,
    urlSlots: urls.urlSlots,
    clusterNumber: clusters.clusterNumber,
    clusterCreatedAt: clusters.clusterCreatedAt,
    clusterLastUpdated: clusters.clusterLastUpdated,
    clusterRiskCategory: clusters.clusterRiskCategory,
    clusterConfidence: clusters.clusterConfidence,
    clusterEvidenceCount: clusters.clusterEvidenceCount,
    clusterMembersBlob: clusters.clusterMembersBlob,
    clusterMembersOffsets: clusters.clusterMembersOffsets,
  };
}
