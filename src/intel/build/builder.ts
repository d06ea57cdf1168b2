import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { open, readFile, unlink, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { parseCacheDir } from './parse-cache.js';
import type { DataDir } from '../../common/data-dir.js';
import { UpiRiskError } from '../../common/errors.js';
import { statEvidenceFiles, evidenceFileTime } from '../../evidence/store.js';
import { DEFAULT_URL_MEMBER_CAP } from '../clustering.js';
import type { SnapshotData, SnapshotMeta } from '../../engine/snapshot-data.js';
import { aggregateBuffers, type AggregateResult, type DedupResult, type ParseResult } from './phases.js';
import type { AssembleOutcome, BuildTask } from './tasks.js';

export interface BuildOptions {
  readonly dataDir: DataDir;
  /** Cap on distinct VPAs per url for linking; see clustering. */
  readonly urlMemberCap?: number;
  /** Reference time for recency in scoring; defaults to now. */
  readonly scoredAt?: number;
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
}

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
   * How long pool threads outlive a build, ms (default 5 s). A serving
   * process keeps them longer, so builds that follow each other (an ingest
   * every few seconds) run on started threads with compiled code.
   */
  readonly idleTimeoutMs?: number;
}

const DEFAULT_CHUNK_BYTES = 32 * 1024 * 1024;

/**
 * Builds snapshots from the evidence folder on a Piscina pool. One builder
 * runs one build at a time; a data-directory lock keeps a CLI build and a
 * server's background build from racing on the cluster id state.
 */
export class SnapshotBuilder {
  readonly #pool: Piscina;
  readonly #threads: number;
  readonly #chunkBytes: number;
  #running: Promise<unknown> = Promise.resolve();

  constructor(options: BuilderOptions = {}) {
    const threads = options.threads ?? availableParallelism();
    if (!Number.isInteger(threads) || threads < 1 || threads > 256) {
      throw new RangeError(`threads must be an integer from 1 to 256, got ${threads}`);
    }
    const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    if (!Number.isInteger(chunkBytes) || chunkBytes < 1024) {
      throw new RangeError(`chunkBytes must be an integer of at least 1024, got ${chunkBytes}`);
    }
    this.#threads = threads;
    this.#chunkBytes = chunkBytes;
    this.#pool = new Piscina({
      filename: new URL('./worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: threads,
      niceIncrement: options.niceIncrement ?? 0,
      // Threads exist while builds run and a while after (idleTimeoutMs), never before the first.
      idleTimeout: options.idleTimeoutMs ?? 5_000,
      // The assemble phase holds the whole data set; the default worker heap is too small at 10M VPAs.
      resourceLimits: { maxOldGenerationSizeMb: 16 * 1024 },
    });
  }

  /** Build a snapshot from all stored evidence and write it to the data directory. */
  build(options: BuildOptions): Promise<BuildReport> {
    const result = this.#running.then(() => this.#buildLocked(options));
    this.#running = result.catch(() => {});
    return result;
  }

  async close(): Promise<void> {
    await this.#running;
    await this.#pool.destroy();
  }

  async #buildLocked(options: BuildOptions): Promise<BuildReport> {
    const release = await acquireBuildLock(options.dataDir);
    try {
      return await this.#build(options);
    } finally {
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
    const cacheDir = options.parseCache === false ? undefined : parseCacheDir(options.dataDir.state);
    const files = await statEvidenceFiles(options.dataDir);
    // Enough partitions to keep every thread busy while the slowest finishes.
    const partitions = this.#threads === 1 ? 1 : this.#threads * 2;

    const chunks = files.flatMap((file) => {
      const count = Math.max(1, Math.ceil(file.size / this.#chunkBytes));
      return Array.from({ length: count }, (_, i) => ({
        path: file.path,
        start: i * this.#chunkBytes,
        end: Math.min(file.size, (i + 1) * this.#chunkBytes),
      }));
    });
    const totalBytes = files.reduce((sum, f) => sum + f.size, 0);

    const phaseMs = { parse: 0, dedup: 0, aggregate: 0, assemble: 0, write: 0 };
    let mark = performance.now();
    let parsedBytes = 0;
    progress({ phase: 'parse', done: 0, total: totalBytes });
    const parsed = await Promise.all(
      chunks.map(async (chunk, index) => {
        const result = (await this.#pool.run({ kind: 'parse', ...chunk, chunk: index, partitions, cacheDir } satisfies BuildTask)) as ParseResult;
        parsedBytes += chunk.end - chunk.start;
        progress({ phase: 'parse', done: parsedBytes, total: totalBytes });
        return result;
      }),
    );
    const invalidLines = parsed.reduce((sum, r) => sum + r.invalidLines, 0);
    const cachedChunks = parsed.filter((r) => r.fromCache === true).length;
    const invalidSamples = parsed.flatMap((r) => r.invalidSamples).slice(0, 10);
    phaseMs.parse = performance.now() - mark;

    mark = performance.now();
    let done = 0;
    const deduped = await Promise.all(
      Array.from({ length: partitions }, async (_, p) => {
        const inputs = parsed.map((r) => r.parts[p]!);
        const result = (await this.#pool.run({ kind: 'dedup', inputs, partitions } satisfies BuildTask, {
          transferList: inputs,
        })) as DedupResult;
        progress({ phase: 'dedup', done: ++done, total: partitions });
        return result;
      }),
    );
    const duplicateEvidence = deduped.reduce((sum, r) => sum + r.duplicates, 0);
    phaseMs.dedup = performance.now() - mark;

    mark = performance.now();
    done = 0;
    const partials = await Promise.all(
      Array.from({ length: partitions }, async (_, q) => {
        const inputs = deduped.map((r) => r.parts[q]!);
        const result = (await this.#pool.run({ kind: 'aggregate', inputs, scoredAt } satisfies BuildTask, {
          transferList: inputs,
        })) as AggregateResult;
        progress({ phase: 'aggregate', done: ++done, total: partitions });
        return result;
      }),
    );
    phaseMs.aggregate = performance.now() - mark;

    progress({ phase: 'assemble', done: 0, total: 1 });
    const transferList: (ArrayBuffer | MessagePort)[] = [...new Set(partials.flatMap(aggregateBuffers))];
    const assembled = options.onAssembled === undefined ? undefined : new MessageChannel();
    if (assembled !== undefined) {
      assembled.port1.once('message', (data: SnapshotData) => options.onAssembled!(data));
      transferList.push(assembled.port2);
    }
    const task = {
      kind: 'assemble',
      partials,
      dataDirRoot: options.dataDir.root,
      urlMemberCap,
      scoredAt,
      evidenceFiles: files.map((f) => f.name),
      dataAsOf: files.reduce((newest, f) => Math.max(newest, evidenceFileTime(f.name)), 0),
      skippedLines: invalidLines + duplicateEvidence,
      ...(assembled === undefined ? {} : { assembled: assembled.port2 }),
    } satisfies BuildTask;
    // Once the task settles, a snapshot not yet delivered is dropped: the caller loads the file instead.
    const outcome = (await this.#pool.run(task, { transferList }).finally(() => assembled?.port1.close())) as AssembleOutcome;
    progress({ phase: 'assemble', done: 1, total: 1 });
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
      chunks: chunks.length,
    };
  }
}

/**
 * Exclusive build lock: `state/build.lock` holding the owner's pid. A lock
 * left by a process that no longer exists is taken over.
 */
export async function acquireBuildLock(dir: DataDir): Promise<() => Promise<void>> {
  await mkdir(dir.state, { recursive: true });
  const path = join(dir.state, 'build.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o644);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return async () => {
        await unlink(path).catch(() => {});
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new UpiRiskError('ERR_BUILD_LOCKED', `another build (pid ${owner}) is running on ${dir.root}`);
      }
      await unlink(path).catch(() => {});
    }
  }
  throw new UpiRiskError('ERR_BUILD_LOCKED', `could not take the build lock in ${dir.state}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
