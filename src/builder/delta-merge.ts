import { NOT_FOUND } from '../common/brand.js';
import type { ArrayAllocator } from '../common/scratch-arrays.js';
import { freshSharedArrays } from '../engine/shared-arrays.js';
import { NOT_IN_SNAPSHOT, dataVersion, type DeltaData, type DeltaMeta } from '../engine/delta-data.js';
import { NO_CLUSTER, SOURCE_FLAG_SCREENSHOT, riskCountsOf, type SnapshotData } from '../engine/snapshot-data.js';
import { buildUrlSlots, findUrl } from '../engine/url-lookup.js';
import { VpaIndex, buildIndexArrays, encodeKeys, longestKey } from '../engine/vpa-index.js';
import { portableCardinality } from '../engine/roaring-portable.js';
import { RISK_CATEGORIES, RISK_RANK, SOURCE_CATEGORIES, SOURCE_RANK, dominant } from '../vpa/categories.js';
import { RecordReader, FLAG_SCREENSHOT, RecordWriter } from './record-codec.js';
import { WEIGHT_UNITS, categoriesIn, recencyWeightUnits, vpaConfidence } from './scoring.js';

/**
 * Merging new evidence into the live delta (engine/delta-data.ts), off the
 * serving threads: a pure function of the snapshot, the delta so far and
 * deduplicated records, run on a pool thread.
 *
 * Every per-VPA field follows the same rules as a build (README, "Scoring
 * and clusters"), over the VPA's evidence in the snapshot and in the delta
 * together. The snapshot keeps what that takes (snapshot-data.ts: the
 * evidence weight in whole units, the source category mask, the risk counts
 * of VPAs with more than one risk category), so the merge needs none of the
 * snapshot's earlier evidence, and for the fields the delta settles its
 * answer is the answer a build of the same evidence at the snapshot's
 * scoring time gives. What spans many VPAs waits for compaction:
 * - clusters (a VPA keeps its snapshot cluster; a new one has none);
 * - the category of a url the snapshot knew (the snapshot's majority; a url
 *   new in the delta takes the majority of the delta's evidence, which is
 *   all of its evidence);
 * - the peers term of confidence of VPAs the delta did not touch (a touched
 *   VPA counts the VPAs known on each of its urls, the snapshot's and the
 *   delta's).
 * Confidence is scored at the snapshot's scoring time, so every term only
 * grows as evidence arrives: a VPA's confidence never drops below what the
 * snapshot or an earlier delta gave it.
 */

export interface DeltaMergeTask {
  /** The snapshot served beside the delta; `maxKeyLength` set (SnapshotData). */
  readonly base: SnapshotData;
  /** The delta so far over the same snapshot, or null to start one. */
  readonly previous: DeltaData | null;
  /** Deduplicated records (record-codec.ts, ids dropped), in any order and possibly holding records of other chunks. */
  readonly inputs: readonly ArrayBufferLike[];
  /** The files to apply, each by the chunks its records carry: a record of any other chunk is skipped. */
  readonly files: readonly DeltaFile[];
  /** Now, epoch ms: the delta's age starts here when it starts. */
  readonly now: number;
}

/** An evidence file's place in the builder's chunk numbering (builder/carry.ts), and when it was stored. */
export interface DeltaFile {
  readonly name: string;
  /** Its chunks are [firstChunk, endChunk). */
  readonly firstChunk: number;
  readonly endChunk: number;
  /** When it was stored (evidence/store.ts, evidenceFileTime), epoch ms. */
  readonly storedAt: number;
}

export interface DeltaMergeResult {
  readonly delta: DeltaData;
  /** The records applied, one buffer per file of `files` (empty for a file with none kept), to merge again over a later snapshot. */
  readonly applied: readonly AppliedFile[];
}

export interface AppliedFile {
  readonly file: DeltaFile;
  readonly records: ArrayBuffer;
  readonly count: number;
}

const RISK_COUNT = RISK_CATEGORIES.length;
const SOURCE_COUNT = SOURCE_CATEGORIES.length;

interface UrlRow {
  id: number;
  readonly bytes: Uint8Array;
  readonly base: number;
  readonly evidence: Uint32Array;
  members: number;
}

interface SourceRow {
  readonly url: UrlRow;
  capturedAt: number;
  screenshot: boolean;
}

interface VpaRow {
  readonly key: string;
  readonly base: number;
  firstSeen: number;
  evidenceCount: number;
  weightUnits: number;
  categoryMask: number;
  readonly risk: Uint32Array;
  readonly sources: Map<UrlRow, SourceRow>;
}

/** Merge `task.inputs` into the delta; see the module comment. */
export function mergeDelta(task: DeltaMergeTask): DeltaMergeResult {
  const { base, previous } = task;
  if (previous !== null && previous.meta.baseId !== base.meta.id) {
    throw new RangeError(`delta over snapshot ${previous.meta.baseId} cannot be merged over snapshot ${base.meta.id}`);
  }
  const state = new MergeState(base);
  if (previous !== null) state.load(previous);
  const applied = state.apply(task.inputs, task.files);
  const files = [...new Set([...(previous?.meta.files ?? []), ...task.files.map((f) => f.name)])];
  const dataAsOf = task.files.reduce((newest, f) => Math.max(newest, f.storedAt), previous?.meta.dataAsOf ?? 0);
  const evidenceItems = (previous?.meta.evidenceItems ?? 0) + applied.reduce((sum, a) => sum + a.count, 0);
  const changed = applied.some((a) => a.count > 0);
  const position = (previous?.meta.position ?? 0) + (changed ? 1 : 0);
  const since = previous === null || previous.meta.vpaCount === 0 ? task.now : previous.meta.since;
  const delta = state.finish({ baseId: base.meta.id, position, files, dataAsOf, since, evidenceItems });
  return { delta, applied };
}

/** An empty delta over `base`: what a server serves beside a snapshot until evidence arrives. */
export function emptyDelta(base: SnapshotData, now: number): DeltaData {
  return new MergeState(base).finish({ baseId: base.meta.id, position: 0, files: [], dataAsOf: 0, since: now, evidenceItems: 0 });
}

class MergeState {
  readonly #base: SnapshotData;
  readonly #baseIndex: VpaIndex;
  readonly #scoredAt: number;
  readonly #vpas = new Map<string, VpaRow>();
  readonly #urls = new Map<string, UrlRow>();
  readonly #baseRisk = new Uint32Array(RISK_COUNT);

  constructor(base: SnapshotData) {
    this.#base = base;
    this.#baseIndex = new VpaIndex(base, base.maxKeyLength);
    this.#scoredAt = base.meta.scoredAt;
  }

  /** Take in a delta built over the same snapshot, row by row. */
  load(previous: DeltaData): void {
    const o = previous.overlay;
    const index = new VpaIndex(o, o.maxKeyLength);
    const urls: UrlRow[] = [];
    for (let u = 0; u < o.meta.urlCount; u++) {
      const bytes = o.urlBytes.slice(o.urlOffsets[u]!, o.urlOffsets[u + 1]!);
      const row: UrlRow = {
        id: -1,
        bytes,
        base: fromStored(previous.urlBase[u]!),
        evidence: previous.urlEvidence.slice(u * SOURCE_COUNT, (u + 1) * SOURCE_COUNT),
        members: previous.urlMembers[u]!,
      };
      urls.push(row);
      this.#urls.set(latin1(bytes), row);
    }
    for (let v = 0; v < o.meta.vpaCount; v++) {
      const risk = new Uint32Array(RISK_COUNT);
      riskCountsOf(o, v, risk);
      const row: VpaRow = {
        key: index.keyOf(v),
        base: fromStored(previous.baseVpa[v]!),
        firstSeen: o.firstSeen[v]!,
        evidenceCount: o.evidenceCount[v]!,
        weightUnits: o.evidenceWeight[v]!,
        categoryMask: o.sourceCategoryMask[v]!,
        risk,
        sources: new Map(),
      };
      for (let s = o.sourceOffsets[v]!; s < o.sourceOffsets[v + 1]!; s++) {
        const url = urls[o.sourceUrl[s]!]!;
        row.sources.set(url, { url, capturedAt: o.sourceCapturedAt[s]!, screenshot: (o.sourceFlags[s]! & SOURCE_FLAG_SCREENSHOT) !== 0 });
      }
      this.#vpas.set(row.key, row);
    }
  }

  /** Apply the records of `files` found in `inputs`; returns them per file. */
  apply(inputs: readonly ArrayBufferLike[], files: readonly DeltaFile[]): AppliedFile[] {
    const writers = files.map(() => new RecordWriter(4096));
    const counts = files.map(() => 0);
    for (const input of inputs) {
      const reader = new RecordReader(input);
      const raw = reader.raw;
      while (reader.next()) {
        const f = fileOf(files, reader.chunk);
        if (f < 0) continue;
        writers[f]!.appendRaw(raw, reader.rawStart, reader.rawEnd);
        counts[f]!++;
        this.#applyRecord(raw, reader.upiStart, reader.urlStart, reader.idStart, reader.capturedAt, reader.flags);
      }
    }
    return files.map((file, i) => ({ file, records: writers[i]!.finish(), count: counts[i]! }));
  }

  #applyRecord(raw: Uint8Array, upiStart: number, urlStart: number, urlEnd: number, capturedAt: number, flags: number): void {
    const row = this.#vpaRow(latin1(raw.subarray(upiStart, urlStart)));
    const url = this.#urlRow(raw, urlStart, urlEnd);
    const sourceCategory = flags & 3;
    const riskCategory = (flags >> 2) & 7;
    const screenshot = (flags & FLAG_SCREENSHOT) !== 0;
    if (capturedAt < row.firstSeen) row.firstSeen = capturedAt;
    row.evidenceCount++;
    row.weightUnits += recencyWeightUnits(capturedAt, this.#scoredAt);
    row.categoryMask |= 1 << sourceCategory;
    row.risk[riskCategory]!++;
    url.evidence[sourceCategory]!++;
    const source = row.sources.get(url);
    if (source === undefined) {
      // The VPA is new on this url: one more VPA known there.
      row.sources.set(url, { url, capturedAt, screenshot });
      url.members++;
    } else {
      if (capturedAt > source.capturedAt) source.capturedAt = capturedAt;
      if (screenshot) source.screenshot = true;
    }
  }

  /** The row of a VPA: from the delta so far, else from the snapshot, else a new one. */
  #vpaRow(key: string): VpaRow {
    let row = this.#vpas.get(key);
    if (row !== undefined) return row;
    const b = this.#base;
    const id = this.#baseIndex.lookup(key);
    if (id === NOT_FOUND) {
      row = { key, base: NOT_FOUND, firstSeen: Number.POSITIVE_INFINITY, evidenceCount: 0, weightUnits: 0, categoryMask: 0, risk: new Uint32Array(RISK_COUNT), sources: new Map() };
    } else {
      const risk = new Uint32Array(RISK_COUNT);
      riskCountsOf(b, id, this.#baseRisk);
      risk.set(this.#baseRisk);
      row = {
        key,
        base: id,
        firstSeen: b.firstSeen[id]!,
        evidenceCount: b.evidenceCount[id]!,
        weightUnits: b.evidenceWeight[id]!,
        categoryMask: b.sourceCategoryMask[id]!,
        risk,
        sources: new Map(),
      };
      for (let s = b.sourceOffsets[id]!; s < b.sourceOffsets[id + 1]!; s++) {
        const u = b.sourceUrl[s]!;
        const url = this.#urlRow(b.urlBytes, b.urlOffsets[u]!, b.urlOffsets[u + 1]!, u);
        row.sources.set(url, { url, capturedAt: b.sourceCapturedAt[s]!, screenshot: (b.sourceFlags[s]! & SOURCE_FLAG_SCREENSHOT) !== 0 });
      }
    }
    this.#vpas.set(key, row);
    return row;
  }

  /** The row of a url: from the delta so far, else a new one, knowing its snapshot id and members when the snapshot has it. */
  #urlRow(bytes: Uint8Array, start: number, end: number, baseId = -1): UrlRow {
    const key = latin1(bytes.subarray(start, end));
    let row = this.#urls.get(key);
    if (row !== undefined) return row;
    const b = this.#base;
    const base = baseId >= 0 ? baseId : findUrl(b, bytes, start, end);
    const members = base === NOT_FOUND ? 0 : portableCardinality(b.urlMembersBlob.subarray(b.urlMembersOffsets[base]!, b.urlMembersOffsets[base + 1]!));
    row = { id: -1, bytes: bytes.slice(start, end), base, evidence: new Uint32Array(SOURCE_COUNT), members };
    this.#urls.set(key, row);
    return row;
  }

  /** Lay the rows out as a DeltaData, in shared memory. */
  finish(fields: Omit<DeltaMeta, 'vpaCount' | 'bytes'>): DeltaData {
    const b = this.#base;
    const arrays: ArrayAllocator = freshSharedArrays;
    // VPAs in key order and urls in byte order: the same evidence always lays out the same delta.
    const rows = [...this.#vpas.values()].sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
    // Every url row belongs to a source: rows are made only for one.
    const urlRows = [...this.#urls.values()];
    urlRows.sort((x, y) => Buffer.compare(x.bytes, y.bytes));
    urlRows.forEach((u, i) => (u.id = i));
    const n = rows.length;

    const { keyBytes, keyOffsets } = encodeKeys(rows.map((r) => r.key));
    const index = buildIndexArrays(keyBytes, keyOffsets, n, { arrays });
    const urlOffsets = arrays.zeroed(Uint32Array, urlRows.length + 1);
    let urlByteTotal = 0;
    for (const u of urlRows) urlByteTotal += u.bytes.length;
    const urlBytes = arrays.zeroed(Uint8Array, urlByteTotal);
    const urlCategory = arrays.zeroed(Uint8Array, urlRows.length);
    const urlBase = arrays.zeroed(Uint32Array, urlRows.length);
    const urlEvidence = arrays.zeroed(Uint32Array, urlRows.length * SOURCE_COUNT);
    const urlMembers = arrays.zeroed(Uint32Array, urlRows.length);
    let at = 0;
    urlRows.forEach((u, i) => {
      urlBytes.set(u.bytes, at);
      at += u.bytes.length;
      urlOffsets[i + 1] = at;
      // A url the snapshot knew keeps its category until compaction; a new one's evidence is all in the delta.
      urlCategory[i] = u.base !== NOT_FOUND ? b.urlCategory[u.base]! : dominant(u.evidence, 0, SOURCE_COUNT, SOURCE_RANK);
      urlBase[i] = u.base === NOT_FOUND ? NOT_IN_SNAPSHOT : u.base;
      urlEvidence.set(u.evidence, i * SOURCE_COUNT);
      urlMembers[i] = u.members;
    });

    const sourceCount = rows.reduce((sum, r) => sum + r.sources.size, 0);
    const firstSeen = arrays.zeroed(Float64Array, n);
    const confidence = arrays.zeroed(Uint16Array, n);
    const riskCategory = arrays.zeroed(Uint8Array, n);
    const evidenceCount = arrays.zeroed(Uint32Array, n);
    const vpaCluster = arrays.zeroed(Uint32Array, n);
    const sourceOffsets = arrays.zeroed(Uint32Array, n + 1);
    const evidenceWeight = arrays.zeroed(Float64Array, n);
    const sourceCategoryMask = arrays.zeroed(Uint8Array, n);
    const baseVpa = arrays.zeroed(Uint32Array, n);
    const sourceUrl = arrays.zeroed(Uint32Array, sourceCount);
    const sourceCapturedAt = arrays.zeroed(Float64Array, sourceCount);
    const sourceFlags = arrays.zeroed(Uint8Array, sourceCount);
    const mixed = rows.flatMap((r, v) => (r.risk.filter((c) => c > 0).length > 1 ? [v] : []));
    const mixedRiskVpas = arrays.zeroed(Uint32Array, mixed.length);
    const mixedRiskCounts = arrays.zeroed(Uint32Array, mixed.length * RISK_COUNT);
    mixed.forEach((v, i) => {
      mixedRiskVpas[i] = v;
      mixedRiskCounts.set(rows[v]!.risk, i * RISK_COUNT);
    });
    let evidenceTotal = 0;
    let s = 0;
    rows.forEach((r, v) => {
      firstSeen[v] = r.firstSeen;
      riskCategory[v] = dominant(r.risk, 0, RISK_COUNT, RISK_RANK);
      evidenceCount[v] = r.evidenceCount;
      evidenceTotal += r.evidenceCount;
      vpaCluster[v] = r.base === NOT_FOUND ? NO_CLUSTER : b.vpaCluster[r.base]!;
      evidenceWeight[v] = r.weightUnits;
      sourceCategoryMask[v] = r.categoryMask;
      baseVpa[v] = r.base === NOT_FOUND ? NOT_IN_SNAPSHOT : r.base;
      // Newest first; equal captures by url bytes, as a build orders them.
      const sources = [...r.sources.values()].sort((x, y) => y.capturedAt - x.capturedAt || Buffer.compare(x.url.bytes, y.url.bytes));
      let peers = 0;
      for (const source of sources) {
        sourceUrl[s] = source.url.id;
        sourceCapturedAt[s] = source.capturedAt;
        sourceFlags[s] = source.screenshot ? SOURCE_FLAG_SCREENSHOT : 0;
        peers = Math.max(peers, source.url.members - 1);
        s++;
      }
      sourceOffsets[v + 1] = s;
      confidence[v] = vpaConfidence({
        evidenceWeight: r.weightUnits / WEIGHT_UNITS,
        distinctUrls: sources.length,
        distinctSourceCategories: categoriesIn(r.categoryMask),
        peers,
      });
    });

    const meta = {
      id: dataVersion(fields.baseId, fields.position),
      createdAt: Date.now(),
      dataAsOf: fields.dataAsOf,
      scoredAt: b.meta.scoredAt,
      evidenceFiles: fields.files,
      urlMemberCap: b.meta.urlMemberCap,
      vpaCount: n,
      urlCount: urlRows.length,
      clusterCount: b.meta.clusterCount,
      sourceCount,
      evidenceCount: evidenceTotal,
      skippedLines: 0,
    };
    const emptyMembers = arrays.zeroed(Uint32Array, urlRows.length + 1);
    const overlay: SnapshotData = {
      meta,
      maxKeyLength: longestKey(index),
      ...index,
      firstSeen,
      confidence,
      riskCategory,
      evidenceCount,
      vpaCluster,
      sourceOffsets,
      sourceUrl,
      sourceCapturedAt,
      sourceFlags,
      urlBytes,
      urlOffsets,
      urlCategory,
      // Url membership is the snapshot's business (cluster answers); the delta's urls list none.
      urlMembersBlob: arrays.zeroed(Uint8Array, 0),
      urlMembersOffsets: emptyMembers,
      urlSlots: buildUrlSlots(urlBytes, urlOffsets, arrays),
      evidenceWeight,
      sourceCategoryMask,
      mixedRiskVpas,
      mixedRiskCounts,
      // The snapshot's clusters, shared, not copied.
      clusterNumber: b.clusterNumber,
      clusterCreatedAt: b.clusterCreatedAt,
      clusterLastUpdated: b.clusterLastUpdated,
      clusterRiskCategory: b.clusterRiskCategory,
      clusterConfidence: b.clusterConfidence,
      clusterEvidenceCount: b.clusterEvidenceCount,
      clusterMembersBlob: b.clusterMembersBlob,
      clusterMembersOffsets: b.clusterMembersOffsets,
    };
    const own = [baseVpa, urlBase, urlEvidence, urlMembers, ...OWN_FIELDS.map((field) => overlay[field])];
    const bytes = own.reduce((sum, array) => sum + array.byteLength, 0);
    return { meta: { ...fields, vpaCount: n, bytes }, overlay, baseVpa, urlBase, urlEvidence, urlMembers };
  }
}

/** The overlay's arrays of its own; the rest are the snapshot's. */
const OWN_FIELDS = [
  'slotTags', 'slotEntries', 'keyTails', 'vpaSlots',
  'firstSeen', 'confidence', 'riskCategory', 'evidenceCount', 'vpaCluster', 'sourceOffsets',
  'evidenceWeight', 'sourceCategoryMask', 'mixedRiskVpas', 'mixedRiskCounts',
  'sourceUrl', 'sourceCapturedAt', 'sourceFlags',
  'urlBytes', 'urlOffsets', 'urlCategory', 'urlMembersBlob', 'urlMembersOffsets', 'urlSlots',
] as const satisfies readonly (keyof SnapshotData)[];

/** Index into `files` (ascending, not overlapping) of the file whose chunks hold `chunk`, or -1. */
function fileOf(files: readonly DeltaFile[], chunk: number): number {
  let lo = 0;
  let hi = files.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const f = files[mid]!;
    if (chunk < f.firstChunk) hi = mid - 1;
    else if (chunk >= f.endChunk) lo = mid + 1;
    else return mid;
  }
  return -1;
}

/** A snapshot id as `baseVpa` and `urlBase` store it, as a lookup answers it. */
function fromStored(id: number): number {
  return id === NOT_IN_SNAPSHOT ? NOT_FOUND : id;
}

function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}
