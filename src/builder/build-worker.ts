import { Piscina } from 'piscina';
import { performance } from 'node:perf_hooks';
import { aggregateBuffers, aggregatePartition, carriedIdsBuffers, dedupPartition, indexBuffers, parseChunk } from './phases.js';
import { assembleSnapshot, assembleSnapshotIndexedElsewhere } from './assemble.js';
import { mergeDelta } from './delta-merge.js';
import { readParsedChunk, writeParsedChunk } from './parse-cache.js';
import { readClusterIdState, writeClusterIdState } from './cluster-ids/state-file.js';
import { newSnapshotId, writeSnapshot } from '../engine/snapshot-files.js';
import { toSharedMemory } from '../engine/snapshot-format/shared-memory.js';
import { buildIndexArrays, longestKey, type IndexArrays } from '../engine/vpa-index.js';
import type { MessagePort } from 'node:worker_threads';
import { dataDir } from '../common/data-dir.js';
import { ScratchArrays } from '../common/scratch-arrays.js';
import { threadCollector } from '../common/collector.js';
import { DELTA_COLLECT_BYTES, DroppedSharedMemory } from '../common/dropped-shared-memory.js';
import { ReusedSharedArrays } from '../engine/shared-arrays.js';
import type { AssembleOutcome, AssembleTask, BuildTask, IndexReply, IndexResult, IndexTask } from './tasks.js';

/**
 * This thread's working memory for aggregation, assembly and indexing,
 * kept from one task to the next: a build on a pool thread that has built
 * before touches pages it touched then instead of mapping new ones (see
 * scratch-arrays.ts). A pool thread runs one task at a time, so each of
 * those tasks starts by taking all of it back. It goes when the thread
 * does, after the builder's idle timeout, or before where the builder
 * says so (BuilderOptions.releaseWorkingMemory).
 */
const scratch = new ScratchArrays();

/** The deltas this thread made, in shared memory, collected once enough have piled up (dropped-shared-memory.ts). */
const droppedDeltas = new DroppedSharedMemory(DELTA_COLLECT_BYTES, () => threadCollector()?.());

/** Pool thread entry: runs one build phase. Outputs are moved, never cloned. */
export default async function runBuildTask(task: BuildTask): Promise<unknown> {
  switch (task.kind) {
    case 'parse': {
      const cached = task.cacheDir === undefined ? null : readParsedChunk(task.cacheDir, task);
      if (cached !== null) return movable({ ...cached, fromCache: true }, cached.parts);
      const result = parseChunk(task);
      if (task.cacheDir !== undefined) writeParsedChunk(task.cacheDir, task, result);
      return movable(result, result.parts);
    }
    case 'dedup': {
      const result = dedupPartition(task);
      // Ids frozen now leave the open table and bytes they were made from, as large as a partition's ids: a pool
      // thread allocating little until it exits would hold them all the while (carried-ids.ts, compactState).
      const collect = result.seen.frozen === (task.seen?.frozen ?? null) ? undefined : threadCollector();
      if (collect !== undefined) setImmediate(collect);
      // The records are shared memory; only the id tables move (the frozen ids' bytes are shared memory or a file).
      return movable(result, carriedIdsBuffers(result.seen));
    }
    case 'aggregate': {
      scratch.reset();
      const result = aggregatePartition(task, scratch);
      return movable(result, aggregateBuffers(result));
    }
    case 'assemble':
      // What aggregation left in it would stand, unused, beside the partials and the snapshot (BuilderOptions.releaseWorkingMemory).
      if (task.releaseScratch === true) letGoOfScratch();
      scratch.reset();
      return assemble(task);
    case 'delta': {
      // The delta's arrays are shared memory; the records applied, kept for a later merge, move.
      const result = mergeDelta(task);
      // This thread lets go of the delta it made once it is posted, and of the one it merged onto, about as large: counted once.
      droppedDeltas.dropped(result.delta.meta.bytes);
      return movable(result, result.applied.map((a) => a.records));
    }
    case 'collect':
      if (task.scratch === true) scratch.release();
      threadCollector()?.();
      return null;
    case 'index': {
      scratch.reset();
      // Shared: the assembled snapshot is served from these arrays as they are.
      const own = new ReusedSharedArrays(task.reuse ?? []);
      try {
        const arrays = buildIndexArrays(task.keyBytes, task.keyOffsets, task.count, { arrays: own, scratch });
        // Collected once the task is gone: the keys it read go too (assemble.ts lets go of its own reference to them).
        if (task.releaseScratch === true) letGoOfScratch(setImmediate);
        return movable({ arrays, reusedBytes: own.reusedBytes, workingBytesKept: scratch.retainedBytes } satisfies IndexResult, indexBuffers(arrays));
      } finally {
        letGoOfUnused(own, task.reuse);
      }
    }
  }
}

async function assemble(task: AssembleTask): Promise<AssembleOutcome> {
  const snapshotArrays = new ReusedSharedArrays(task.reuse ?? []);
  try {
    return await assembleInto(task, snapshotArrays);
  } finally {
    letGoOfUnused(snapshotArrays, task.reuse);
  }
}

/**
 * Let go of this thread's working memory now, rather than keep it for the
 * next task, and collect it (collector.ts, where it can): at once, or when
 * `when` runs the collection (after the task, so that what the task's own
 * frames hold goes too).
 */
function letGoOfScratch(when: (collect: () => void) => void = (collect) => collect()): void {
  scratch.release();
  const collect = threadCollector();
  if (collect !== undefined) when(collect);
}

/**
 * A replaced snapshot's buffers that no array took are freed with this
 * thread's next collection, which a pool thread, allocating little between
 * builds, may not have for a long while: so it runs one, once the task is
 * done with them, where it can (collector.ts).
 */
function letGoOfUnused(arrays: ReusedSharedArrays, given: readonly SharedArrayBuffer[] | undefined): void {
  if (arrays.releaseUnused() === 0) return;
  if (given !== undefined) (given as SharedArrayBuffer[]).length = 0;
  const collect = threadCollector();
  if (collect !== undefined) setImmediate(collect);
}

async function assembleInto(task: AssembleTask, snapshotArrays: ReusedSharedArrays): Promise<AssembleOutcome> {
  const dir = dataDir(task.dataDirRoot);
  const started = performance.now();
  const previous = await readClusterIdState(dir.clusterIds);
  const createdAt = Date.now();
  const options = {
    // Moved here with the task, the partials are this thread's to drop: a collection as each is copied gives its
    // memory back before the next is copied and the snapshot's arrays take as much again (bench/MEASUREMENTS.md,
    // "Memory of an embedded server", "Working memory let go at assembly").
    partialCopied: () => threadCollector()?.(),
    // Collected now, the rows' memory goes before the url and cluster columns are made (assemble.ts).
    rowsCopied: () => threadCollector()?.(),
    urlMemberCap: task.urlMemberCap,
    scoredAt: task.scoredAt,
    evidenceMaxAgeMs: task.evidenceMaxAgeMs,
    correctionSequence: task.correctionSequence,
    previousClusterIds: previous,
    scratch,
    snapshotArrays,
    meta: {
      id: newSnapshotId(createdAt),
      createdAt,
      dataAsOf: task.dataAsOf,
      evidenceFiles: task.evidenceFiles,
      skippedLines: task.skippedLines,
    },
  };
  const port = task.index;
  const { data, clusterIds } =
    port === undefined
      ? assembleSnapshot(task.partials, options)
      : await assembleSnapshotIndexedElsewhere(task.partials, options, (keyBytes, keyOffsets, count) => indexElsewhere(port, { keyBytes, keyOffsets, count }));
  const assembled = performance.now();
  // Cluster ids first: a crash between the two writes then only skips numbers, never hands one out twice.
  await writeClusterIdState(dir.clusterIds, clusterIds);
  if (task.assembled !== undefined) {
    // The ids it names are persisted by now; the snapshot file follows.
    // Assembled in shared memory, so posted without a copy.
    task.assembled.postMessage({ ...toSharedMemory(data), maxKeyLength: longestKey(data) });
    task.assembled.close();
  }
  // The keys and every working array are done with: only the snapshot's own arrays are written.
  if (task.releaseScratch === true) letGoOfScratch();
  const path = await writeSnapshot(dir, data);
  return {
    path,
    meta: data.meta,
    assembleMs: assembled - started,
    writeMs: performance.now() - assembled,
    reusedBytes: snapshotArrays.reusedBytes,
    workingBytesKept: scratch.retainedBytes,
  };
}

/** Ask for the index of these keys (in shared memory: they are not copied) and wait for the arrays. */
function indexElsewhere(port: MessagePort, task: IndexTask): Promise<IndexArrays> {
  return new Promise((resolve, reject) => {
    port.once('message', (reply: IndexReply) => {
      port.close();
      if ('arrays' in reply) resolve(reply.arrays);
      else reject(new Error(`building the index failed: ${reply.error}`));
    });
    port.postMessage(task);
  });
}

function movable<T extends object>(value: T, transfer: ArrayBuffer[]): T {
  const wrapped = {
    [Piscina.transferableSymbol]: transfer,
    [Piscina.valueSymbol]: value,
  };
  return Piscina.move(wrapped as never) as unknown as T;
}
