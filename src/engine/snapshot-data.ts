import { RISK_CATEGORIES } from '../vpa/categories.js';

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
 * - A few columns are kept only so that new evidence can be merged into a
 *   VPA's answer exactly as a rebuild would compute it, without the VPA's
 *   earlier evidence (`evidenceWeight`, `sourceCategoryMask`, the mixed risk
 *   counts and `urlSlots`); answers do not read them.
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
  /**
   * How old evidence may be and still count, ms before `scoredAt` (0: it
   * never expires). Evidence captured earlier is in none of the columns, and
   * a delta over this snapshot leaves it out too (`countsFrom`). Absent in
   * files written before evidence could expire, and read as 0.
   */
  readonly evidenceMaxAgeMs: number;
  /**
   * How many corrections (evidence/corrections.ts, CorrectionState.sequence)
   * were recorded when the build read them: a server applies again over
   * this snapshot those recorded after. Absent in files written before
   * corrections existed, and read as 0.
   */
  readonly correctionSequence: number;
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
  /**
   * Σ recencyWeightUnits (builder/scoring.ts) of the VPA's evidence items at
   * meta.scoredAt: a whole number of units of 2^-32, exact in any order of
   * summation. Confidence was computed from it / 2^32.
   */
  readonly evidenceWeight: Float64Array;
  /** Bit i set when evidence of source category i names the VPA; never 0. */
  readonly sourceCategoryMask: Uint8Array;
  /**
   * Ascending ids of the VPAs whose evidence names two or more risk
   * categories (any length up to vpaCount). Every other VPA's evidence is all
   * of category `riskCategory[id]`: see riskCountsOf.
   */
  readonly mixedRiskVpas: Uint32Array;
  /** Evidence items per risk category (RISK_CATEGORIES order) of each mixedRiskVpas entry: MIXED_RISK_STRIDE per entry. */
  readonly mixedRiskCounts: Uint32Array;

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
  /**
   * Url bytes to url id (engine/url-lookup.ts): open addressing with linear
   * probing over a power-of-two number of slots, each holding url id + 1, or
   * 0 when empty.
   */
  readonly urlSlots: Uint32Array;

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

export type AnyTypedArray = Uint8Array | Uint16Array | Uint32Array | Float64Array;

/**
 * What a column's length counts, as snapshot-format/validate.ts holds it to
 * the meta's counts: one entry per VPA, source, url or cluster, one more
 * for an offsets array, or 'own' for a length with a rule of its own
 * (index slots, blobs, the mixed risk lists, the url table).
 */
export type ColumnLength = 'vpas' | 'vpas + 1' | 'sources' | 'urls' | 'urls + 1' | 'clusters' | 'clusters + 1' | 'own';

/**
 * Every typed-array column of SnapshotData, in a fixed order (the file, the
 * codec and the shared-memory loader walk them): its class, in the file and
 * in memory, and what its length counts.
 */
export const COLUMNS = {
  slotTags: { type: Uint16Array, length: 'own' },
  slotEntries: { type: Uint32Array, length: 'own' },
  keyTails: { type: Uint32Array, length: 'own' },
  vpaSlots: { type: Uint32Array, length: 'vpas' },
  firstSeen: { type: Float64Array, length: 'vpas' },
  confidence: { type: Uint16Array, length: 'vpas' },
  riskCategory: { type: Uint8Array, length: 'vpas' },
  evidenceCount: { type: Uint32Array, length: 'vpas' },
  vpaCluster: { type: Uint32Array, length: 'vpas' },
  sourceOffsets: { type: Uint32Array, length: 'vpas + 1' },
  evidenceWeight: { type: Float64Array, length: 'vpas' },
  sourceCategoryMask: { type: Uint8Array, length: 'vpas' },
  mixedRiskVpas: { type: Uint32Array, length: 'own' },
  mixedRiskCounts: { type: Uint32Array, length: 'own' },
  sourceUrl: { type: Uint32Array, length: 'sources' },
  sourceCapturedAt: { type: Float64Array, length: 'sources' },
  sourceFlags: { type: Uint8Array, length: 'sources' },
  urlBytes: { type: Uint8Array, length: 'own' },
  urlOffsets: { type: Uint32Array, length: 'urls + 1' },
  urlCategory: { type: Uint8Array, length: 'urls' },
  urlMembersBlob: { type: Uint8Array, length: 'own' },
  urlMembersOffsets: { type: Uint32Array, length: 'urls + 1' },
  urlSlots: { type: Uint32Array, length: 'own' },
  clusterNumber: { type: Uint32Array, length: 'clusters' },
  clusterCreatedAt: { type: Float64Array, length: 'clusters' },
  clusterLastUpdated: { type: Float64Array, length: 'clusters' },
  clusterRiskCategory: { type: Uint8Array, length: 'clusters' },
  clusterConfidence: { type: Uint16Array, length: 'clusters' },
  clusterEvidenceCount: { type: Uint32Array, length: 'clusters' },
  clusterMembersBlob: { type: Uint8Array, length: 'own' },
  clusterMembersOffsets: { type: Uint32Array, length: 'clusters + 1' },
} as const satisfies { readonly [K in TypedArrayKey<SnapshotData>]: { readonly type: ClassOf<SnapshotData[K]>; readonly length: ColumnLength } };

/** The keys of `T` that hold typed arrays: the mapped type above makes COLUMNS list every one, with its field's class. */
type TypedArrayKey<T> = { [K in keyof T]-?: T[K] extends AnyTypedArray ? K : never }[keyof T];
type ClassOf<A> = A extends Uint8Array
  ? Uint8ArrayConstructor
  : A extends Uint16Array
    ? Uint16ArrayConstructor
    : A extends Uint32Array
      ? Uint32ArrayConstructor
      : Float64ArrayConstructor;

export type ArrayField = keyof typeof COLUMNS;

/** Names of the typed-array fields, in COLUMNS order. */
export const ARRAY_FIELDS = Object.keys(COLUMNS) as readonly ArrayField[];

/** The columns whose length counts `length`, in COLUMNS order. */
export function columnsCounting(length: ColumnLength): readonly ArrayField[] {
  return ARRAY_FIELDS.filter((field) => COLUMNS[field].length === length);
}

/** The hashed index's fields (vpa-index.ts, IndexArrays); the rest are the verdict, url and cluster columns. */
export const INDEX_FIELDS = ['slotTags', 'slotEntries', 'keyTails', 'vpaSlots'] as const satisfies readonly ArrayField[];

/** Counters per entry of `mixedRiskCounts`: one per risk category. */
export const MIXED_RISK_STRIDE = RISK_CATEGORIES.length;

/**
 * The evidence items per risk category (RISK_CATEGORIES order) of VPA `id`,
 * into `out` (at least MIXED_RISK_STRIDE long): its mixedRiskCounts when it
 * is listed in mixedRiskVpas (a binary search), else all of its evidence in
 * its riskCategory. Allocation-free.
 */
export function riskCountsOf(
  data: Pick<SnapshotData, 'mixedRiskVpas' | 'mixedRiskCounts' | 'riskCategory' | 'evidenceCount'>,
  id: number,
  out: Uint32Array,
): void {
  const vpas = data.mixedRiskVpas;
  let low = 0;
  let high = vpas.length - 1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    const v = vpas[mid]!;
    if (v < id) low = mid + 1;
    else if (v > id) high = mid - 1;
    else {
      const at = mid * MIXED_RISK_STRIDE;
      for (let c = 0; c < MIXED_RISK_STRIDE; c++) out[c] = data.mixedRiskCounts[at + c]!;
      return;
    }
  }
  for (let c = 0; c < MIXED_RISK_STRIDE; c++) out[c] = 0;
  out[data.riskCategory[id]!] = data.evidenceCount[id]!;
}

/** The earliest `first_seen` of a snapshot's VPAs, epoch ms: its oldest evidence that counts (Infinity with none). */
export function earliestFirstSeen(data: SnapshotData): number {
  const { firstSeen } = data;
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < data.meta.vpaCount; i++) if (firstSeen[i]! < least) least = firstSeen[i]!;
  return least;
}

/** Bytes of a snapshot's arrays (a file's one buffer, or a build's many). */
export function snapshotBytes(data: SnapshotData): number {
  let bytes = 0;
  for (const field of ARRAY_FIELDS) bytes += data[field].byteLength;
  return bytes;
}
