import { NOT_FOUND } from '../common/brand.js';
import type { ArrayAllocator } from '../common/scratch-arrays.js';
import { freshSharedArrays } from '../engine/shared-arrays.js';
import { NOT_IN_SNAPSHOT, dataVersion, type DeltaData, type DeltaMeta } from '../engine/delta-data.js';
import { ARRAY_FIELDS, NO_CLUSTER, SOURCE_FLAG_SCREENSHOT, riskCountsOf, type SnapshotData } from '../engine/snapshot-data.js';
import { buildUrlSlots, findUrl } from '../engine/url-lookup.js';
import { buildKeyFilter } from '../engine/key-filter.js';
import { VpaIndex, buildIndexArrays, encodeKeys, longestKey } from '../engine/vpa-index.js';
import { portableCardinality } from '../engine/roaring-portable.js';
import { RISK_CATEGORIES, RISK_RANK, SOURCE_CATEGORIES, SOURCE_RANK, dominant } from '../vpa/categories.js';
import { RecordReader, FLAG_SCREENSHOT, RecordWriter } from './record-codec.js';
import { snapshotData } from './snapshot-parts.js';
import { clearanceTable, type ClearanceEntry, type ClearanceTable } from './clearance-filter.js';
import { WEIGHT_UNITS, categoriesIn, countsFrom, recencyWeightUnits, vpaConfidence } from './scoring.js';

/**
 * Merging new evidence into the live delta (engine/delta-data.ts), off the
 * serving threads: a pure function of the snapshot, the delta so far and
 * deduplicated records, run on a pool thread.
 *
 * Every per-VPA field follows the same rules as a build (docs/scoring.md),
 * over the VPA's evidence in the snapshot and in the delta
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
 * - the peers term of confidence of VPAs the delta does not hold (a VPA in
 *   the delta counts the VPAs known on each of its urls, the snapshot's and
 *   the delta's, and is scored again when one of its urls gains a VPA).
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
  /**
   * The delta's position afterwards (X-Data-Version): a follower names the
   * evidence log's position, so every replica names one state alike. By
   * default one more than before when anything was applied.
   */
  readonly position?: number;
  /** Clearances in force (clearance-filter.ts): a record they suppress is kept for the next snapshot's merge but not applied. */
  readonly clearances?: readonly ClearanceEntry[];
  /**
   * A correction: the VPAs `upis` answered afresh, after `inputs`, from
   * `records` alone (every record of theirs that is not retracted; expiry
   * and `clearances` apply as to any record). A VPA left with none is
   * answered CLEARED (a row with no evidence, which ServingView does not
   * find). What spans VPAs waits for compaction as with new evidence: the
   * category of a url, the peers term of VPAs not reset, clusters.
   */
  readonly reset?: { readonly upis: readonly string[]; readonly records: ArrayBuffer };
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

/** Merge `task.inputs` into the delta; see the module comment. */
export function mergeDelta(task: DeltaMergeTask): DeltaMergeResult {
  const { base, previous } = task;
  if (previous !== null && previous.meta.baseId !== base.meta.id) {
    throw new RangeError(`delta over snapshot ${previous.meta.baseId} cannot be merged over snapshot ${base.meta.id}`);
  }
  const state = new MergeState(base, previous, task.clearances);
  const applied = state.apply(task.inputs, task.files);
  if (task.reset !== undefined) state.reset(task.reset.upis, task.reset.records);
  const files = [...new Set([...(previous?.meta.files ?? []), ...task.files.map((f) => f.name)])];
  const dataAsOf = task.files.reduce((newest, f) => Math.max(newest, f.storedAt), previous?.meta.dataAsOf ?? 0);
  const evidenceItems = (previous?.meta.evidenceItems ?? 0) + applied.reduce((sum, a) => sum + a.count, 0);
  const changed = applied.some((a) => a.count > 0) || task.reset !== undefined;
  const position = task.position ?? (previous?.meta.position ?? 0) + (changed ? 1 : 0);
  const since = previous === null || previous.meta.vpaCount === 0 ? task.now : previous.meta.since;
  const delta = state.finish({ baseId: base.meta.id, position, files, dataAsOf, since, evidenceItems });
  return { delta, applied };
}

/** An empty delta over `base` (at `position`, DeltaMergeTask.position): what a server serves beside a snapshot until evidence arrives. */
export function emptyDelta(base: SnapshotData, now: number, position = 0): DeltaData {
  return new MergeState(base, null).finish({ baseId: base.meta.id, position, files: [], dataAsOf: 0, since: now, evidenceItems: 0 });
}

/** A url the merge changes or adds; `id` is its id in the delta (its earlier one when it had one). */
interface UrlRow {
  readonly id: number;
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

/** A VPA the merge changes or adds, its figures merged so far; `id` is its id in the delta (its earlier one when it had one). */
interface VpaRow {
  readonly key: string;
  readonly id: number;
  readonly base: number;
  firstSeen: number;
  evidenceCount: number;
  weightUnits: number;
  categoryMask: number;
  readonly risk: Uint32Array;
  readonly sources: Map<UrlRow, SourceRow>;
}

/**
 * The merge of one batch of records. Only the VPAs and urls the records
 * name are read (from the delta so far, else from the snapshot) and
 * changed; the rest of the delta is copied array by array, VPAs and urls
 * keeping their ids and new ones appended, so a merge costs the records it
 * applies and a copy of the delta, not a pass over the delta's rows in
 * JavaScript objects (bench/MEASUREMENTS.md, "The live delta").
 */
class MergeState {
  readonly #base: SnapshotData;
  readonly #baseIndex: VpaIndex;
  readonly #scoredAt: number;
  /** Records captured before this do not count under the snapshot's expiry (scoring.ts, countsFrom). */
  readonly #countsFrom: number;
  readonly #cleared: ClearanceTable | null;
  readonly #previous: DeltaData | null;
  readonly #previousIndex: VpaIndex | null;
  readonly #vpas = new Map<string, VpaRow>();
  readonly #urls = new Map<string, UrlRow>();
  /** The delta's VPAs and urls so far: the ones kept, and the next ids given out. */
  readonly #keptVpas: number;
  readonly #keptUrls: number;
  #vpaCount: number;
  #urlCount: number;

  constructor(base: SnapshotData, previous: DeltaData | null, clearances?: readonly ClearanceEntry[]) {
    this.#base = base;
    this.#cleared = clearanceTable(clearances);
    this.#baseIndex = new VpaIndex(base, base.maxKeyLength);
    this.#scoredAt = base.meta.scoredAt;
    this.#countsFrom = countsFrom(base.meta.scoredAt, base.meta.evidenceMaxAgeMs);
    this.#previous = previous;
    this.#previousIndex = previous === null ? null : new VpaIndex(previous.overlay, previous.overlay.maxKeyLength);
    this.#keptVpas = this.#vpaCount = previous?.overlay.meta.vpaCount ?? 0;
    this.#keptUrls = this.#urlCount = previous?.overlay.meta.urlCount ?? 0;
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
        // Stored and kept for the next snapshot's merge, but expired under this one: it changes no answer.
        if (!this.#counts(reader)) continue;
        this.#applyRecord(raw, reader.upiStart, reader.urlStart, reader.idStart, reader.capturedAt, reader.flags);
      }
    }
    return files.map((file, i) => ({ file, records: writers[i]!.finish(), count: counts[i]! }));
  }

  /** DeltaMergeTask.reset: each of `upis` answered from `records` alone. */
  reset(upis: readonly string[], records: ArrayBuffer): void {
    for (const key of upis) {
      // A VPA served nowhere has nothing to take back; its records, if any, add it below.
      if (!this.#vpas.has(key) && !this.#served(key)) continue;
      const old = this.#vpaRow(key);
      // Off the urls it was on: the records put it back on those it still has.
      for (const source of old.sources.values()) source.url.members--;
      this.#vpas.set(key, emptyRow(key, old.id, old.base));
    }
    const reader = new RecordReader(records);
    const raw = reader.raw;
    // Urls with no evidence counted on them when the reset first meets them: evidence that did not count before (a
    // clearance that ended) on a url nothing else names. They take the counts of what the reset adds, or their
    // category would be made up from nothing rather than wait for compaction like any other url's.
    const uncounted = new Set<UrlRow>();
    const counted = new Set<UrlRow>();
    while (reader.next()) {
      if (!this.#counts(reader)) continue;
      const url = this.#urlRow(raw, reader.urlStart, reader.idStart);
      if (!counted.has(url) && !uncounted.has(url)) (url.evidence.some((n) => n > 0) ? counted : uncounted).add(url);
      // Elsewhere its evidence is counted on the url already (urlEvidence): only the VPA's own figures are made again.
      this.#applyRecord(raw, reader.upiStart, reader.urlStart, reader.idStart, reader.capturedAt, reader.flags, uncounted.has(url));
    }
  }

  /** Whether the record counts under the snapshot's expiry and the clearances in force. */
  #counts(reader: RecordReader): boolean {
    // Stored and kept for the next snapshot's merge, but expired under this one: it changes no answer.
    if (reader.capturedAt < this.#countsFrom) return false;
    return this.#cleared === null || this.#cleared.counts(reader.raw, reader.upiStart, reader.urlStart, reader.idStart, reader.capturedAt);
  }

  /** Whether the delta so far or the snapshot holds the VPA. */
  #served(key: string): boolean {
    if (this.#previousIndex !== null && this.#previousIndex.lookup(key) !== NOT_FOUND) return true;
    return this.#baseIndex.lookup(key) !== NOT_FOUND;
  }

  #applyRecord(raw: Uint8Array, upiStart: number, urlStart: number, urlEnd: number, capturedAt: number, flags: number, onUrl = true): void {
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
    if (onUrl) url.evidence[sourceCategory]!++;
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

  /** The row of a VPA: as merged so far, else from the delta, else from the snapshot, else a new one. */
  #vpaRow(key: string): VpaRow {
    let row = this.#vpas.get(key);
    if (row !== undefined) return row;
    const inDelta = this.#previousIndex === null ? NOT_FOUND : this.#previousIndex.lookup(key);
    if (inDelta !== NOT_FOUND) {
      const p = this.#previous!;
      row = this.#loadRow(key, inDelta, fromStored(p.baseVpa[inDelta]!), p.overlay, inDelta, (u) => this.#deltaUrlRow(u));
    } else {
      const id = this.#baseIndex.lookup(key);
      const b = this.#base;
      row =
        id === NOT_FOUND
          ? emptyRow(key, this.#vpaCount++, NOT_FOUND)
          : this.#loadRow(key, this.#vpaCount++, id, b, id, (u) => this.#urlRow(b.urlBytes, b.urlOffsets[u]!, b.urlOffsets[u + 1]!, u));
    }
    this.#vpas.set(key, row);
    return row;
  }

  /** A row read from `from` (the snapshot or the delta's overlay) at `at`, its sources' urls by `urlOf`. */
  #loadRow(key: string, id: number, base: number, from: SnapshotData, at: number, urlOf: (url: number) => UrlRow): VpaRow {
    const risk = new Uint32Array(RISK_COUNT);
    riskCountsOf(from, at, risk);
    const row: VpaRow = {
      key,
      id,
      base,
      firstSeen: from.firstSeen[at]!,
      evidenceCount: from.evidenceCount[at]!,
      weightUnits: from.evidenceWeight[at]!,
      categoryMask: from.sourceCategoryMask[at]!,
      risk,
      sources: new Map(),
    };
    for (let s = from.sourceOffsets[at]!; s < from.sourceOffsets[at + 1]!; s++) {
      const url = urlOf(from.sourceUrl[s]!);
      row.sources.set(url, { url, capturedAt: from.sourceCapturedAt[s]!, screenshot: (from.sourceFlags[s]! & SOURCE_FLAG_SCREENSHOT) !== 0 });
    }
    return row;
  }

  /** The row of the delta's url `u`. */
  #deltaUrlRow(u: number): UrlRow {
    const o = this.#previous!.overlay;
    return this.#urlRow(o.urlBytes, o.urlOffsets[u]!, o.urlOffsets[u + 1]!);
  }

  /**
   * The row of a url: as merged so far, else from the delta, else a new one
   * (knowing its snapshot id and members when the snapshot has it; `baseId`
   * when the caller knows it).
   */
  #urlRow(bytes: Uint8Array, start: number, end: number, baseId = NOT_FOUND): UrlRow {
    const key = latin1(bytes.subarray(start, end));
    let row = this.#urls.get(key);
    if (row !== undefined) return row;
    const p = this.#previous;
    const inDelta = p === null ? NOT_FOUND : findUrl(p.overlay, bytes, start, end);
    if (inDelta !== NOT_FOUND) {
      row = {
        id: inDelta,
        bytes: bytes.slice(start, end),
        base: fromStored(p!.urlBase[inDelta]!),
        evidence: p!.urlEvidence.slice(inDelta * SOURCE_COUNT, (inDelta + 1) * SOURCE_COUNT),
        members: p!.urlMembers[inDelta]!,
      };
    } else {
      const b = this.#base;
      const base = baseId !== NOT_FOUND ? baseId : findUrl(b, bytes, start, end);
      const members = base === NOT_FOUND ? 0 : portableCardinality(b.urlMembersBlob.subarray(b.urlMembersOffsets[base]!, b.urlMembersOffsets[base + 1]!));
      row = { id: this.#urlCount++, bytes: bytes.slice(start, end), base, evidence: new Uint32Array(SOURCE_COUNT), members };
    }
    this.#urls.set(key, row);
    return row;
  }

  /** Lay the delta out again, in shared memory: the kept rows copied, the merged ones written, the new ones appended. */
  finish(fields: Omit<DeltaMeta, 'vpaCount' | 'bytes'>): DeltaData {
    const b = this.#base;
    const p = this.#previous;
    const o = p?.overlay ?? null;
    const arrays: ArrayAllocator = freshSharedArrays;
    const n = this.#vpaCount;
    const kept = this.#keptVpas;
    const rows = [...this.#vpas.values()].sort((x, y) => x.id - y.id);
    const added = rows.filter((r) => r.id >= kept);

    // Keys: the delta's, then the new ones.
    const addedKeys = encodeKeys(added.map((r) => r.key));
    const keptKeyBytes = p === null ? 0 : p.keyOffsets[kept]!;
    const keyBytes = arrays.zeroed(Uint8Array, keptKeyBytes + addedKeys.keyBytes.length);
    const keyOffsets = arrays.zeroed(Uint32Array, n + 1);
    if (p !== null) {
      keyBytes.set(p.keyBytes.subarray(0, keptKeyBytes));
      keyOffsets.set(p.keyOffsets.subarray(0, kept + 1));
    }
    keyBytes.set(addedKeys.keyBytes, keptKeyBytes);
    for (let i = 0; i < added.length; i++) keyOffsets[kept + i + 1] = keptKeyBytes + addedKeys.keyOffsets[i + 1]!;
    const index = buildIndexArrays(keyBytes, keyOffsets, n, { arrays });
    const keyFilter = buildKeyFilter(keyBytes, keyOffsets, n, arrays);

    const urls = this.#urlColumns(arrays);
    const vpas = this.#vpaColumns(rows, urls.urlMembers, arrays);
    const sources = this.#sourceColumns(rows, vpas.sourceCounts, arrays);

    const meta = {
      id: dataVersion(fields.baseId, fields.position),
      createdAt: Date.now(),
      dataAsOf: fields.dataAsOf,
      scoredAt: b.meta.scoredAt,
      evidenceMaxAgeMs: b.meta.evidenceMaxAgeMs,
      correctionSequence: b.meta.correctionSequence,
      evidenceFiles: fields.files,
      urlMemberCap: b.meta.urlMemberCap,
      vpaCount: n,
      urlCount: this.#urlCount,
      clusterCount: b.meta.clusterCount,
      sourceCount: sources.sourceUrl.length,
      evidenceCount: vpas.evidenceTotal,
      skippedLines: 0,
    };
    const overlay = snapshotData({
      meta,
      maxKeyLength: Math.max(o?.maxKeyLength ?? 0, longestKey(index)),
      index,
      vpas,
      mixedRisks: vpas,
      sources,
      urls,
      // The snapshot's clusters, shared, not copied.
      clusters: b,
    });
    const delta = { overlay, keyBytes, keyOffsets, keyFilter, baseVpa: vpas.baseVpa, urlBase: urls.urlBase, urlEvidence: urls.urlEvidence, urlMembers: urls.urlMembers };
    const own = [keyBytes, keyOffsets, keyFilter, vpas.baseVpa, urls.urlBase, urls.urlEvidence, urls.urlMembers, ...OWN_FIELDS.map((field) => overlay[field])];
    const bytes = own.reduce((sum, array) => sum + array.byteLength, 0);
    return { meta: { ...fields, vpaCount: n, bytes }, ...delta };
  }

  /** Per-url columns: the delta's copied, the merged urls written, the new ones appended; the url table over them. */
  #urlColumns(arrays: ArrayAllocator) {
    const b = this.#base;
    const p = this.#previous;
    const count = this.#urlCount;
    const kept = this.#keptUrls;
    const rows = [...this.#urls.values()];
    const keptBytes = p === null ? 0 : p.overlay.urlOffsets[kept]!;
    let addedBytes = 0;
    for (const u of rows) if (u.id >= kept) addedBytes += u.bytes.length;
    const urlBytes = arrays.zeroed(Uint8Array, keptBytes + addedBytes);
    const urlOffsets = arrays.zeroed(Uint32Array, count + 1);
    const urlCategory = arrays.zeroed(Uint8Array, count);
    const urlBase = arrays.zeroed(Uint32Array, count);
    const urlEvidence = arrays.zeroed(Uint32Array, count * SOURCE_COUNT);
    const urlMembers = arrays.zeroed(Uint32Array, count);
    if (p !== null) {
      const o = p.overlay;
      urlBytes.set(o.urlBytes.subarray(0, keptBytes));
      urlOffsets.set(o.urlOffsets.subarray(0, kept + 1));
      urlCategory.set(o.urlCategory.subarray(0, kept));
      urlBase.set(p.urlBase.subarray(0, kept));
      urlEvidence.set(p.urlEvidence.subarray(0, kept * SOURCE_COUNT));
      urlMembers.set(p.urlMembers.subarray(0, kept));
    }
    // New urls in the order they were given ids, so their bytes follow each other.
    rows.sort((x, y) => x.id - y.id);
    let at = keptBytes;
    for (const u of rows) {
      if (u.id >= kept) {
        urlBytes.set(u.bytes, at);
        at += u.bytes.length;
        urlOffsets[u.id + 1] = at;
      }
      // A url the snapshot knew keeps its category until compaction; a new one's evidence is all in the delta.
      urlCategory[u.id] = u.base !== NOT_FOUND ? b.urlCategory[u.base]! : dominant(u.evidence, 0, SOURCE_COUNT, SOURCE_RANK);
      urlBase[u.id] = u.base === NOT_FOUND ? NOT_IN_SNAPSHOT : u.base;
      urlEvidence.set(u.evidence, u.id * SOURCE_COUNT);
      urlMembers[u.id] = u.members;
    }
    // Url membership is the snapshot's business (cluster answers); the delta's urls list none.
    const urlMembersBlob = arrays.zeroed(Uint8Array, 0);
    const urlMembersOffsets = arrays.zeroed(Uint32Array, count + 1);
    const urlSlots = buildUrlSlots(urlBytes, urlOffsets, arrays);
    return { urlBytes, urlOffsets, urlCategory, urlMembersBlob, urlMembersOffsets, urlSlots, urlBase, urlEvidence, urlMembers };
  }

  /**
   * Per-VPA columns, `rows` (ascending ids) written over a copy of the
   * delta's; each VPA's number of sources. A kept VPA on a url that gained
   * VPAs (`urlMembers`, the new counts) is scored again: its peers term
   * grew, and the delta's answer equals a build's for every VPA it holds.
   */
  #vpaColumns(rows: readonly VpaRow[], urlMembers: Uint32Array, arrays: ArrayAllocator) {
    const b = this.#base;
    const p = this.#previous;
    const o = p?.overlay ?? null;
    const n = this.#vpaCount;
    const kept = this.#keptVpas;
    const firstSeen = arrays.zeroed(Float64Array, n);
    const confidence = arrays.zeroed(Uint16Array, n);
    const riskCategory = arrays.zeroed(Uint8Array, n);
    const evidenceCount = arrays.zeroed(Uint32Array, n);
    const vpaCluster = arrays.zeroed(Uint32Array, n);
    const evidenceWeight = arrays.zeroed(Float64Array, n);
    const sourceCategoryMask = arrays.zeroed(Uint8Array, n);
    const baseVpa = arrays.zeroed(Uint32Array, n);
    const sourceCounts = new Uint32Array(n);
    if (o !== null) {
      firstSeen.set(o.firstSeen.subarray(0, kept));
      confidence.set(o.confidence.subarray(0, kept));
      riskCategory.set(o.riskCategory.subarray(0, kept));
      evidenceCount.set(o.evidenceCount.subarray(0, kept));
      vpaCluster.set(o.vpaCluster.subarray(0, kept));
      evidenceWeight.set(o.evidenceWeight.subarray(0, kept));
      sourceCategoryMask.set(o.sourceCategoryMask.subarray(0, kept));
      baseVpa.set(p!.baseVpa.subarray(0, kept));
      for (let v = 0; v < kept; v++) sourceCounts[v] = o.sourceOffsets[v + 1]! - o.sourceOffsets[v]!;
    }
    for (const r of rows) {
      const v = r.id;
      firstSeen[v] = r.firstSeen;
      riskCategory[v] = dominant(r.risk, 0, RISK_COUNT, RISK_RANK);
      evidenceCount[v] = r.evidenceCount;
      vpaCluster[v] = r.base === NOT_FOUND ? NO_CLUSTER : b.vpaCluster[r.base]!;
      evidenceWeight[v] = r.weightUnits;
      sourceCategoryMask[v] = r.categoryMask;
      baseVpa[v] = r.base === NOT_FOUND ? NOT_IN_SNAPSHOT : r.base;
      sourceCounts[v] = r.sources.size;
      let peers = 0;
      for (const source of r.sources.values()) peers = Math.max(peers, source.url.members - 1);
      confidence[v] = vpaConfidence({
        evidenceWeight: r.weightUnits / WEIGHT_UNITS,
        distinctUrls: r.sources.size,
        distinctSourceCategories: categoriesIn(r.categoryMask),
        peers,
      });
    }
    if (o !== null) this.#rescoreKept(rows, urlMembers, confidence);
    let evidenceTotal = 0;
    for (let v = 0; v < n; v++) evidenceTotal += evidenceCount[v]!;

    // Mixed risk counts: the delta's entries for VPAs not merged now, and the merged ones, by id.
    const mixed: { id: number; risk: ArrayLike<number> }[] = [];
    if (o !== null) {
      const merged = new Set(rows.map((r) => r.id));
      for (let i = 0; i < o.mixedRiskVpas.length; i++) {
        const id = o.mixedRiskVpas[i]!;
        if (!merged.has(id)) mixed.push({ id, risk: o.mixedRiskCounts.subarray(i * RISK_COUNT, (i + 1) * RISK_COUNT) });
      }
    }
    for (const r of rows) if (r.risk.filter((c) => c > 0).length > 1) mixed.push({ id: r.id, risk: r.risk });
    mixed.sort((x, y) => x.id - y.id);
    const mixedRiskVpas = arrays.zeroed(Uint32Array, mixed.length);
    const mixedRiskCounts = arrays.zeroed(Uint32Array, mixed.length * RISK_COUNT);
    mixed.forEach((m, i) => {
      mixedRiskVpas[i] = m.id;
      mixedRiskCounts.set(m.risk, i * RISK_COUNT);
    });
    return { firstSeen, confidence, riskCategory, evidenceCount, vpaCluster, evidenceWeight, sourceCategoryMask, baseVpa, sourceCounts, evidenceTotal, mixedRiskVpas, mixedRiskCounts };
  }

  /** Score again the kept VPAs not in `rows` that have a source on a url whose VPAs grew in number. */
  #rescoreKept(rows: readonly VpaRow[], urlMembers: Uint32Array, confidence: Uint16Array): void {
    const p = this.#previous!;
    const o = p.overlay;
    const grown = new Uint8Array(this.#keptUrls);
    let any = false;
    for (const u of this.#urls.values()) {
      if (u.id < this.#keptUrls && u.members !== p.urlMembers[u.id]) {
        grown[u.id] = 1;
        any = true;
      }
    }
    if (!any) return;
    const merged = new Uint8Array(this.#keptVpas);
    for (const r of rows) if (r.id < this.#keptVpas) merged[r.id] = 1;
    for (let v = 0; v < this.#keptVpas; v++) {
      if (merged[v] === 1) continue;
      const from = o.sourceOffsets[v]!;
      const to = o.sourceOffsets[v + 1]!;
      let touches = false;
      let peers = 0;
      for (let s = from; s < to; s++) {
        const url = o.sourceUrl[s]!;
        if (grown[url] === 1) touches = true;
        peers = Math.max(peers, urlMembers[url]! - 1);
      }
      if (!touches) continue;
      confidence[v] = vpaConfidence({
        evidenceWeight: o.evidenceWeight[v]! / WEIGHT_UNITS,
        distinctUrls: to - from,
        distinctSourceCategories: categoriesIn(o.sourceCategoryMask[v]!),
        peers,
      });
    }
  }

  /** Sources: runs of kept VPAs copied from the delta, each merged VPA's written newest first. */
  #sourceColumns(rows: readonly VpaRow[], sourceCounts: Uint32Array, arrays: ArrayAllocator) {
    const o = this.#previous?.overlay ?? null;
    const n = this.#vpaCount;
    const sourceOffsets = arrays.zeroed(Uint32Array, n + 1);
    for (let v = 0; v < n; v++) sourceOffsets[v + 1] = sourceOffsets[v]! + sourceCounts[v]!;
    const total = sourceOffsets[n]!;
    const sourceUrl = arrays.zeroed(Uint32Array, total);
    const sourceCapturedAt = arrays.zeroed(Float64Array, total);
    const sourceFlags = arrays.zeroed(Uint8Array, total);
    /** Copy the delta's sources of VPAs [from, to), all kept as they were. */
    const copyRun = (from: number, to: number) => {
      if (o === null || from >= to) return;
      const start = o.sourceOffsets[from]!;
      const end = o.sourceOffsets[to]!;
      const at = sourceOffsets[from]!;
      sourceUrl.set(o.sourceUrl.subarray(start, end), at);
      sourceCapturedAt.set(o.sourceCapturedAt.subarray(start, end), at);
      sourceFlags.set(o.sourceFlags.subarray(start, end), at);
    };
    let next = 0;
    for (const r of rows) {
      copyRun(next, Math.min(r.id, this.#keptVpas));
      // Newest first; equal captures by url bytes, as a build orders them.
      const sources = [...r.sources.values()].sort((x, y) => y.capturedAt - x.capturedAt || Buffer.compare(x.url.bytes, y.url.bytes));
      let s = sourceOffsets[r.id]!;
      for (const source of sources) {
        sourceUrl[s] = source.url.id;
        sourceCapturedAt[s] = source.capturedAt;
        sourceFlags[s] = source.screenshot ? SOURCE_FLAG_SCREENSHOT : 0;
        s++;
      }
      next = r.id + 1;
    }
    copyRun(next, this.#keptVpas);
    return { sourceOffsets, sourceUrl, sourceCapturedAt, sourceFlags };
  }
}

/** The overlay's arrays of its own: every snapshot array but the cluster ones, which are the snapshot's. */
const OWN_FIELDS = ARRAY_FIELDS.filter((field) => !field.startsWith('cluster'));

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

/** A VPA row with no evidence yet. */
function emptyRow(key: string, id: number, base: number): VpaRow {
  return { key, id, base, firstSeen: Number.POSITIVE_INFINITY, evidenceCount: 0, weightUnits: 0, categoryMask: 0, risk: new Uint32Array(RISK_COUNT), sources: new Map() };
}

/** A snapshot id as `baseVpa` and `urlBase` store it, as a lookup answers it. */
function fromStored(id: number): number {
  return id === NOT_IN_SNAPSHOT ? NOT_FOUND : id;
}

function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}
