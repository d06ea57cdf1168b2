/**
 * The in-memory shape of one snapshot: plain typed arrays, so it encodes to
 * msgpack without per-record objects, can live in SharedArrayBuffers, and is
 * handed between threads without structured-clone walks.
 *
 * Conventions:
 * - VPA ids (VpaId) are positions 0..vpaCount-1. Ids are assigned in order of
 *   (cluster number, key), so a cluster's members are one contiguous run and
 *   its roaring bitmap is a single run container.
 * - `*Offsets` arrays have length count+1: item i spans [offsets[i], offsets[i+1]).
 * - Timestamps are epoch milliseconds (UTC) in Float64Arrays.
 * - Confidences are fixed point: value / CONFIDENCE_SCALE, in [0, 1].
 * - Roaring bitmaps are stored in roaring's portable serialisation,
 *   concatenated into one blob with an offsets array, and deserialised on
 *   demand, so loading a snapshot does no per-bitmap work.
 */
export const CONFIDENCE_SCALE = 10_000;

/** Sentinel in `vpaCluster` for a VPA that belongs to no cluster. */
export const NO_CLUSTER = 0xffffffff;

/** Bit in `sourceFlags`: an archived screenshot exists for this capture. */
export const SOURCE_FLAG_SCREENSHOT = 1;

export interface SnapshotMeta {
  /** Unique, sortable id; also the file name stem. */
  readonly id: string;
  /** When the build finished, epoch ms. */
  readonly createdAt: number;
  /** When the newest evidence in this snapshot was ingested, epoch ms (0 when there is none). */
  readonly dataAsOf: number;
  /** Reference time for recency in scoring, epoch ms. */
  readonly scoredAt: number;
  /** Names of the evidence files this snapshot was built from, sorted. */
  readonly evidenceFiles: readonly string[];
  /** The url fan-out cap in force when clusters were formed. */
  readonly urlMemberCap: number;
  readonly vpaCount: number;
  readonly urlCount: number;
  readonly clusterCount: number;
  readonly sourceCount: number;
  /** Distinct evidence items across all VPAs. */
  readonly evidenceCount: number;
  /** Evidence lines skipped as invalid or duplicate while building. */
  readonly skippedLines: number;
}

export interface SnapshotData {
  readonly meta: SnapshotMeta;
  /**
   * The length of the longest key, derived when a snapshot is loaded off the
   * serving thread (never stored in the file): wrapping the index then needs
   * no pass over the slot tags on the thread that serves requests, which at 10M
   * VPAs would stall it for milliseconds at every swap.
   */
  readonly maxKeyLength?: number;

  // Hashed index (vpa-index.ts, IndexArrays): open addressing over `capacity`
  // slots, each with a tag (the low hash byte and a key length code; 0 marks
  // an empty slot) and an entry of 8 words [vpaId + 1, the lower-cased key
  // bytes, packed].
  readonly slotTags: Uint16Array;
  readonly slotEntries: Uint32Array;
  // Tail records of keys too long for their entry: [length, the rest of the key, packed].
  readonly keyTails: Uint32Array;
  // The slot of each VPA (length vpaCount), for its key.
  readonly vpaSlots: Uint32Array;

  // Per VPA (length vpaCount unless noted).
  readonly firstSeen: Float64Array;
  readonly confidence: Uint16Array;
  readonly riskCategory: Uint8Array;
  readonly evidenceCount: Uint32Array;
  /** Cluster ordinal, or NO_CLUSTER. */
  readonly vpaCluster: Uint32Array;
  /** Length vpaCount+1; VPA i's sources are [sourceOffsets[i], sourceOffsets[i+1]), newest first. */
  readonly sourceOffsets: Uint32Array;

  // Per source (one per distinct (VPA, url) pair).
  readonly sourceUrl: Uint32Array;
  /** Latest capture of this VPA on this url. */
  readonly sourceCapturedAt: Float64Array;
  readonly sourceFlags: Uint8Array;

  // Per url.
  readonly urlBytes: Uint8Array;
  readonly urlOffsets: Uint32Array;
  /** Source category code of the url (most evidence; ties by SOURCE_TIE_ORDER). */
  readonly urlCategory: Uint8Array;
  /** Roaring bitmap of the VpaIds observed on each url. */
  readonly urlMembersBlob: Uint8Array;
  readonly urlMembersOffsets: Uint32Array;

  // Per cluster, ordered by ascending cluster number.
  readonly clusterNumber: Uint32Array;
  readonly clusterCreatedAt: Float64Array;
  readonly clusterLastUpdated: Float64Array;
  readonly clusterRiskCategory: Uint8Array;
  readonly clusterConfidence: Uint16Array;
  readonly clusterEvidenceCount: Uint32Array;
  /** Roaring bitmap of the member VpaIds of each cluster. */
  readonly clusterMembersBlob: Uint8Array;
  readonly clusterMembersOffsets: Uint32Array;
}

/** Names of the typed-array fields, in a fixed order (the codec and the shared-memory loader walk them). */
export const ARRAY_FIELDS = [
  'slotTags',
  'slotEntries',
  'keyTails',
  'vpaSlots',
  'firstSeen',
  'confidence',
  'riskCategory',
  'evidenceCount',
  'vpaCluster',
  'sourceOffsets',
  'sourceUrl',
  'sourceCapturedAt',
  'sourceFlags',
  'urlBytes',
  'urlOffsets',
  'urlCategory',
  'urlMembersBlob',
  'urlMembersOffsets',
  'clusterNumber',
  'clusterCreatedAt',
  'clusterLastUpdated',
  'clusterRiskCategory',
  'clusterConfidence',
  'clusterEvidenceCount',
  'clusterMembersBlob',
  'clusterMembersOffsets',
] as const satisfies readonly (keyof SnapshotData)[];

export type ArrayField = (typeof ARRAY_FIELDS)[number];

/** The hashed index's fields (vpa-index.ts, IndexArrays); the rest are the verdict, url and cluster columns. */
export const INDEX_FIELDS = ['slotTags', 'slotEntries', 'keyTails', 'vpaSlots'] as const satisfies readonly ArrayField[];
