import { NOT_FOUND } from '../common/brand.js';
import { formatIso } from '../common/time.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../vpa/categories.js';
import { CONFIDENCE_SCALE, NO_CLUSTER, SOURCE_FLAG_SCREENSHOT, type SnapshotData, type SnapshotMeta } from './snapshot-data.js';
import { VpaIndex, type PackedBatch, type PackedQuery } from './vpa-index.js';
import { portableCardinality, portableDecode, portableIntersectionCardinality } from './roaring-portable.js';
import {
  NO_SOURCES,
  TOP_SOURCES_LIMIT,
  clearedBatchItem,
  compareCodeUnits,
  formatClusterId,
  parseClusterId,
  type BatchItem,
  type Cluster,
  type ClusterSource,
  type Source,
  type VpaVerdict,
} from './verdict.js';

/**
 * One loaded snapshot, answering the spec's questions. Immutable: a swap
 * replaces the whole object, so a request that took a reference finishes on
 * the snapshot it started with, and a batch is answered from one snapshot.
 * (What changes inside, cluster sizes read on first use and a scratch
 * buffer for cluster members, changes no answer. Every thread wraps the
 * shared arrays in a SnapshotView of its own, so none of that is shared
 * between threads.)
 */
export class SnapshotView {
  readonly meta: SnapshotMeta;
  /**
   * When the newest evidence in this snapshot was ingested (its creation time
   * when it holds none), epoch ms and ISO text: every response names it, so it
   * is formatted once per snapshot, not once per request.
   */
  readonly asOf: number;
  readonly asOfIso: string;
  readonly #data: SnapshotData;
  readonly #index: VpaIndex;
  readonly #urlText: Buffer;
  readonly #sizes: Uint32Array;
  /** Members of the cluster being assembled; grown to the largest cluster asked for. */
  #members = new Uint32Array(256);

  /**
   * `clustersOf`: a view whose cluster arrays `data` shares (a live delta's
   * overlay shares its snapshot's): its cluster sizes, read on first use,
   * are then read once for both.
   */
  constructor(data: SnapshotData, clustersOf?: SnapshotView) {
    this.meta = data.meta;
    this.asOf = data.meta.dataAsOf > 0 ? data.meta.dataAsOf : data.meta.createdAt;
    this.asOfIso = formatIso(this.asOf);
    this.#data = data;
    this.#index = new VpaIndex(data, data.maxKeyLength);
    if (clustersOf !== undefined && clustersOf.meta.clusterCount !== data.meta.clusterCount) {
      throw new RangeError(`a view with ${data.meta.clusterCount} clusters cannot share the ${clustersOf.meta.clusterCount} of another`);
    }
    this.#sizes = clustersOf === undefined ? new Uint32Array(data.meta.clusterCount) : clustersOf.#sizes;
    this.#urlText = Buffer.from(data.urlBytes.buffer, data.urlBytes.byteOffset, data.urlBytes.byteLength);
  }

  get data(): SnapshotData {
    return this.#data;
  }

  /** VpaId of a VPA (any letter case), or NOT_FOUND. Allocation-free. */
  lookup(upi: string): number {
    return this.#index.lookup(upi);
  }

  /** As lookup, for a query already packed (ServingView packs it once for the delta and the snapshot). */
  lookupPacked(query: PackedQuery): number {
    return this.#index.lookupPacked(query);
  }

  /** lookupPacked for every query of a batch, into `ids` (VpaIndex.lookupBatch: their memory reads overlap). */
  lookupBatch(batch: PackedBatch, ids: Int32Array): void {
    this.#index.lookupBatch(batch, ids);
  }

  /** lookupPacked for query `i` of a batch alone. */
  lookupBatchItem(batch: PackedBatch, i: number): number {
    return this.#index.lookupBatchItem(batch, i);
  }

  /** The key (lower-cased VPA) of the VPA with id `id`. */
  keyOf(id: number): string {
    return this.#index.keyOf(id);
  }

  /** The length of the longest VPA this snapshot holds. */
  get maxKeyLength(): number {
    return this.#index.maxKeyLength;
  }

  /** Full verdict for a syntactically valid VPA; `upi` is echoed as given. */
  verdict(upi: string): VpaVerdict {
    const id = this.#index.lookup(upi);
    return id === NOT_FOUND ? clearedVerdict(upi) : this.flaggedVerdict(id, upi);
  }

  /** Full verdict of the flagged VPA with id `id` (from `lookup`), echoing `upi`. */
  flaggedVerdict(id: number, upi: string): VpaVerdict {
    this.requireFlagged(id);
    const d = this.#data;
    const from = d.sourceOffsets[id]!;
    const to = d.sourceOffsets[id + 1]!;
    const sources = new Array<Source>(to - from);
    for (let s = from; s < to; s++) {
      const url = d.sourceUrl[s]!;
      sources[s - from] = {
        url: this.urlOf(url),
        category: SOURCE_CATEGORIES[d.urlCategory[url]!]!,
        captured_at: formatIso(d.sourceCapturedAt[s]!),
        screenshot_available: (d.sourceFlags[s]! & SOURCE_FLAG_SCREENSHOT) !== 0,
      };
    }
    const cluster = d.vpaCluster[id]!;
    return {
      upi,
      status: 'FLAGGED',
      confidence: d.confidence[id]! / CONFIDENCE_SCALE,
      risk_category: RISK_CATEGORIES[d.riskCategory[id]!]!,
      cluster_id: cluster === NO_CLUSTER ? null : formatClusterId(d.clusterNumber[cluster]!),
      cluster_size: cluster === NO_CLUSTER ? 0 : this.clusterSize(cluster),
      first_seen: formatIso(d.firstSeen[id]!),
      // Sources are newest first: the first one holds the latest capture.
      last_seen: sources[0]!.captured_at,
      sources,
      evidence_count: d.evidenceCount[id]!,
    };
  }

  /** Batch item for a syntactically valid VPA. */
  batchItem(upi: string): BatchItem {
    const id = this.#index.lookup(upi);
    return id === NOT_FOUND ? clearedBatchItem(upi) : this.flaggedBatchItem(id, upi);
  }

  /** Batch item of the flagged VPA with id `id` (from `lookup`), echoing `upi`. */
  flaggedBatchItem(id: number, upi: string): BatchItem {
    this.requireFlagged(id);
    const d = this.#data;
    const cluster = d.vpaCluster[id]!;
    return {
      upi,
      status: 'FLAGGED',
      confidence: d.confidence[id]! / CONFIDENCE_SCALE,
      risk_category: RISK_CATEGORIES[d.riskCategory[id]!]!,
      cluster_id: cluster === NO_CLUSTER ? null : formatClusterId(d.clusterNumber[cluster]!),
      cluster_size: cluster === NO_CLUSTER ? 0 : this.clusterSize(cluster),
      evidence_count: d.evidenceCount[id]!,
    };
  }

  /**
   * The cluster with this id, or null when no such cluster exists (or the id
   * is not canonical). Assembled on every call: the edge keeps the answers
   * worth keeping (api/cluster-answer-cache.ts).
   */
  cluster(clusterId: string): Cluster | null {
    const number = parseClusterId(clusterId);
    if (number < 0) return null;
    const ordinal = this.#clusterOrdinal(number);
    if (ordinal < 0) return null;
    return this.#assembleCluster(ordinal);
  }

  /** The url text of a url id. */
  urlOf(url: number): string {
    const d = this.#data;
    return this.#urlText.toString('utf8', d.urlOffsets[url]!, d.urlOffsets[url + 1]!);
  }

  /** Throws RangeError unless `id` names a flagged VPA of this snapshot (an id from `lookup`). */
  requireFlagged(id: number): void {
    if (!(Number.isInteger(id) && id >= 0 && id < this.meta.vpaCount)) throw new RangeError(`no flagged VPA with id ${id}`);
  }

  #clusterMemberBytes(ordinal: number): Uint8Array {
    const d = this.#data;
    return d.clusterMembersBlob.subarray(d.clusterMembersOffsets[ordinal]!, d.clusterMembersOffsets[ordinal + 1]!);
  }

  /** Members of the cluster with ordinal `ordinal` (a `vpaCluster` entry other than NO_CLUSTER). */
  clusterSize(ordinal: number): number {
    // Read on first use: a cluster has at least two members, so 0 means "not yet known".
    let size = this.#sizes[ordinal]!;
    if (size === 0) {
      size = portableCardinality(this.#clusterMemberBytes(ordinal));
      this.#sizes[ordinal] = size;
    }
    return size;
  }

  #clusterOrdinal(number: number): number {
    const numbers = this.#data.clusterNumber;
    let lo = 0;
    let hi = numbers.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const value = numbers[mid]!;
      if (value === number) return mid;
      if (value < number) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  #assembleCluster(ordinal: number): Cluster {
    const d = this.#data;
    const memberBytes = this.#clusterMemberBytes(ordinal);
    const size = this.clusterSize(ordinal);
    if (this.#members.length < size) this.#members = new Uint32Array(Math.max(size, 2 * this.#members.length));
    // A view of the reused buffer: valid until the next assembly, which cannot start before this one returns.
    const memberList = this.#members.subarray(0, portableDecode(memberBytes, this.#members));
    const urls = new Set<number>();
    const out = new Array(memberList.length);
    for (let i = 0; i < memberList.length; i++) {
      const id = memberList[i]!;
      out[i] = {
        upi: this.#index.keyOf(id),
        confidence: d.confidence[id]! / CONFIDENCE_SCALE,
        first_seen: formatIso(d.firstSeen[id]!),
      };
      for (let s = d.sourceOffsets[id]!; s < d.sourceOffsets[id + 1]!; s++) urls.add(d.sourceUrl[s]!);
    }
    const ranked: { url: number; text: string; count: number }[] = [];
    for (const url of urls) {
      // Counted off the url's serialised bitmap: members are sorted, and in a
      // built snapshot one contiguous run, so this reads a container header or two.
      const bytes = d.urlMembersBlob.subarray(d.urlMembersOffsets[url]!, d.urlMembersOffsets[url + 1]!);
      ranked.push({ url, text: this.urlOf(url), count: portableIntersectionCardinality(bytes, memberList) });
    }
    ranked.sort((a, b) => b.count - a.count || compareCodeUnits(a.text, b.text));
    const topSources: ClusterSource[] = ranked.slice(0, TOP_SOURCES_LIMIT).map((r) => ({
      url: r.text,
      category: SOURCE_CATEGORIES[d.urlCategory[r.url]!]!,
      member_count: r.count,
    }));
    return {
      cluster_id: formatClusterId(d.clusterNumber[ordinal]!),
      size: memberList.length,
      created_at: formatIso(d.clusterCreatedAt[ordinal]!),
      last_updated: formatIso(d.clusterLastUpdated[ordinal]!),
      risk_category: RISK_CATEGORIES[d.clusterRiskCategory[ordinal]!]!,
      confidence: d.clusterConfidence[ordinal]! / CONFIDENCE_SCALE,
      members: out,
      top_sources: topSources,
      total_evidence_count: d.clusterEvidenceCount[ordinal]!,
    };
  }
}

export function clearedVerdict(upi: string): VpaVerdict {
  return {
    upi,
    status: 'CLEARED',
    confidence: null,
    risk_category: null,
    cluster_id: null,
    cluster_size: 0,
    first_seen: null,
    last_seen: null,
    sources: NO_SOURCES,
    evidence_count: 0,
  };
}
