import { rename, rm, writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScratchArrays } from '../../src/common/scratch-arrays.js';
import { ARRAY_FIELDS, type SnapshotData } from '../../src/engine/snapshot-data.js';
import { ReusedSharedArrays, freshSharedArrays } from '../../src/engine/shared-arrays.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import { assembleSnapshot } from '../../src/builder/assemble.js';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { sameBuildDifferences, snapshotDifferences } from '../fixtures/fake-snapshot.js';
import { aggregateInProcess, assembleOptionsInProcess, evidence, ingest, sample, tempDataDir, TEST_SCORED_AT, type EvidenceInput } from '../helpers.js';
import { lastLine, runCli, startServer } from '../server-process.js';

// A replaced snapshot that no thread reads any more lends its buffers to the
// next build's snapshot (shared-arrays.ts, SnapshotBuilder.reuseMemoryOf).
// What the build makes must not depend on what those buffers held, and must
// really be laid out in them.

/** Gangs sharing channels, some VPAs seen more than once, some keys past the index's inline bytes. */
function evidenceSet(round: number, size: number): EvidenceInput[] {
  const items: EvidenceInput[] = [];
  for (let i = 0; i < size; i++) {
    const upi = i % 7 === 0 ? `a.long.payee.handle.past.the.inline.bytes.${round}.${i}@okaxis` : `payee${round}.${i}@ybl`;
    items.push(evidence(upi, i % 3 === 0 ? `https://solo.example/${round}/${i}` : `https://t.me/channel${i % 17}`));
    if (i % 5 === 0) items.push(evidence(upi, `https://t.me/channel${(i + 1) % 17}`, { source_category: 'telegram' }));
  }
  return items;
}

function sharedBuffers(data: SnapshotData): SharedArrayBuffer[] {
  return [...new Set(ARRAY_FIELDS.map((field) => data[field].buffer))].filter((b): b is SharedArrayBuffer => b instanceof SharedArrayBuffer);
}

/** Overwrite every byte of the buffers, as if the old snapshot's values were anything at all. */
function poison(buffers: readonly SharedArrayBuffer[]): void {
  for (const buffer of buffers) new Uint8Array(buffer).fill(0xa5);
}

/**
 * Fields of `data` whose memory is one of `buffers`: seen by writing a byte
 * into each buffer and reading it back through the array (then undone), since
 * a buffer that went to a pool thread and back is a new object here.
 */
function fieldsIn(data: SnapshotData, buffers: readonly SharedArrayBuffer[]): string[] {
  const found: string[] = [];
  for (const field of ARRAY_FIELDS) {
    const array = data[field];
    if (array.byteLength === 0) continue;
    const bytes = new Uint8Array(array.buffer, array.byteOffset, 1);
    const kept = bytes[0]!;
    for (const buffer of buffers) {
      if (buffer.byteLength <= array.byteOffset) continue;
      const other = new Uint8Array(buffer, array.byteOffset, 1);
      const was = other[0]!;
      other[0] = was ^ 0xff;
      const seen = bytes[0] !== kept;
      other[0] = was;
      if (seen) {
        found.push(field);
        break;
      }
    }
  }
  return found;
}

test('ReusedSharedArrays gives each array the smallest buffer it fills at least half of, cleared, and a new one otherwise', () => {
  const small = new SharedArrayBuffer(1 << 20);
  const middle = new SharedArrayBuffer(4 << 20);
  const large = new SharedArrayBuffer(8 << 20);
  poison([small, middle, large]);
  // The same buffer twice is still one buffer.
  const arrays = new ReusedSharedArrays([large, small, middle, small]);

  const a = arrays.zeroed(Uint32Array, (3 << 20) / 4);
  assert.equal(a.buffer, middle);
  assert.ok(a.every((x) => x === 0));
  // Under half of the only buffer left that fits: a new buffer, not the 8 MiB one.
  const b = arrays.zeroed(Float64Array, (2 << 20) / 8);
  assert.notEqual(b.buffer, large);
  assert.ok(b.buffer instanceof SharedArrayBuffer);
  const c = arrays.zeroed(Uint8Array, 600 * 1024);
  assert.equal(c.buffer, small);
  assert.ok(c.every((x) => x === 0));
  // Past the array the old bytes stay: nothing reads them.
  assert.equal(new Uint8Array(small)[600 * 1024], 0xa5);
  const d = arrays.zeroed(Uint16Array, (5 << 20) / 2);
  assert.equal(d.buffer, large);
  assert.equal(d.length, (5 << 20) / 2);
  // Every buffer is taken now.
  assert.notEqual(arrays.zeroed(Uint8Array, 1 << 19).buffer, small);
  assert.equal(arrays.zeroed(Uint8Array, 0).length, 0);
  assert.equal(arrays.reusedBytes, (3 << 20) + 600 * 1024 + (5 << 20));
  assert.equal(arrays.freshBytes, (2 << 20) + (1 << 19));
  assert.throws(() => arrays.zeroed(Uint8Array, -1), RangeError);
});

test('a new shared array of 64 KiB or more has a sixteenth to spare, so the next, slightly larger snapshot fits in it', () => {
  const large = freshSharedArrays.zeroed(Uint32Array, 1_000_000);
  const buffer = large.buffer as unknown as SharedArrayBuffer;
  assert.ok((buffer as object) instanceof SharedArrayBuffer);
  assert.ok(buffer.byteLength >= 4_000_000 + 4_000_000 / 16);
  assert.equal(buffer.byteLength % 4096, 0);
  assert.equal(freshSharedArrays.zeroed(Uint8Array, 1000).buffer.byteLength, 1000);
  const next = new ReusedSharedArrays([buffer]);
  assert.equal(next.zeroed(Uint32Array, 1_050_000).buffer, buffer);
});

test('assembly in a replaced snapshot\'s buffers, whatever they held, makes what new memory makes, in those buffers', { timeout: 60_000 }, () => {
  const scratch = new ScratchArrays({ chunkBytes: 8 * 1024 });
  let previous: SnapshotData | null = null;
  // As large, then smaller, then larger: arrays fit the old buffers, then only some do.
  for (const [round, size] of [[0, 500], [1, 500], [2, 300], [3, 900]] as const) {
    const partial = aggregateInProcess(evidenceSet(round, size));
    const expected = assembleSnapshot([aggregateInProcess(evidenceSet(round, size))], assembleOptionsInProcess());
    const buffers: SharedArrayBuffer[] = previous === null ? [] : sharedBuffers(previous);
    poison(buffers);
    scratch.reset();
    const snapshotArrays = new ReusedSharedArrays(buffers);
    const built = assembleSnapshot([partial], { ...assembleOptionsInProcess(), scratch, snapshotArrays });
    assert.deepEqual(snapshotDifferences(built.data, expected.data), [], `round ${round}`);
    if (round === 1) {
      // As large as the snapshot before (other VPAs, keys as long): every array fits its old buffer.
      assert.deepEqual(fieldsIn(built.data, buffers).length, ARRAY_FIELDS.filter((f) => built.data[f].byteLength > 0).length);
      assert.equal(snapshotArrays.freshBytes, 0);
    }
    if (round === 3) assert.ok(snapshotArrays.freshBytes > 0, 'arrays larger than any old buffer get new ones');
    previous = built.data;
  }
});

test('a builder lays out its next snapshot in the memory of one it is handed, and drops it unused after its idle timeout', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  let collections = 0;
  const builder = new SnapshotBuilder({ threads: 2, chunkBytes: 4096, idleTimeoutMs: 2_000, collect: () => collections++ });
  try {
    const assembled: SnapshotData[] = [];
    const build = () => builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT, onAssembled: (data) => assembled.push(data) });
    await ingest(t.dir, t.root, evidenceSet(0, 400));
    const first = await build();
    assert.equal(first.reusedBytes, 0);
    const replaced = assembled.at(-1)!;

    // More sources for the same VPAs: the index and the per-VPA columns keep their sizes, the sources grow.
    await ingest(
      t.dir,
      t.root,
      evidenceSet(0, 40).map((item, i) => ({ ...item, url: `https://new.example/${i}`, evidence_id: `later-${i}` })),
    );
    builder.reuseMemoryOf(replaced);
    assert.ok(builder.reusableBytes > 0);
    const buffers = sharedBuffers(replaced);
    poison(buffers);
    const second = await build();
    assert.equal(builder.reusableBytes, 0, 'the build took them');
    const served = assembled.at(-1)!;
    // Read as a server reads it at start: into shared memory, one buffer for every array.
    const written = await readSnapshotFile(second.path, { shared: true });
    assert.deepEqual(sameBuildDifferences(served, written), []);
    // As a builder that was handed nothing builds it.
    const other = new SnapshotBuilder({ threads: 2, chunkBytes: 4096, incremental: false });
    try {
      const fresh = await other.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT, parseCache: false });
      assert.deepEqual(sameBuildDifferences(written, await readSnapshotFile(fresh.path)), []);
    } finally {
      await other.close();
    }
    // The index (built on the other pool thread) and the columns both went into the old buffers.
    const reusedFields = fieldsIn(served, buffers);
    assert.ok(reusedFields.includes('slotEntries') && reusedFields.includes('vpaCluster'), reusedFields.join());
    const arrayBytes = ARRAY_FIELDS.reduce((sum, field) => sum + served[field].byteLength, 0);
    assert.ok(second.reusedBytes > arrayBytes / 2, `${second.reusedBytes} of ${arrayBytes} bytes reused`);

    // Handed over while a build runs, it waits for that build however long it takes to assemble:
    // here past an idle timeout of 1 ms.
    const quick = new SnapshotBuilder({ threads: 2, chunkBytes: 1024, idleTimeoutMs: 1 });
    try {
      await ingest(t.dir, t.root, evidenceSet(2, 40).map((item, i) => ({ ...item, upi: evidenceSet(0, 40)[i]!.upi })));
      let handedAt = 0;
      let assembledAfter = 0;
      const report = await quick.build({
        dataDir: t.dir,
        scoredAt: TEST_SCORED_AT,
        onProgress: ({ phase, done }) => {
          if (handedAt === 0) {
            quick.reuseMemoryOf(served);
            handedAt = performance.now();
          }
          if (phase === 'assemble' && done === 0) assembledAfter = performance.now() - handedAt;
        },
      });
      assert.ok(assembledAfter > 1, `assembly began ${assembledAfter} ms after: not past the idle timeout`);
      assert.ok(report.reusedBytes > 0, 'the memory waited for the build');
    } finally {
      await quick.close();
    }

    // Held for the pool threads' idle timeout, then given back.
    builder.reuseMemoryOf(served);
    const held = builder.reusableBytes;
    assert.ok(held > 0);
    // A snapshot read from its file has one buffer for every array: nothing of it is taken, and what is held stays.
    assert.equal(builder.reuseMemoryOf(written), false);
    assert.equal(builder.reusableBytes, held);
    const before = collections;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    assert.equal(builder.reusableBytes, 0);
    assert.equal(collections, before + 1);

    // With an idle timeout of 0 nothing is ever held.
    const keepsNothing = new SnapshotBuilder({ threads: 1, idleTimeoutMs: 0 });
    try {
      assert.equal(keepsNothing.reuseMemoryOf(served), false);
      assert.equal(keepsNothing.reusableBytes, 0);
    } finally {
      await keepsNothing.close();
    }
    for (const idleTimeoutMs of [-1, 0.5, Number.NaN]) {
      assert.throws(() => new SnapshotBuilder({ idleTimeoutMs }), RangeError, String(idleTimeoutMs));
    }
  } finally {
    await builder.close();
    await t.cleanup();
  }
});

test('a build that fails once it has taken the held memory holds none of it after, and the next build in that memory is as from new memory', { timeout: 120_000 }, async () => {
  const t = await tempDataDir();
  const builder = new SnapshotBuilder({ threads: 2, chunkBytes: 4096, idleTimeoutMs: 60_000 });
  try {
    const assembled: SnapshotData[] = [];
    const build = () => builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT, onAssembled: (data) => assembled.push(data) });
    await ingest(t.dir, t.root, evidenceSet(0, 300));
    await build();
    const replaced = assembled.at(-1)!;
    await ingest(t.dir, t.root, evidenceSet(1, 300));
    assert.equal(builder.reuseMemoryOf(replaced), true);
    assert.ok(builder.reusableBytes > 0);
    poison(sharedBuffers(replaced));

    // The snapshot cannot be written (its folder is a file now): the build fails after assembling.
    const away = `${t.dir.snapshots}.away`;
    await rename(t.dir.snapshots, away);
    await writeFile(t.dir.snapshots, '');
    await assert.rejects(build());
    assert.equal(builder.reusableBytes, 0, 'what it took is not held again');
    // The assembled snapshot reaches onAssembled only if its message comes in before the
    // failed task settles (the builder drops one not yet delivered); when it does, it was
    // laid out in the held memory.
    assert.ok(assembled.length === 1 || assembled.length === 2);
    if (assembled.length === 2) assert.ok(fieldsIn(assembled[1]!, sharedBuffers(replaced)).length > 0, 'in the held memory');
    await rm(t.dir.snapshots);
    await rename(away, t.dir.snapshots);

    // Nothing reads the failed build's snapshot: its memory, which was the replaced one's, goes to the next build.
    assert.equal(builder.reuseMemoryOf(replaced), true);
    poison(sharedBuffers(replaced));
    const report = await build();
    assert.ok(report.reusedBytes > 0);
    const other = new SnapshotBuilder({ threads: 2, chunkBytes: 4096, incremental: false });
    try {
      const fresh = await other.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT, parseCache: false });
      assert.deepEqual(sameBuildDifferences(await readSnapshotFile(report.path), await readSnapshotFile(fresh.path)), []);
      assert.deepEqual(sameBuildDifferences(assembled.at(-1)!, await readSnapshotFile(fresh.path)), [], 'served as assembled');
    } finally {
      await other.close();
    }
  } finally {
    await builder.close();
    await t.cleanup();
  }
});

/** A real server with two serving threads over `evidenceSet` rounds, and what its tests ask of it. */
async function serveRounds(extraArgs: readonly string[]) {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, evidenceSet(0, 300));
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  // Two build threads whatever the host's default: the index is then built on a pool thread of its own, with its own buffers.
  // Every ingest compacted: the tests are about the memory of the snapshots swaps replace.
  const server = await startServer(t.dir.root, { args: ['--threads', '2', '--build-threads', '2', '--compact-vpas', '0', ...extraArgs] });
  const headers = { authorization: `Bearer ${key}` };
  // Loopback clients read /metrics without a token.
  const gauge = async (name: string) => {
    const value = sample(await (await fetch(`${server.base}/metrics`)).text(), name);
    assert.ok(value !== undefined, `no ${name}`);
    return value;
  };
  const waitFor = async (what: string, done: () => Promise<boolean>) => {
    for (let i = 0; !(await done()); i++) {
      assert.ok(i < 600, `${what} within 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const verdict = async (upi: string) =>
    (await (await fetch(`${server.base}/v1/verify/upi?upi=${encodeURIComponent(upi)}`, { headers })).json()) as {
      status: string;
      evidence_count?: number;
      cluster_id?: string | null;
    };
  const snapshotServed = async () => ((await (await fetch(`${server.base}/readyz`)).json()) as { snapshot: string }).snapshot;
  let rounds = 0;
  return {
    gauge,
    waitFor,
    verdict,
    /** Ingest the next round and wait until its VPAs are served, its build has finished, and the snapshot it replaced is let go. */
    async rebuild(): Promise<void> {
      const round = ++rounds;
      const builtBefore = await gauge('upi_risk_last_build_timestamp_seconds');
      const servedBefore = await snapshotServed();
      await ingest(t.dir, t.root, evidenceSet(round, 300));
      await waitFor(`round ${round} served`, async () => (await verdict(`payee${round}.1@ybl`)).status === 'FLAGGED');
      // The build's figures come once its file is written; its snapshot is served once assembled and hashed, before or after that.
      await waitFor(`the build of round ${round} finished`, async () => (await gauge('upi_risk_last_build_timestamp_seconds')) !== builtBefore);
      await waitFor(`the snapshot of round ${round} served`, async () => (await snapshotServed()) !== servedBefore);
      await waitFor('the replaced snapshot let go', async () => (await gauge('upi_risk_replaced_snapshots_held')) === 0);
    },
    /** Every VPA of every round so far answers as the evidence says. */
    async answersAsTheEvidenceSays(): Promise<void> {
      const expected = new Map<string, { count: number; onChannel: boolean }>();
      for (let round = 0; round <= rounds; round++) {
        for (const item of evidenceSet(round, 300)) {
          const seen = expected.get(item.upi) ?? { count: 0, onChannel: false };
          expected.set(item.upi, { count: seen.count + 1, onChannel: seen.onChannel || item.url.startsWith('https://t.me/') });
        }
      }
      for (const [upi, { count, onChannel }] of expected) {
        const answer = await verdict(upi);
        assert.equal(answer.status, 'FLAGGED', upi);
        assert.equal(answer.evidence_count, count, upi);
        // A VPA on a channel shares it with others of its round and of the other rounds: it is in a cluster.
        assert.equal(typeof answer.cluster_id === 'string', onChannel, upi);
      }
      assert.equal((await verdict('payee9.1@ybl')).status, 'CLEARED');
    },
    async stop(): Promise<void> {
      await server.stop();
      await t.cleanup();
    },
  };
}

test('a server lays out each rebuild in the memory of the snapshot before the one it replaces, and answers from it as from new memory', { timeout: 180_000 }, async () => {
  // Held long enough that a slow round on a busy machine still finds it.
  const server = await serveRounds(['--build-idle-seconds', '120']);
  try {
    // The first snapshot is read from its file, one buffer for all its arrays: the rebuild replacing it has nothing to reuse.
    await server.rebuild();
    await server.rebuild();
    assert.equal(await server.gauge('upi_risk_last_build_reused_bytes'), 0);
    // The snapshot of round 1 was built here, each array in a buffer of its own; it is let go now, and held for the next build.
    assert.ok((await server.gauge('upi_risk_build_reusable_bytes')) > 0);
    // The build threads wait for the next build, with their working memory.
    assert.ok((await server.gauge('upi_risk_build_threads')) > 0);
    await server.rebuild();
    assert.ok((await server.gauge('upi_risk_last_build_reused_bytes')) > 0, 'the third rebuild reused the first one\'s memory');
    await server.rebuild();
    assert.ok((await server.gauge('upi_risk_last_build_reused_bytes')) > 0);
    // From the snapshot in reused memory.
    await server.answersAsTheEvidenceSays();
  } finally {
    await server.stop();
  }
});

test('with --build-idle-seconds 0 a server keeps nothing between builds, and answers the same', { timeout: 180_000 }, async () => {
  const server = await serveRounds(['--build-idle-seconds', '0']);
  try {
    for (let round = 1; round <= 3; round++) {
      await server.rebuild();
      assert.equal(await server.gauge('upi_risk_last_build_reused_bytes'), 0);
      assert.equal(await server.gauge('upi_risk_build_reusable_bytes'), 0);
      // The build threads exit a second after the build, their working memory with them.
      await server.waitFor('the build threads exited', async () => (await server.gauge('upi_risk_build_threads')) === 0);
    }
    await server.answersAsTheEvidenceSays();
  } finally {
    await server.stop();
  }
});

test('the service never hands on the memory of the snapshot it serves', { timeout: 60_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, evidenceSet(0, 100));
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 2, scoredAt: () => TEST_SCORED_AT });
  try {
    await ingest(t.dir, t.root, evidenceSet(1, 100));
    await service.refresh();
    await service.compact();
    // Served as assembled: each array in a buffer of its own, which the builder would take from any other snapshot.
    const served = service.current.data;
    assert.equal(sharedBuffers(served).length, ARRAY_FIELDS.filter((field) => served[field].buffer instanceof SharedArrayBuffer).length);
    assert.equal(service.reuseMemoryOf(served), false);
    assert.equal(service.reusableBytes, 0);
    assert.equal(service.current.data, served);
  } finally {
    await service.close();
    await t.cleanup();
  }
});
