import { setMaxListeners } from 'node:events';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { parseCacheDir, removeOtherVersions } from './parse-cache.js';
import { acquireBuildLock } from './build-lock.js';
import type { DataDir } from '../common/data-dir.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { removeStaleTempFiles } from '../common/temp-cleanup.js';
import { statEvidenceFiles, evidenceFileTime, type StoredFile } from '../evidence/store.js';
import { DEFAULT_URL_MEMBER_CAP } from './clustering.js';
import { countsFrom } from './scoring.js';
import { ARRAY_FIELDS, INDEX_FIELDS, type ArrayField, type SnapshotData, type SnapshotMeta } from '../engine/snapshot-data.js';
import { aggregateBuffers, carriedIdsBuffers, indexBuffers, type AggregateResult, type DedupResult, type ParseResult } from './phases.js';
import { carriedFileBytes, carriedFiles, carriedIdBytes, carriedSegments, carryBytes, extendsCarriedFiles, isSpilled, segmentsToMerge, type BuildCarry, type Segment, type Segments, type SpilledSegment } from './carry.js';
import type { CarriedIdsState } from './carried-ids.js';
import type { AssembleOutcome, BuildTask, IndexReply, IndexResult, IndexTask } from './tasks.js';
import type { DeltaFile, DeltaMergeResult, DeltaMergeTask } from './delta-merge.js';
import { NO_CORRECTIONS, type CorrectionState } from '../evidence/corrections.js';
import { BlockIndex } from './record-blocks.js';
import { SegmentFiles } from './spilled-segments.js';
import { KEPT_CARRY_FILES, keepCarry, readKeptCarry, removeKeptCarry, type CarryShape } from './kept-carry.js';
import { locateIds, markRetracted, recordsFrom, recordsOf, retractedOrdinals, type CarriedItem } from './carry-reader.js';
import { partitionOf, partitionOfBytes } from './record-codec.js';
import type { ClearanceEntry } from './clearance-filter.js';

export interface BuildOptions {
  readonly dataDir: DataDir;
  /** Cap on distinct VPAs per url for linking; see clustering. */
  readonly urlMemberCap?: number;
  /** Reference time for recency in scoring; defaults to now. */
  readonly scoredAt?: number;
  /**
   * Evidence captured more than this many ms before `scoredAt` does not
   * count (SnapshotMeta.evidenceMaxAgeMs); default 0, it never expires.
   */
  readonly evidenceMaxAgeMs?: number;
  readonly onProgress?: (progress: BuildProgress) => void;
  /**
   * Keep parsed chunks in DIR/state/parsed/ and reuse them (parse-cache.ts);
   * default true. Off, every chunk is parsed from its JSON.
   */
  readonly parseCache?: boolean;
  /**
   * Called with the new snapshot as soon as it is assembled, its arrays in
   * shared memory, while its file is still being written: a server swaps it
   * in then, without waiting for the write and a load. Not called when the
   * build fails first, or (rarely) when the snapshot arrives only after the
   * build finished; the written file then is the way in.
   */
  readonly onAssembled?: (data: SnapshotData) => void;
  /** Told what the build did besides building (temporary files of ended writers removed); silent by default. */
  readonly logger?: Logger;
  /**
   * Build in less memory (service/build-memory.ts): the carry is let go
   * first and every stored evidence file is read again; the records are
   * dropped once aggregated, before the snapshot is assembled; partitions
   * are aggregated one after the other, and the index is built by the
   * assemble task itself rather than on a thread beside it. Nothing is
   * carried to the next build (prime() reads it again). Default false.
   */
  readonly lean?: boolean;
}

export type BuildPhase = 'parse' | 'dedup' | 'aggregate' | 'assemble';

export interface BuildProgress {
  readonly phase: BuildPhase;
  readonly done: number;
  readonly total: number;
}

export interface BuildReport {
  readonly path: string;
  readonly meta: SnapshotMeta;
  readonly durationMs: number;
  readonly phaseMs: Readonly<Record<BuildPhase | 'write', number>>;
  readonly invalidLines: number;
  readonly duplicateEvidence: number;
  /** A few of the invalid lines met, for the log. */
  readonly invalidSamples: readonly string[];
  /** Evidence chunks read back from the parse cache, and all chunks. */
  readonly cachedChunks: number;
  readonly chunks: number;
  /**
   * Chunks whose deduplicated records came from the build before, in this
   * process (carry.ts): neither parsed nor read back. 0 for a build that
   * read every file.
   */
  readonly reusedChunks: number;
  /** What the builder keeps for the next build (its deduplicated records and id tables), in memory or in files (BuilderOptions.spillDir); 0 when not incremental. */
  readonly carriedBytes: number;
  /**
   * Bytes of the snapshot's arrays laid out in the memory of a replaced
   * snapshot (SnapshotBuilder.reuseMemoryOf) instead of new memory.
   */
  readonly reusedBytes: number;
  /**
   * Bytes of working memory the assemble and index threads kept for the
   * next build as they finished (0 with BuilderOptions.releaseWorkingMemory);
   * the aggregating threads may keep more until their idle timeout.
   */
  readonly workingBytesKept: number;
}

/**
 * The fewest partitions a build splits its records into: with one build
 * thread, a quarter of the working memory of one partition for about 10 %
 * more build time (bench/MEASUREMENTS.md, "Memory of an embedded server").
 */
const MIN_PARTITIONS = 4;

export interface BuilderOptions {
  /** Pool threads; defaults to every core. */
  readonly threads?: number;
  /** Bytes of evidence per parse task. */
  readonly chunkBytes?: number;
  /**
   * Raise the pool threads' nice value by this much (Linux nice values are
   * per thread): a serving process builds in the background at low
   * priority, so its request thread keeps its core. 0, the default, for
   * builds that have the machine to themselves.
   */
  readonly niceIncrement?: number;
  /**
   * How long pool threads, with the working memory they keep, outlive a
   * build, and how long a replaced snapshot's memory is held for the next
   * build (reuseMemoryOf), ms (default 5 s). A serving process keeps them
   * longer, so builds that follow each other (an ingest every few seconds)
   * run on started threads with compiled code in memory already mapped.
   * Whatever the value, threads live at least a second after their last
   * task, so that one build's phases share them (MIN_THREAD_IDLE_MS). 0
   * holds no replaced snapshot's memory: every build then starts from
   * nothing, slower, and leaves nothing behind a second after it ends.
   */
  readonly idleTimeoutMs?: number;
  /**
   * Keep each build's deduplicated records and evidence ids in memory, so
   * that when the next build finds the same files plus new ones, it parses
   * and deduplicates only the new ones (carry.ts); default true. They take
   * about as much memory as the parse cache does disk, for as long as the
   * builder lives: turn this off where memory is tighter than build time.
   */
  readonly incremental?: boolean;
  /**
   * Run after the builder lets go of a replaced snapshot's memory it held
   * for the next build (reuseMemoryOf): unused, or after the build that
   * took it. A full collection of this thread's heap (collector.ts), so
   * what no build uses goes back now.
   */
  readonly collect?: () => void;
  /**
   * Told of the evidence each build, prime or absorb read and kept that no
   * earlier one had: a server merges it into its live delta (delta-merge.ts).
   * Called in the order the evidence was read.
   */
  readonly onEvidence?: (evidence: GatheredEvidence) => void;
  /**
   * The corrections in force (evidence/corrections.ts), read by each build
   * as it starts and by each gathering: retracted items and what clearances
   * suppress count in no snapshot. Default: none.
   */
  readonly corrections?: () => CorrectionState;
  /**
   * Keep the carry's records indexed by blocks (record-blocks.ts), made in
   * slices after each gathering, so that corrections read a few blocks of
   * records instead of all of them: for a server that takes corrections
   * from its carry. About 1 % of the carried records' memory. Default false.
   */
  readonly indexCarry?: boolean;
  /**
   * Move the carry's records to files in this directory (once their blocks
   * are made, with indexCarry: spilled-segments.ts), so that between builds
   * the builder holds only its evidence-id tables (and the blocks' filters) in memory;
   * builds and corrections read the files. The directory is the builder's
   * own: what it holds is removed at the first write, but for a kept carry
   * the builder started from (keepCarry) and its files. Default: records
   * stay in memory.
   */
  readonly spillDir?: string;
  /** Told of a segment that could not be written to spillDir: it stays in memory. */
  readonly onSpillFailed?: (error: unknown) => void;
  /**
   * Keep the carry in spillDir at close, and start from the one kept there
   * (kept-carry.ts): the next process's first gathering then reads only the
   * files stored since, as every later one does, rather than every file.
   * Needs spillDir. Default false.
   */
  readonly keepCarry?: boolean;
  /**
   * The evidence files the owner serves already: a kept carry's files not
   * among them are handed to `onEvidence` with the first gathering, as if
   * read then (a process stopped before a compaction served them).
   * Undefined: there is no one to hand them to yet.
   */
  readonly served?: () => ReadonlySet<string> | undefined;
  /** Told what became of a kept carry at the first gathering (none is not told). */
  readonly onKeptCarry?: (report: KeptCarryReport) => void;
  /** Told that close could not keep the carry (a write failed): the next process reads every file. */
  readonly onKeepFailed?: (error: unknown) => void;
  /**
   * Let go of the working memory a build's assemble and index threads keep
   * (build-worker.ts) as soon as they are done with it: what aggregation
   * left as assembly starts, the rest once the snapshot is handed on,
   * before its file is written and while its swap is prepared, rather than
   * keeping it for the next build until the idle timeout. A server's
   * compactions, minutes apart, would seldom find it kept, and held
   * through the swap it stood beside both snapshots at the peak of a
   * compaction (bench/MEASUREMENTS.md, "Working memory let go at
   * assembly"). Default false: back-to-back builds reuse the pages they
   * touched.
   */
  readonly releaseWorkingMemory?: boolean;
}

/** What the first gathering made of the carry kept by the last close (BuilderOptions.keepCarry). */
export type KeptCarryReport =
  | { readonly used: true; readonly files: number; readonly bytes: number; readonly ms: number }
  | { readonly used: false; readonly reason: string; readonly ms: number };

/**
 * Deduplicated records newly read: the records of `files`, found among
 * `inputs` by their chunk numbers (inputs may also hold records read
 * before, copied along when segments merge; carry.ts).
 */
export interface GatheredEvidence {
  readonly files: readonly DeltaFile[];
  readonly inputs: readonly SharedArrayBuffer[];
  /** How long the reading took (phases A and B, after its turn came), ms. */
  readonly readMs: number;
}

const DEFAULT_CHUNK_BYTES = 32 * 1024 * 1024;
/** Most pool threads a builder takes. */
export const MAX_BUILD_THREADS = 256;
/**
 * Pool threads live at least this long after a task, ms, whatever
 * idleTimeoutMs says: between the phases of one build the main thread
 * reads and writes files, and a thread that exited meanwhile would be
 * started again, with its code compiled again, for the next phase.
 */
const MIN_THREAD_IDLE_MS = 1000;

/**
 * Builds snapshots from the evidence folder on a Piscina pool. One builder
 * runs one build at a time; a data-directory lock keeps a CLI build and a
 * server's background build from racing on the cluster id state.
 */
export class SnapshotBuilder {
  readonly #pool: Piscina;
  /**
   * One thread for the small, urgent work of the live delta (absorb,
   * mergeDelta), so that it never waits behind a long build on #pool.
   */
  readonly #quickPool: Piscina;
  readonly #threads: number;
  readonly #chunkBytes: number;
  readonly #incremental: boolean;
  /** Phases A and B (prime, absorb, each build's first half): one at a time, since each takes the carry. */
  #gathering: Promise<unknown> = Promise.resolve();
  /** Whole builds, one at a time; a build's gathering also queues on #gathering. */
  #building: Promise<unknown> = Promise.resolve();
  readonly #onEvidence: (evidence: GatheredEvidence) => void;
  readonly #corrections: () => CorrectionState;
  /** What the last build left for the next; taken by each build, so a failed one leaves none. */
  #carry: BuildCarry | undefined;
  /** The carry's records by blocks, for corrections (BuilderOptions.indexCarry). */
  readonly #blocks = new BlockIndex();
  readonly #indexCarry: boolean;
  /** Whether this builder has cleared the parse cache of other format versions. */
  #cacheVersionsChecked = false;
  /** Bytes of the carry this builder holds in memory, also while a build has taken it; 0 once a build or prime that took it fails. */
  #carriedBytes = 0;
  /** Where the carry's records go once their blocks are made (BuilderOptions.spillDir). */
  readonly #spill: SegmentFiles | undefined;
  readonly #onSpillFailed: (error: unknown) => void;
  /** The spill under way (#spillCarry): one at a time. */
  #spilling: Promise<void> = Promise.resolve();
  /** close() was called: a spill under way stops after its segment. */
  #closing = false;
  /** Whether the carry is kept at close and looked for at the first gathering (BuilderOptions.keepCarry); and whether it was looked for. */
  readonly #keepCarry: boolean;
  #keptLooked = false;
  readonly #served: (() => ReadonlySet<string> | undefined) | undefined;
  readonly #onKeptCarry: (report: KeptCarryReport) => void;
  readonly #onKeepFailed: (error: unknown) => void;
  /** Aborted by stop: the phases running then end (Piscina ends their threads). */
  readonly #stop = stopSignal();
  /** Signals of single tasks that stop aborts only while they are here: an assemble task until it hands its snapshot on. */
  readonly #stoppable = new Set<AbortController>();
  readonly #idleTimeoutMs: number;
  readonly #collect: () => void;
  /** A replaced snapshot's buffers for the next build's arrays (reuseMemoryOf), split as the tasks lay them out. */
  #reusable: { readonly index: SharedArrayBuffer[]; readonly columns: SharedArrayBuffer[] } | undefined;
  #reusableTimer: NodeJS.Timeout | undefined;
  /** When what is reusable is let go unless a build is running then (Date.now()). */
  #reusableUntil = 0;
  /** A build holds the lock and runs: it takes what is reusable when it assembles, so nothing is dropped meanwhile. */
  #buildRunning = false;
  readonly #releaseWorkingMemory: boolean;

  constructor(options: BuilderOptions = {}) {
    const threads = options.threads ?? availableParallelism();
    if (!Number.isInteger(threads) || threads < 1 || threads > MAX_BUILD_THREADS) {
      throw new RangeError(`threads must be an integer from 1 to ${MAX_BUILD_THREADS}, got ${threads}`);
    }
    const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    if (!Number.isInteger(chunkBytes) || chunkBytes < 1024) {
      throw new RangeError(`chunkBytes must be an integer of at least 1024, got ${chunkBytes}`);
    }
    this.#threads = threads;
    this.#chunkBytes = chunkBytes;
    this.#incremental = options.incremental ?? true;
    this.#indexCarry = options.indexCarry ?? false;
    this.#spill = options.spillDir === undefined ? undefined : new SegmentFiles(options.spillDir);
    if (options.keepCarry === true && options.spillDir === undefined) throw new RangeError('keepCarry needs spillDir');
    this.#keepCarry = options.keepCarry === true && this.#incremental;
    this.#served = options.served;
    this.#onKeptCarry = options.onKeptCarry ?? (() => {});
    this.#onKeepFailed = options.onKeepFailed ?? (() => {});
    this.#onSpillFailed = options.onSpillFailed ?? (() => {});
    const idleTimeoutMs = options.idleTimeoutMs ?? 5_000;
    if (!Number.isSafeInteger(idleTimeoutMs) || idleTimeoutMs < 0) {
      throw new RangeError(`idleTimeoutMs must be a whole number of ms, at least 0, got ${idleTimeoutMs}`);
    }
    this.#idleTimeoutMs = idleTimeoutMs;
    this.#collect = options.collect ?? (() => {});
    this.#releaseWorkingMemory = options.releaseWorkingMemory === true;
    this.#onEvidence = options.onEvidence ?? (() => {});
    this.#corrections = options.corrections ?? (() => NO_CORRECTIONS);
    this.#quickPool = new Piscina({
      filename: new URL('./build-worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: 1,
      idleTimeout: Math.max(idleTimeoutMs, MIN_THREAD_IDLE_MS),
    });
    this.#pool = new Piscina({
      filename: new URL('./build-worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: threads,
      niceIncrement: options.niceIncrement ?? 0,
      // Threads exist while builds run and a while after (idleTimeoutMs), never before the first.
      idleTimeout: Math.max(idleTimeoutMs, MIN_THREAD_IDLE_MS),
      // The assemble phase holds the whole data set; the default worker heap is too small at 10M VPAs.
      resourceLimits: { maxOldGenerationSizeMb: 16 * 1024 },
    });
  }

  /**
   * Parse and deduplicate the stored evidence ahead of the next build, which
   * then reads only files stored after this (BuilderOptions.incremental): a
   * server started from a snapshot on disk does this in the background, so
   * its first rebuild after an ingest is as quick as the ones after. Builds
   * nothing and takes no build lock (it writes only the parse cache). Does
   * nothing for a builder that is not incremental.
   */
  prime(dir: DataDir): Promise<void> {
    if (!this.#incremental) return Promise.resolve();
    return this.#gatherSerially(async () => {
      await this.#gather(dir, true, { parse: 0, dedup: 0 }, () => {}, this.#pool);
    });
  }

  /**
   * Read and deduplicate the evidence files stored since the last build,
   * prime or absorb, and hand what is kept to `onEvidence`, without
   * building: on the builder's quick thread, so it never waits for a build
   * to finish (a build waits for it, briefly, and a build's own gathering
   * takes only what came after). Takes no build lock. The first absorb of a
   * builder that has no carry reads every file, as a prime does.
   */
  absorb(dir: DataDir): Promise<void> {
    if (!this.#incremental) return Promise.reject(new RangeError('absorb needs an incremental builder'));
    return this.#gatherSerially(async () => {
      await this.#gather(dir, true, { parse: 0, dedup: 0 }, () => {}, this.#quickPool);
    });
  }

  /**
   * Run `read` over the carry (the deduplicated records and evidence ids of
   * every file read, carry.ts), between gatherings, so that it is whole;
   * without one, every file is read first (kept as the carry when the
   * builder is incremental). Corrections read records through this
   * (carry-reader.ts).
   */
  readCarry<T>(dir: DataDir, read: (carry: BuildCarry) => T): Promise<T> {
    return this.#gatherSerially(async () => {
      const carry = this.#carry ?? (await this.#gather(dir, true, { parse: 0, dedup: 0 }, () => {}, this.#pool)).gathered;
      return read(carry);
    });
  }

  /** Which of `ids` are stored evidence, and the VPA each names (carry-reader.ts, locateIds). */
  locateEvidence(dir: DataDir, ids: readonly string[]): Promise<Map<string, string>> {
    return this.readCarry(dir, (carry) => locateIds(carry, ids, this.#blocks));
  }

  /**
   * Mark `ids` retracted in the carry, so later builds skip their records;
   * then every record of `upis` (carry-reader.ts, recordsOf), of the files
   * `files` only when given: a file read but not yet merged into what is
   * served brings its records in its own merge.
   */
  retractAndRead(dir: DataDir, ids: readonly string[], upis: ReadonlySet<string>, options: { readonly withIds?: boolean; readonly files?: ReadonlySet<string> } = {}): Promise<Map<string, CarriedItem[]>> {
    return this.readCarry(dir, (carry) => {
      markRetracted(carry, ids);
      const files = options.files;
      return recordsOf(carry, upis, this.#blocks, options.withIds ?? false, files === undefined ? undefined : this.#chunksOf(carry, files));
    });
  }

  /** Whether a chunk number of `carry` is one of the files `files` (chunks are numbered in file order, as #gather cuts them). */
  #chunksOf(carry: BuildCarry, files: ReadonlySet<string>): (chunk: number) => boolean {
    const inFiles = new Uint8Array(carry.chunks);
    let chunk = 0;
    for (const file of carry.files) {
      const count = Math.max(1, Math.ceil(file.size / this.#chunkBytes));
      if (files.has(file.name)) inFiles.fill(1, chunk, chunk + count);
      chunk += count;
    }
    return (c) => inFiles[c] === 1;
  }

  /** Merge records into a live delta (delta-merge.ts) on the quick thread. */
  mergeDelta(task: DeltaMergeTask): Promise<DeltaMergeResult> {
    return this.#quickPool.run({ kind: 'delta', ...task } satisfies BuildTask) as Promise<DeltaMergeResult>;
  }

  /**
   * Memory kept for the next build (BuilderOptions.incremental): the carried
   * records and evidence-id tables, from the last build or prime (the
   * blocks made of the records for corrections, indexCarry, add about 1 %).
   */
  get carriedBytes(): number {
    return this.#carriedBytes;
  }

  /** Settles once the segments of the carry held now are in files, or a write failed (BuilderOptions.spillDir). */
  async whenSpilled(): Promise<void> {
    await this.#gathering;
    await this.#spilling;
  }

  /** Bytes of the carry's records in files (BuilderOptions.spillDir), those of segments a running build still reads included. */
  get spilledBytes(): number {
    return this.#spill?.bytes ?? 0;
  }

  /**
   * Let the next build lay out its snapshot's arrays in the memory of
   * `data`, a replaced snapshot that no thread reads any more and never
   * will: the caller vouches for that (in a server, RetiredSnapshots does,
   * once every serving thread's collector has dropped it). A build maps and
   * touches a snapshot's worth of new pages otherwise (1.5 GiB at 10M VPAs),
   * which this kind of VM makes slow (scratch-arrays.ts) while the one just
   * let go is unmapped. Only arrays with a buffer of their own are taken (a
   * snapshot read from its file has one buffer for all, and keeps it). Held
   * until the next build takes it, a later snapshot's replaces it, or the
   * pool threads' idle timeout passes (a build running then keeps it until
   * it ends); the memory is given back then. Returns whether anything of it
   * is held: nothing is, and what was held before stays, when no array of
   * `data` has a buffer of its own. With an idle timeout of 0, nothing is
   * ever held.
   */
  reuseMemoryOf(data: SnapshotData): boolean {
    if (this.#idleTimeoutMs === 0) return false;
    const fieldsIn = new Map<SharedArrayBuffer, ArrayField[]>();
    for (const field of ARRAY_FIELDS) {
      const buffer = data[field].buffer;
      if (buffer instanceof SharedArrayBuffer) fieldsIn.set(buffer, [...(fieldsIn.get(buffer) ?? []), field]);
    }
    // The index task lays out the index's arrays, the assemble task the others.
    const index: SharedArrayBuffer[] = [];
    const columns: SharedArrayBuffer[] = [];
    for (const [buffer, fields] of fieldsIn) {
      if (fields.length !== 1) continue;
      ((INDEX_FIELDS as readonly ArrayField[]).includes(fields[0]!) ? index : columns).push(buffer);
    }
    // Nothing to keep: whatever is held for the next build stays held.
    if (index.length + columns.length === 0) return false;
    this.#dropReusable();
    this.#reusable = { index, columns };
    this.#reusableUntil = Date.now() + this.#idleTimeoutMs;
    if (!this.#buildRunning) this.#dropReusableWhenDue();
    return true;
  }

  /**
   * Drop what is reusable at its deadline (reuseMemoryOf), at once if that
   * has passed. A build running at the deadline keeps it until it ends: it
   * may be about to assemble (over a minute in at 10M under load). A build
   * that fails before assembling takes nothing and does not move the
   * deadline, so builds that keep failing cannot keep the memory.
   */
  #dropReusableWhenDue(): void {
    clearTimeout(this.#reusableTimer);
    const wait = this.#reusableUntil - Date.now();
    if (wait <= 0) {
      this.#dropReusable();
      return;
    }
    this.#reusableTimer = setTimeout(() => this.#dropReusable(), wait);
    this.#reusableTimer.unref();
  }

  /**
   * Threads alive: the build pool's while a build runs, and the one that
   * merges deltas and reads the stored evidence ahead at start while it
   * does, each with the working memory it keeps, for the idle timeout after
   * (BuilderOptions.idleTimeoutMs).
   */
  get liveThreads(): number {
    return this.#pool.threads.length + this.#quickPool.threads.length;
  }

  /** The build pool's threads alone (liveThreads less the delta's). */
  get buildPoolThreads(): number {
    return this.#pool.threads.length;
  }

  /** Bytes of replaced snapshots' buffers held for the next build (reuseMemoryOf). */
  get reusableBytes(): number {
    const buffers = this.#reusable === undefined ? [] : [...this.#reusable.index, ...this.#reusable.columns];
    return buffers.reduce((sum, buffer) => sum + buffer.byteLength, 0);
  }

  #takeReusable(): { readonly index: SharedArrayBuffer[]; readonly columns: SharedArrayBuffer[] } {
    const taken = this.#reusable ?? { index: [], columns: [] };
    this.#reusable = undefined;
    clearTimeout(this.#reusableTimer);
    this.#reusableTimer = undefined;
    return taken;
  }

  #dropReusable(): void {
    if (this.#reusable === undefined) return;
    this.#takeReusable();
    this.#collect();
  }

  /** Build a snapshot from all stored evidence and write it to the data directory. */
  build(options: BuildOptions): Promise<BuildReport> {
    const result = this.#building.then(() => this.#buildLocked(options));
    this.#building = result.catch(() => {});
    return result;
  }

  /**
   * Run `work`, a gathering, once the one before has finished. When it
   * settles, the carried bytes are counted again from the carry now held: a
   * gathering that succeeded left one, one that failed after taking it left
   * none, and one that failed before (the files not listed) kept the last,
   * as does one stopped before its dedup (to be kept at close).
   */
  #gatherSerially<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#gathering.then(work).finally(() => {
      this.#carriedBytes = this.#carry === undefined ? 0 : carryBytes(this.#carry);
    });
    // Settled to nothing: a gathering's result (every record, for a lean build) is not held until the next.
    this.#gathering = result.then(
      () => {},
      () => {},
    );
    return result;
  }

  /**
   * A full collection on this thread and on every build thread alive (the
   * quick one's included), so that shared memory let go of is given back
   * now: a build thread keeps the records it made or read until its own
   * next collection. With `scratch`, the working memory the threads keep
   * for the next build goes too.
   */
  async #collectEverywhere(scratch = false): Promise<void> {
    this.#collect();
    // One task per thread alive, each taking one; the quick thread too: an ingest's deduplication there reads carried records.
    const collect = (pool: Piscina) => Array.from({ length: pool.threads.length }, () => pool.run({ kind: 'collect', scratch } satisfies BuildTask));
    await Promise.all([...collect(this.#pool), ...collect(this.#quickPool)]);
  }

  /** Let go of the carry and its blocks (a lean build reads every file again). */
  #dropCarry(): void {
    this.#carry = undefined;
    this.#blocks.forget();
    void this.#removeSpilled();
  }

  /**
   * Move the carry's segments still in memory to files, one after the
   * other once its blocks are made; each takes the segment's place in the
   * carry between gatherings (a gathering may have merged it away
   * meanwhile: its file goes then). Started after each gathering that
   * keeps a carry; the files no carry holds go at its end.
   */
  #spillCarry(): void {
    this.#spilling = this.#spilling.then(async () => {
      let written = 0;
      while (!this.#closing) {
        const segment = this.#carry === undefined ? undefined : carriedFiles(this.#carry).find((s): s is SharedArrayBuffer => !isSpilled(s) && s.byteLength > 0);
        if (segment === undefined) break;
        let spilled;
        try {
          spilled = await this.#spillSegment(segment, this.#carry!);
        } catch (error) {
          this.#onSpillFailed(error);
          return;
        }
        await this.#gatherSerially(async () => {
          if (this.#carry !== undefined) replaceSegment(this.#carry, segment, spilled);
        });
        written++;
      }
      await this.#gatherSerially(() => this.#removeSpilled());
      // The shared memory of what was written out goes now, not at some later collection (collector.ts). A segment's
      // memory is given back once no thread holds it, and the build threads that made or read it hold it too: they
      // collect as well, unless a build is running on them (its phases collect, and its threads hold the carry).
      // A thread that fails its collection has ended, and its memory with it.
      if (written > 0 && !this.#buildRunning) await this.#collectEverywhere().catch(() => {});
      else this.#collect();
    });
  }

  /**
   * Write `segment` to a file of spillDir: records, with the blocks made of them kept with the file (for a builder
   * whose corrections read them, indexCarry), or the bytes of frozen ids (carried-ids.ts).
   */
  async #spillSegment(segment: SharedArrayBuffer, carry: BuildCarry): Promise<SpilledSegment> {
    const ofRecords = !carriedIdBytes(carry).includes(segment);
    // Made from the file if ever needed otherwise.
    const blocks = this.#indexCarry && ofRecords ? await this.#blocks.made(segment) : null;
    const spilled = await this.#spill!.write(segment);
    if (blocks !== null) this.#blocks.adopt(spilled, blocks);
    return spilled;
  }

  /** Remove the files of segments no carry holds and no build reads. Between gatherings only: a gathering's dedup reads the last carry's. */
  async #removeSpilled(): Promise<void> {
    await this.#spill?.removeAllBut(this.#carry === undefined ? [] : carriedFiles(this.#carry)).catch((error: unknown) => this.#onSpillFailed(error));
  }

  /**
   * Cut short the phases of a build or gathering under way (their threads
   * ended), so that a stop waits seconds, not the rest of a compaction or
   * of the read-ahead of stored evidence; what they were making is not
   * kept. A build whose snapshot was handed on (BuildOptions.onAssembled)
   * is not cut short: that snapshot is served, and its file is written.
   * Merges into the delta are not cut short either (milliseconds). Nothing
   * starts after it; close then waits for what remains.
   */
  stop(): void {
    this.#closing = true;
    this.#stop.abort();
    for (const controller of this.#stoppable) controller.abort();
    this.#stoppable.clear();
  }

  async close(): Promise<void> {
    this.stop();
    await this.#building;
    await this.#gathering;
    await this.#spilling;
    const kept = this.#keepCarry && this.#carry !== undefined ? await this.#keep(this.#carry) : false;
    await this.#spill?.removeAllBut(kept ? carriedFiles(this.#carry!) : []).catch((error: unknown) => this.#onSpillFailed(error));
    this.#dropReusable();
    await Promise.all([this.#pool.destroy(), this.#quickPool.destroy()]);
  }

  /** Write the carry for the next process (BuilderOptions.keepCarry), its segments still in memory first; whether it was. */
  async #keep(carry: BuildCarry): Promise<boolean> {
    try {
      for (const segment of carriedFiles(carry)) {
        if (isSpilled(segment) || segment.byteLength === 0) continue;
        replaceSegment(carry, segment, await this.#spillSegment(segment, carry));
      }
      const dir = this.#spill!.dir;
      await keepCarry(dir, carry, this.#carryShape(carry.partitions), (segment) => this.#blocks.madeOf(segment));
      this.#spill!.keptBy(carriedFiles(carry).filter(isSpilled), KEPT_CARRY_FILES, () => removeKeptCarry(dir));
      return true;
    } catch (error) {
      this.#onKeepFailed(error);
      // What is left of the carry kept before, if anything, is not whole: its files need not stay.
      await this.#spill!.dropKept().catch(() => {});
      return false;
    }
  }

  #carryShape(partitions: number): CarryShape {
    return { partitions, chunkBytes: this.#chunkBytes, correctionSequence: this.#corrections().sequence };
  }

  /**
   * The carry the last close kept, at the first gathering only (BuilderOptions.keepCarry); its
   * files become this builder's. Told to onKeptCarry by the gathering once it knows whether the
   * evidence files still extend it.
   */
  async #keptCarry(partitions: number): Promise<{ readonly carry: BuildCarry; readonly bytes: number; readonly ms: number } | undefined> {
    if (!this.#keepCarry || this.#keptLooked) return undefined;
    this.#keptLooked = true;
    const started = performance.now();
    const kept = await readKeptCarry(this.#spill!.dir, this.#carryShape(partitions));
    const ms = performance.now() - started;
    if (kept === null) return undefined;
    if ('refused' in kept) {
      this.#onKeptCarry({ used: false, reason: kept.refused, ms });
      return undefined;
    }
    const dir = this.#spill!.dir;
    const files = carriedFiles(kept.carry).filter(isSpilled);
    this.#spill!.adopt(files);
    this.#spill!.keptBy(files, KEPT_CARRY_FILES, () => removeKeptCarry(dir));
    for (const [segment, blocks] of kept.blocks) this.#blocks.adopt(segment, blocks);
    return { carry: kept.carry, bytes: kept.bytes, ms };
  }

  async #buildLocked(options: BuildOptions): Promise<BuildReport> {
    const release = await acquireBuildLock(options.dataDir);
    this.#buildRunning = true;
    clearTimeout(this.#reusableTimer);
    try {
      // The folders builds write, swept while no other build can write them: cheap (a listing of
      // each), and a server that runs for months would otherwise keep what each killed build left.
      // Only files of ended writers go (temp-cleanup.ts), so a live server's parse cache writes are safe.
      const dir = options.dataDir;
      await removeStaleTempFiles([dir.snapshots, dir.state, parseCacheDir(dir.state)], options.logger ?? silentLogger);
      return await this.#build(options);
    } finally {
      this.#buildRunning = false;
      if (this.#reusable !== undefined) this.#dropReusableWhenDue();
      await release();
    }
  }

  async #build(options: BuildOptions): Promise<BuildReport> {
    const started = performance.now();
    const progress = options.onProgress ?? (() => {});
    const urlMemberCap = options.urlMemberCap ?? DEFAULT_URL_MEMBER_CAP;
    if (!Number.isInteger(urlMemberCap) || urlMemberCap < 2) {
      throw new RangeError(`urlMemberCap must be an integer of at least 2, got ${urlMemberCap}`);
    }
    const scoredAt = options.scoredAt ?? Date.now();
    const evidenceMaxAgeMs = options.evidenceMaxAgeMs ?? 0;
    if (!Number.isSafeInteger(evidenceMaxAgeMs) || evidenceMaxAgeMs < 0) {
      throw new RangeError(`evidenceMaxAgeMs must be a non-negative integer, got ${evidenceMaxAgeMs}`);
    }
    const counting = countsFrom(scoredAt, evidenceMaxAgeMs);
    // Read before the evidence: corrections recorded later are applied again over the snapshot (SnapshotMeta.correctionSequence).
    const corrections = this.#corrections();
    const phaseMs = { parse: 0, dedup: 0, aggregate: 0, assemble: 0, write: 0 };
    const lean = options.lean === true;
    // Let go (a lean build's records go once aggregated): only this frame holds them then.
    let gathering: Gathering | undefined = await this.#gatherSerially(async () => {
      if (lean) {
        this.#dropCarry();
        await this.#collectEverywhere();
      }
      return this.#gather(options.dataDir, options.parseCache !== false, phaseMs, progress, this.#pool, !lean);
    });
    const { files, cachedChunks, reusedChunks } = gathering;
    let gathered: BuildCarry | undefined = gathering.gathered;
    gathering = undefined;
    const { partitions, invalidLines, duplicateEvidence, invalidSamples, chunks: chunkCount } = gathered;
    const carriedBytes = this.#incremental && !lean ? carryBytes(gathered) + carriedFileBytes(gathered) : 0;

    const mark = performance.now();
    let done = 0;
    const skips = corrections.retracted.size === 0 ? undefined : retractedOrdinals(gathered);
    const clearances = clearancesByPartition(corrections, partitions);
    let records: BuildCarry['records'] = gathered.records;
    // Files of the records aggregated here stay until the aggregation is done, whatever the next gathering keeps.
    const pinned = this.#spill?.pin(carriedSegments(gathered)) ?? [];
    const aggregate = async (q: number): Promise<AggregateResult> => {
      // Id partition by id partition, oldest segment first: the order a build reading every file makes.
      const inputs = records.flatMap((segments) => segments[q]!);
      const task = {
        kind: 'aggregate',
        inputs,
        scoredAt,
        countsFrom: counting,
        ...(skips === undefined ? {} : { skip: skips[q]! }),
        ...(clearances[q]!.length === 0 ? {} : { clearances: clearances[q]! }),
      } satisfies BuildTask;
      const result = (await this.#pool.run(task, { signal: this.#stop.signal })) as AggregateResult;
      progress({ phase: 'aggregate', done: ++done, total: partitions });
      return result;
    };
    let partials: AggregateResult[];
    try {
      if (lean) {
        partials = [];
        for (let q = 0; q < partitions; q++) partials.push(await aggregate(q));
        // The records are aggregated: nothing reads them again in this build.
        records = [];
        gathered = undefined;
        await this.#collectEverywhere();
      } else {
        partials = await Promise.all(Array.from({ length: partitions }, (_, q) => aggregate(q)));
      }
    } finally {
      this.#spill?.unpin(pinned);
    }
    phaseMs.aggregate = performance.now() - mark;

    progress({ phase: 'assemble', done: 0, total: 1 });
    const transferList: (ArrayBuffer | MessagePort)[] = [...new Set(partials.flatMap(aggregateBuffers))];
    // Cut short by a stop until its snapshot is handed on; after that it is served, and its file must be written.
    const assembleStop = stopSignal();
    if (this.#closing) assembleStop.abort();
    else this.#stoppable.add(assembleStop);
    const assembled = options.onAssembled === undefined ? undefined : new MessageChannel();
    if (assembled !== undefined) {
      assembled.port1.once('message', (data: SnapshotData) => {
        // Stopped first: the task is ended, and what it made is not served.
        if (assembleStop.signal.aborted) return;
        this.#stoppable.delete(assembleStop);
        options.onAssembled!(data);
      });
      transferList.push(assembled.port2);
    }
    // Taken now, not when the build began: a snapshot replaced meanwhile may have been let go since.
    const reuse = this.#takeReusable();
    const indexed = { reusedBytes: 0, workingBytesKept: 0 };
    const index = this.#threads > 1 && !lean ? this.#indexOnRequest(reuse.index, indexed) : undefined;
    if (index !== undefined) transferList.push(index.port2);
    const assembleReuse = index === undefined ? [...reuse.index, ...reuse.columns] : reuse.columns;
    const task = {
      kind: 'assemble',
      partials,
      dataDirRoot: options.dataDir.root,
      urlMemberCap,
      scoredAt,
      evidenceMaxAgeMs,
      correctionSequence: corrections.sequence,
      evidenceFiles: files.map((f) => f.name),
      dataAsOf: files.reduce((newest, f) => Math.max(newest, evidenceFileTime(f.name)), 0),
      skippedLines: invalidLines + duplicateEvidence,
      ...(assembled === undefined ? {} : { assembled: assembled.port2 }),
      ...(index === undefined ? {} : { index: index.port2 }),
      reuse: assembleReuse,
      releaseScratch: this.#releaseWorkingMemory,
    } satisfies BuildTask;
    // Once the task settles, a snapshot not yet delivered is dropped: the caller loads the file instead.
    const outcome = (await this.#pool.run(task, { transferList, signal: assembleStop.signal }).finally(() => {
      this.#stoppable.delete(assembleStop);
      assembled?.port1.close();
      index?.port1.close();
      // What of it the build left unused goes now, rather than at some later collection (collector.ts):
      // emptied in place, since the task and the index channel still hold these lists, and collected
      // once this frame is gone. (The pool threads collect their own references: worker.ts.)
      if (assembleReuse.length + reuse.index.length > 0) {
        assembleReuse.length = 0;
        reuse.index.length = 0;
        reuse.columns.length = 0;
        setImmediate(() => this.#collect());
      }
    })) as AssembleOutcome;
    progress({ phase: 'assemble', done: 1, total: 1 });
    // A lean build keeps nothing for the next: its threads' working memory goes now, not after their idle timeout.
    if (lean) await this.#collectEverywhere(true);
    phaseMs.assemble = outcome.assembleMs;
    phaseMs.write = outcome.writeMs;

    return {
      path: outcome.path,
      meta: outcome.meta,
      durationMs: performance.now() - started,
      phaseMs,
      invalidLines,
      duplicateEvidence,
      invalidSamples,
      cachedChunks,
      chunks: chunkCount,
      reusedChunks,
      carriedBytes,
      reusedBytes: outcome.reusedBytes + indexed.reusedBytes,
      // A lean build's threads have let go of all of it (#collectEverywhere above).
      workingBytesKept: lean ? 0 : outcome.workingBytesKept + indexed.workingBytesKept,
    };
  }

  /**
   * A channel on which the assemble task asks for its index: the keys come
   * in (in shared memory), the index is built on another pool thread, and
   * its arrays (moved, not copied) or the error go back. The index is laid
   * out in `reuse` where it fits; `indexed` learns how many bytes did.
   */
  #indexOnRequest(reuse: readonly SharedArrayBuffer[], indexed: { reusedBytes: number; workingBytesKept: number }): MessageChannel {
    const channel = new MessageChannel();
    channel.port1.once('message', (request: IndexTask) => {
      this.#pool
        .run({ kind: 'index', ...request, reuse, releaseScratch: this.#releaseWorkingMemory } satisfies BuildTask, { signal: this.#stop.signal })
        .then(
          ({ arrays, reusedBytes, workingBytesKept }: IndexResult) => {
            indexed.reusedBytes = reusedBytes;
            indexed.workingBytesKept = workingBytesKept;
            channel.port1.postMessage({ arrays } satisfies IndexReply, indexBuffers(arrays));
          },
          (error: unknown) => channel.port1.postMessage({ error: String(error) } satisfies IndexReply),
        );
    });
    return channel;
  }

  /**
   * Phases A and B: every evidence id and deduplicated record, as a carry.
   * Starts from the last build's when the files only grew since, and then
   * parses and deduplicates only the chunks after it. Kept as the next
   * build's carry when the builder is incremental and `keep` holds.
   */
  async #gather(
    dir: DataDir,
    parseCache: boolean,
    phaseMs: { parse: number; dedup: number },
    progress: (progress: BuildProgress) => void,
    pool: Piscina,
    keep = true,
  ): Promise<Gathering> {
    const begun = performance.now();
    const cacheDir = parseCache ? parseCacheDir(dir.state) : undefined;
    if (cacheDir !== undefined && !this.#cacheVersionsChecked) {
      // Once per builder: a cache left by an earlier release of the record format only takes disk space.
      this.#cacheVersionsChecked = true;
      await removeOtherVersions(cacheDir);
    }
    const files = await statEvidenceFiles(dir);
    // Enough partitions to keep every thread busy while the slowest finishes, and at least
    // MIN_PARTITIONS: an aggregation's working memory is its partition's, and a lone build thread
    // runs its partitions one after the other in the same memory.
    const partitions = Math.max(MIN_PARTITIONS, this.#threads * 2);
    // The carry's id tables move into this build's tasks (the dedup's): from then on, whatever happens, it is not the next build's.
    const keptCarry = this.#carry === undefined ? await this.#keptCarry(partitions) : undefined;
    const kept = keptCarry?.carry;
    const previous = this.#carry ?? kept;
    this.#carry = undefined;
    const carry = previous !== undefined && previous.partitions === partitions && extendsCarriedFiles(previous, files) ? previous : undefined;
    // Not of these files: it would be refused at the next start too, as is whatever a removal that fails leaves.
    if (keptCarry !== undefined && carry !== kept) await this.#spill!.dropKept().catch((error: unknown) => this.#onKeepFailed(error));
    if (keptCarry !== undefined) {
      this.#onKeptCarry(
        carry === kept
          ? { used: true, files: keptCarry.carry.files.length, bytes: keptCarry.bytes, ms: keptCarry.ms }
          : { used: false, reason: 'the evidence files are not those it was kept with, followed by new ones', ms: keptCarry.ms },
      );
    }

    const fileChunks: DeltaFile[] = [];
    const chunks = files.flatMap((file) => {
      const count = Math.max(1, Math.ceil(file.size / this.#chunkBytes));
      const firstChunk = fileChunks.length === 0 ? 0 : fileChunks[fileChunks.length - 1]!.endChunk;
      fileChunks.push({ name: file.name, firstChunk, endChunk: firstChunk + count, storedAt: evidenceFileTime(file.name) });
      return Array.from({ length: count }, (_, i) => ({
        path: file.path,
        fileSize: file.size,
        fileMtimeMs: file.mtimeMs,
        start: i * this.#chunkBytes,
        end: Math.min(file.size, (i + 1) * this.#chunkBytes),
      }));
    });
    // Chunks keep their place in the whole sequence: records carry it as their ingestion order.
    const firstNew = carry?.chunks ?? 0;
    // Reading only what came since the carry is small, and every ingest waits for it (gatherings take
    // turns): on the quick thread, at normal priority, not behind a low-priority build thread that
    // serving threads under load leave little of a core to. Reading every file stays on `pool`, and so
    // does the start's reading on top of a kept carry, which may be of a stop long before (a crash since).
    const reader = carry === undefined || carry === kept ? pool : this.#quickPool;
    const newChunks = chunks.slice(firstNew);
    const totalBytes = newChunks.reduce((sum, c) => sum + c.end - c.start, 0);

    let mark = performance.now();
    let parsedBytes = 0;
    progress({ phase: 'parse', done: 0, total: totalBytes });
    let parsed: ParseResult[];
    try {
      parsed = await Promise.all(
        newChunks.map(async (chunk, index) => {
          const task = { kind: 'parse', ...chunk, chunk: firstNew + index, partitions, cacheDir } satisfies BuildTask;
          const result = (await reader.run(task, { signal: this.#stop.signal })) as ParseResult;
          parsedBytes += chunk.end - chunk.start;
          progress({ phase: 'parse', done: parsedBytes, total: totalBytes });
          return result;
        }),
      );
    } catch (error) {
      // The carry is untouched until the dedup takes it: put back, the next gathering starts from it, and a
      // stop before or while the new chunks are read keeps it at close rather than leaving a full read to the
      // next start. A kept carry just read is put back only for the close: the next gathering must read every
      // file again, for the kept files not served yet to be handed on.
      if (carry !== undefined && this.#incremental && keep && (this.#closing || carry !== kept)) this.#carry = carry;
      throw error;
    }
    phaseMs.parse = performance.now() - mark;

    mark = performance.now();
    const retracted = this.#corrections().retracted;
    // A kept carry's files the owner does not serve yet are told of with the new ones: their records, taken before the dedup takes the carry.
    const handed = kept !== undefined && carry === kept ? this.#unservedOf(carry, fileChunks, [...retracted]) : { files: [], inputs: [] };
    const deduped = await this.#dedup(parsed, partitions, carry, progress, reader, idsByPartition(retracted, partitions));
    phaseMs.dedup = performance.now() - mark;

    const gathered: BuildCarry = {
      files: files.map(({ name, size, mtimeMs }) => ({ name, size, mtimeMs })),
      chunks: chunks.length,
      partitions,
      seen: deduped.seen,
      homes: deduped.homes,
      records: deduped.records,
      invalidLines: (carry?.invalidLines ?? 0) + parsed.reduce((sum, r) => sum + r.invalidLines, 0),
      duplicateEvidence: deduped.duplicates,
      invalidSamples: [...(carry?.invalidSamples ?? []), ...parsed.flatMap((r) => r.invalidSamples)].slice(0, 10),
    };
    // Items retracted since their records were carried: marked, so builds and merges skip them.
    markRetracted(gathered, [...retracted]);
    if (this.#incremental && keep) {
      this.#carry = gathered;
      if (this.#spill !== undefined) this.#spillCarry();
      else if (this.#indexCarry) this.#blocks.warm(carriedSegments(gathered));
    }
    // Told of every new file, even one whose every item was a duplicate: it is read, and served as it is (unchanged).
    const newFiles = [...handed.files, ...fileChunks.filter((f) => f.firstChunk >= firstNew)];
    if (newFiles.length > 0) this.#onEvidence({ files: newFiles, inputs: [...handed.inputs, ...deduped.fresh], readMs: performance.now() - begun });
    return { files, gathered, cachedChunks: parsed.filter((r) => r.fromCache === true).length, reusedChunks: firstNew };
  }

  /**
   * The files of a kept carry that the owner does not serve (BuilderOptions.served), with
   * their records that count (retracted ones left out): what the process that kept it had
   * read, and a compaction had not served yet.
   */
  #unservedOf(carry: BuildCarry, fileChunks: readonly DeltaFile[], retracted: readonly string[]): { files: DeltaFile[]; inputs: SharedArrayBuffer[] } {
    const served = this.#served?.();
    if (served === undefined) return { files: [], inputs: [] };
    const files = fileChunks.filter((f) => f.firstChunk < carry.chunks && !served.has(f.name));
    if (files.length === 0) return { files, inputs: [] };
    markRetracted(carry, retracted);
    return { files, inputs: [recordsFrom(carry, files[0]!.firstChunk, this.#blocks)] };
  }

  /**
   * Phase B over the new chunks: each id partition's new records against the
   * ids kept so far, appended to the carried records. With nothing new, the
   * carried records stand as they are.
   */
  async #dedup(
    parsed: readonly ParseResult[],
    partitions: number,
    carry: BuildCarry | undefined,
    progress: (progress: BuildProgress) => void,
    pool: Piscina,
    retracted: readonly (readonly string[])[],
  ): Promise<{ seen: CarriedIdsState[]; homes: Uint16Array[]; records: Segments[][]; duplicates: number; fresh: SharedArrayBuffer[] }> {
    if (carry !== undefined && parsed.length === 0) {
      progress({ phase: 'dedup', done: partitions, total: partitions });
      return { seen: [...carry.seen], homes: [...carry.homes], records: carry.records.map((pairs) => [...pairs]), duplicates: carry.duplicateEvidence, fresh: [] };
    }
    let done = 0;
    const results = await Promise.all(
      Array.from({ length: partitions }, async (_, p) => {
        const inputs = parsed.map((r) => r.parts[p]!);
        const carried = carry?.records[p];
        const merge = carried?.map(segmentsToMerge);
        const seen = carry?.seen[p];
        const homes = carry?.homes[p];
        const leading = carried?.map((segments, q) => segments.slice(segments.length - merge![q]!));
        const task = { kind: 'dedup', inputs, partitions, seen, homes, leading, retracted: retracted[p]! } satisfies BuildTask;
        const result = (await pool.run(task, {
          signal: this.#stop.signal,
          transferList: [...inputs, ...(seen === undefined ? [] : carriedIdsBuffers(seen)), ...(homes === undefined ? [] : [homes.buffer as ArrayBuffer])],
        })) as DedupResult;
        progress({ phase: 'dedup', done: ++done, total: partitions });
        const records = result.parts.map((part, q) => {
          const kept = carried === undefined ? [] : carried[q]!.slice(0, carried[q]!.length - merge![q]!);
          // A small ingest leaves most pairs nothing new: no empty segment for aggregation to open.
          return part.byteLength === 0 && kept.length > 0 ? kept : [...kept, part];
        });
        return { seen: sameFrozenBytes(result.seen, seen), homes: result.homes, records, duplicates: result.duplicates, fresh: result.parts.filter((part) => part.byteLength > 0) };
      }),
    );
    return {
      seen: results.map((r) => r.seen),
      homes: results.map((r) => r.homes),
      records: results.map((r) => r.records),
      duplicates: (carry?.duplicateEvidence ?? 0) + results.reduce((sum, r) => sum + r.duplicates, 0),
      fresh: results.flatMap((r) => r.fresh),
    };
  }
}

/**
 * `state` as a dedup task handed it back, its frozen ids' bytes the very
 * object `before` named when the task did not freeze them anew: a copy
 * made by the crossing between threads would not be the file, or the
 * memory, that the spill and its removals know (SegmentFiles holds them by
 * identity).
 */
function sameFrozenBytes(state: CarriedIdsState, before: CarriedIdsState | undefined): CarriedIdsState {
  const frozen = state.frozen;
  const was = before?.frozen;
  if (frozen === null || was === null || was === undefined || frozen.count !== was.count) return state;
  return { ...state, frozen: { ...frozen, bytes: was.bytes } };
}

/** Put `to` in the place of the segment `from` in `carry`'s records or frozen ids, wherever it is. */
function replaceSegment(carry: BuildCarry, from: Segment, to: Segment): void {
  for (const pairs of carry.records) {
    for (const segments of pairs) {
      const at = segments.indexOf(from);
      if (at >= 0) (segments as Segment[])[at] = to;
    }
  }
  carry.seen.forEach((state, p) => {
    if (state.frozen?.bytes === from) (carry.seen as CarriedIdsState[])[p] = { ...state, frozen: { ...state.frozen, bytes: to } };
  });
}

/** What a gathering read: the files, their records as a carry, and how many chunks came from the parse cache and the carry before. */
interface Gathering {
  readonly files: StoredFile[];
  readonly gathered: BuildCarry;
  readonly cachedChunks: number;
  readonly reusedChunks: number;
}

/** Retracted ids by the id partition the dedup puts them in. */
function idsByPartition(ids: ReadonlySet<string>, partitions: number): string[][] {
  const parts: string[][] = Array.from({ length: partitions }, () => []);
  for (const id of ids) parts[partitionOf(id, partitions)]!.push(id);
  return parts;
}

/** The clearances in force by VPA partition, as aggregation tasks take them. */
export function clearancesByPartition(state: CorrectionState, partitions: number): ClearanceEntry[][] {
  const parts: ClearanceEntry[][] = Array.from({ length: partitions }, () => []);
  for (const [upi, clearance] of state.clearances) {
    const bytes = Buffer.from(upi, 'latin1');
    parts[partitionOfBytes(bytes, 0, bytes.length, partitions)]!.push({ upi, createdAt: clearance.createdAt, urls: [...clearance.urls] });
  }
  return parts;
}

/**
 * The controller whose signal every phase's task takes: a build runs a task
 * a chunk or a partition, far more than the ten listeners past which Node
 * warns of a leak (each task's is removed when it settles).
 */
function stopSignal(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}
