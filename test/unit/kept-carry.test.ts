import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, rm, stat, truncate, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SnapshotBuilder, type BuilderOptions, type GatheredEvidence, type KeptCarryReport } from '../../src/builder/snapshot-builder.js';
import type { DataDir } from '../../src/common/data-dir.js';
import { readSnapshotFile } from '../../src/engine/snapshot-files.js';
import type { SnapshotData } from '../../src/engine/snapshot-data.js';
import type { CorrectionState } from '../../src/evidence/corrections.js';
import { listEvidenceFiles } from '../../src/evidence/store.js';
import { RecordReader, recordEndAt } from '../../src/builder/record-codec.js';
import { recordsFrom, recordsOf } from '../../src/builder/carry-reader.js';
import { BlockIndex } from '../../src/builder/record-blocks.js';
import { sameBuildDifferences as sameBuild } from '../fixtures/fake-snapshot.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT, type EvidenceInput } from '../helpers.js';

const run = promisify(execFile);

// A builder with keepCarry writes its carry at close, and the next builder
// over the same folder starts from it: it must build, find and hand on
// exactly what a builder that read every file does, read only the files
// stored since, and refuse a kept carry that is not whole or not of its
// files, reading every file then.

function batch(round: number): EvidenceInput[] {
  return Array.from({ length: 12 + (round % 3) * 7 }, (_, i) =>
    evidence(`r${round}.member${i}@ybl`, `https://t.me/gang${(round + i) % 5}`, {
      evidence_id: `r${round}-item${i}`,
      captured_at: new Date(Date.UTC(2026, 0, 1 + round, i)).toISOString(),
      ...(i % 4 === 3 && round > 0 ? { upi: `r${round - 1}.member${i}@ybl` } : {}),
    }),
  );
}

interface Setup {
  readonly dir: DataDir;
  readonly root: string;
  readonly spillDir: string;
  corrections: CorrectionState;
  readonly reports: KeptCarryReport[];
  builder(options?: Partial<BuilderOptions>): SnapshotBuilder;
  cleanup(): Promise<void>;
}

async function setup(): Promise<Setup> {
  const t = await tempDataDir();
  const s: Setup = {
    dir: t.dir,
    root: t.root,
    spillDir: t.dir.carry,
    corrections: { sequence: 0, retracted: new Set(), clearances: new Map() },
    reports: [],
    builder: (options = {}) =>
      new SnapshotBuilder({
        threads: 2,
        chunkBytes: 2048,
        indexCarry: true,
        spillDir: t.dir.carry,
        keepCarry: true,
        corrections: () => s.corrections,
        onKeptCarry: (report) => s.reports.push(report),
        ...options,
      }),
    cleanup: t.cleanup,
  };
  return s;
}

/** The segment files the carry kept in `spillDir` names, or null when none is kept. */
async function keptSegmentFiles(spillDir: string): Promise<string[] | null> {
  const text = await readFile(join(spillDir, 'kept-carry.json'), 'utf8').catch(() => null);
  if (text === null) return null;
  const files: string[] = [];
  JSON.stringify(JSON.parse(text), (key, value: unknown) => {
    if (key === 'file' && typeof value === 'string') files.push(value);
    return value;
  });
  return files;
}

/** A carry kept in `spillDir`, if any, names only segment files that are there. */
async function assertKeptWhole(spillDir: string): Promise<void> {
  const named = await keptSegmentFiles(spillDir);
  if (named === null) return;
  const there = new Set(await readdir(spillDir));
  assert.deepEqual(named.filter((name) => !there.has(name)), [], 'a kept carry never names a file that is gone');
}

/** The VPAs of the records in `inputs` whose chunk `wanted` takes. */
function upisOf(inputs: readonly SharedArrayBuffer[], wanted: (chunk: number) => boolean = () => true): string[] {
  const upis: string[] = [];
  for (const input of inputs) {
    const reader = new RecordReader(input, 0);
    while (reader.next()) if (wanted(reader.chunk)) upis.push(Buffer.from(reader.raw.subarray(reader.upiStart, reader.urlStart)).toString('latin1'));
  }
  return upis;
}

function retract(s: Setup, ...ids: string[]): void {
  s.corrections = { sequence: s.corrections.sequence + 1, retracted: new Set([...s.corrections.retracted, ...ids]), clearances: s.corrections.clearances };
}

async function built(builder: SnapshotBuilder, dir: DataDir): Promise<{ reusedChunks: number; data: SnapshotData }> {
  const report = await builder.build({ dataDir: dir, scoredAt: TEST_SCORED_AT });
  return { reusedChunks: report.reusedChunks, data: await readSnapshotFile(report.path) };
}

/** What a builder that reads every file builds now. */
async function reference(s: Setup, threads = 2): Promise<SnapshotData> {
  const fresh = new SnapshotBuilder({ threads, chunkBytes: 2048, incremental: false, corrections: () => s.corrections });
  try {
    return (await built(fresh, s.dir)).data;
  } finally {
    await fresh.close();
  }
}

/**
 * Build with a new builder, which must have read the kept carry (its report
 * number `report`), the snapshot a builder reading every file makes; the
 * chunks it carried.
 */
async function buildFromKept(s: Setup, report: number): Promise<number> {
  const next = s.builder();
  try {
    const mine = await built(next, s.dir);
    assert.ok(s.reports[report]?.used === true, JSON.stringify(s.reports));
    assert.deepEqual(sameBuild(mine.data, await reference(s)), []);
    return mine.reusedChunks;
  } finally {
    await next.close();
  }
}

/**
 * Run a first builder over rounds [0, rounds): builds, absorbs, a retraction of a carried item; then
 * close it, keeping its carry. `twin`, a builder holding its carry in memory, does the same and lives on.
 */
async function firstLife(s: Setup, rounds: number, twin?: SnapshotBuilder): Promise<void> {
  const builder = s.builder();
  const both = twin === undefined ? [builder] : [builder, twin];
  try {
    for (let round = 0; round < rounds; round++) {
      await ingest(s.dir, s.root, batch(round));
      for (const b of both) {
        if (round % 2 === 0) await b.build({ dataDir: s.dir, scoredAt: TEST_SCORED_AT });
        else await b.absorb(s.dir);
      }
    }
    retract(s, 'r1-item2');
    for (const b of both) await b.retractAndRead(s.dir, ['r1-item2'], new Set(['r1.member2@ybl']));
    // Some segments in files, the newest maybe still in memory: the close writes those.
  } finally {
    await builder.close();
  }
}

test('a carry kept at close is read back by the next builder: the same snapshots and lookups, only new files read', async () => {
  const s = await setup();
  // Lives through the same, never stopped: what the restarted builder must find.
  const twin = new SnapshotBuilder({ threads: 2, chunkBytes: 2048, indexCarry: true, corrections: () => s.corrections });
  try {
    await firstLife(s, 7, twin);
    const names = await readdir(s.spillDir);
    assert.ok(names.includes('kept-carry.json') && names.includes('kept-carry.bin'), `kept: ${names.join(', ')}`);
    // Ids frozen, their bytes in a file of the folder as a segment's (carried-ids.ts): the next builder reads them there.
    const manifest = JSON.parse(await readFile(join(s.spillDir, 'kept-carry.json'), 'utf8')) as { ids: { frozen: { file: string } | null }[] };
    const frozen = manifest.ids.flatMap((part) => (part.frozen === null ? [] : [part.frozen.file]));
    assert.ok(frozen.length > 0 && frozen.every((file) => names.includes(file)), `frozen ids in files: ${frozen.join(', ')}`);
    // While stopped: a new file, and a retraction of an item the carry holds.
    await ingest(s.dir, s.root, batch(7));
    retract(s, 'r3-item5');

    const next = s.builder();
    try {
      const mine = await built(next, s.dir);
      assert.deepEqual(s.reports.length, 1);
      const report = s.reports[0]!;
      assert.ok(report.used && report.files === 7 && report.bytes > 0, JSON.stringify(report));
      const keptFiles = (await listEvidenceFiles(s.dir)).slice(0, 7);
      const keptChunks = (await Promise.all(keptFiles.map((name) => stat(join(s.dir.evidence, name))))).reduce((sum, file) => sum + Math.max(1, Math.ceil(file.size / 2048)), 0);
      assert.equal(mine.reusedChunks, keptChunks, 'none of the kept files read again');
      assert.deepEqual(sameBuild(mine.data, await reference(s)), [], 'the snapshot of a builder reading every file');
      await assertKeptWhole(s.spillDir);

      const ids = ['r0-item0', 'r1-item2', 'r3-item5', 'r7-item3', 'missing'];
      await built(twin, s.dir);
      assert.deepEqual(await next.locateEvidence(s.dir, ids), await twin.locateEvidence(s.dir, ids));
      const asked = new Set(['r1.member2@ybl', 'r3.member5@ybl', 'r2.member3@ybl', 'r6.member0@ybl']);
      const found = await next.retractAndRead(s.dir, [], asked, { withIds: true });
      assert.deepEqual(found, await twin.retractAndRead(s.dir, [], asked, { withIds: true }));
      assert.deepEqual(found.get('r3.member5@ybl')!.map((item) => [item.id, item.retracted]), [['r3-item5', true]], 'retracted while stopped: marked');
      // And on: an ingest reads only its file.
      await ingest(s.dir, s.root, batch(8));
      const after = await built(next, s.dir);
      assert.deepEqual(sameBuild(after.data, await reference(s)), []);
    } finally {
      await next.close();
    }
    // Kept again by that builder, and used by a third.
    const third = s.builder();
    try {
      await built(third, s.dir);
      assert.ok(s.reports[1]?.used === true, JSON.stringify(s.reports));
    } finally {
      await third.close();
    }
  } finally {
    await twin.close();
    await s.cleanup();
  }
});

test('the kept files not served yet are handed on with their records that count, retracted ones left out', async () => {
  const s = await setup();
  try {
    await firstLife(s, 5);
    const files = await listEvidenceFiles(s.dir);
    const served = new Set(files.slice(0, 3));
    const handed: GatheredEvidence[] = [];
    const next = s.builder({ served: () => served, onEvidence: (evidence) => handed.push(evidence) });
    try {
      await next.absorb(s.dir);
      assert.ok(s.reports[0]?.used === true);
      assert.deepEqual(
        handed.flatMap((h) => h.files.map((f) => f.name)),
        files.slice(3),
      );
      // The records handed of those files' chunks: every item of rounds 3 and 4 (the files left), none retracted (r1-item2 is of round 1).
      const chunks = handed[0]!.files;
      const upis = upisOf(handed[0]!.inputs, (chunk) => chunks.some((f) => chunk >= f.firstChunk && chunk < f.endChunk));
      const expected = [...batch(3), ...batch(4)].map((item) => item.upi);
      assert.deepEqual(upis.sort(), expected.sort());
    } finally {
      await next.close();
    }
    // A retraction of a handed item leaves it out.
    retract(s, 'r4-item0');
    const handedAgain: GatheredEvidence[] = [];
    const third = s.builder({ served: () => served, onEvidence: (evidence) => handedAgain.push(evidence) });
    try {
      await third.absorb(s.dir);
      const upis = upisOf(handedAgain[0]!.inputs);
      assert.equal(upis.filter((upi) => upi === 'r4.member0@ybl').length, 0);
      assert.equal(upis.length, batch(3).length + batch(4).length - 1);
    } finally {
      await third.close();
    }
  } finally {
    await s.cleanup();
  }
});

test('segments still in memory at close are written with the carry', async () => {
  const s = await setup();
  try {
    const builder = s.builder();
    let spilledBefore: number;
    try {
      for (let round = 0; round < 3; round++) await ingest(s.dir, s.root, batch(round));
      await builder.absorb(s.dir);
      spilledBefore = (await readdir(s.spillDir).catch(() => [] as string[])).length;
    } finally {
      // At once: the spill after the absorb has written a segment at most.
      await builder.close();
    }
    const records = (await readdir(s.spillDir)).filter((name) => name.endsWith('.records'));
    assert.ok(records.length > spilledBefore + 1, `written at close: ${spilledBefore} files before, ${records.length} after`);
    await buildFromKept(s, 0);
  } finally {
    await s.cleanup();
  }
});

test('a stop before or while the files stored since are parsed keeps the carry again, and the next builder uses it', async () => {
  const s = await setup();
  try {
    await firstLife(s, 4);
    await ingest(s.dir, s.root, batch(4));
    const stopped = s.builder();
    // The close stops the gathering as it reads the new file: the kept carry, read back and adopted, is not lost.
    const absorbing = stopped.absorb(s.dir);
    await stopped.close();
    await assert.rejects(absorbing);
    assert.ok(s.reports[0]?.used === true, JSON.stringify(s.reports));
    const names = await readdir(s.spillDir);
    assert.ok(names.includes('kept-carry.json') && names.includes('kept-carry.bin'), `kept again: ${names.join(', ')}`);

    assert.ok((await buildFromKept(s, 1)) > 0);
    assert.ok(s.reports[1]?.used === true && s.reports[1].files === 4, JSON.stringify(s.reports));
  } finally {
    await s.cleanup();
  }
});

test('a kept carry stays, with its files, while the builder that read it stands: a crash finds it whole', async () => {
  const s = await setup();
  let copy: Awaited<ReturnType<typeof tempDataDir>> | undefined;
  try {
    // Eight rounds: enough segments that the gatherings below merge the kept ones away from the carry.
    await firstLife(s, 8);
    const named = (await keptSegmentFiles(s.spillDir))!;
    assert.ok(named.length > 0);
    const running = s.builder();
    try {
      await running.absorb(s.dir);
      assert.ok(s.reports[0]?.used === true, JSON.stringify(s.reports));
      for (const round of [8, 9, 10]) {
        await ingest(s.dir, s.root, batch(round));
        await running.absorb(s.dir);
      }
      // A lean build lets the carry go; the kept one is still a true carry of its files.
      await running.build({ dataDir: s.dir, scoredAt: TEST_SCORED_AT, lean: true });
      assert.deepEqual(await keptSegmentFiles(s.spillDir), named, 'the same kept carry');
      await assertKeptWhole(s.spillDir);
      // The process dies here: what a restart finds is this folder as it is.
      copy = await tempDataDir();
      // `cp -a`: the copy's evidence files keep their times to the nanosecond, which the carry holds them by.
      await run('cp', ['-a', s.dir.root, copy.dir.root]);
      const copySetup = { ...s, reports: [] as KeptCarryReport[] };
      const restarted = s.builder({ spillDir: copy.dir.carry, onKeptCarry: (report) => copySetup.reports.push(report) });
      try {
        const mine = await built(restarted, copy.dir);
        // The carry of the last clean stop: its eight files carried, the three stored since read.
        assert.ok(copySetup.reports[0]?.used === true && copySetup.reports[0].files === 8 && mine.reusedChunks > 0, JSON.stringify(copySetup.reports));
        assert.deepEqual(sameBuild(mine.data, await reference({ ...s, dir: copy.dir })), []);
      } finally {
        await restarted.close();
      }
    } finally {
      // With no carry to keep (the lean build let it go), the close leaves the kept one as it is.
      await running.close();
    }
    assert.deepEqual(await keptSegmentFiles(s.spillDir), named);
    await assertKeptWhole(s.spillDir);
  } finally {
    await copy?.cleanup();
    await s.cleanup();
  }
});

test('a clean close replaces the kept carry, and the files only the old one named go', async () => {
  const s = await setup();
  try {
    await firstLife(s, 8);
    const named = (await keptSegmentFiles(s.spillDir))!;
    const reader = s.builder();
    try {
      // Nothing new: the gathering adopts the kept carry and writes nothing.
      await reader.absorb(s.dir);
      assert.ok(s.reports[0]?.used === true);
      assert.deepEqual(await keptSegmentFiles(s.spillDir), named, 'the same kept carry');
      for (const round of [8, 9]) {
        await ingest(s.dir, s.root, batch(round));
        await reader.absorb(s.dir);
      }
    } finally {
      await reader.close();
    }
    const renamed = (await keptSegmentFiles(s.spillDir))!;
    assert.notDeepEqual(renamed, named);
    const records = (await readdir(s.spillDir)).filter((name) => name.endsWith('.records'));
    assert.deepEqual(records.sort(), [...new Set(renamed)].sort(), 'the segment files the new kept carry names, and no others');
    await buildFromKept(s, 1);
  } finally {
    await s.cleanup();
  }
});

test('recordsFrom gives the records of the chunks from one on that count, across segments of many blocks', async () => {
  const s = await setup();
  // One large file of many chunks (segments of several blocks a pair), then smaller ones; some items retracted.
  const big = Array.from({ length: 9000 }, (_, i) => evidence(`big${i % 7000}@ybl`, `https://pages.example/p${i % 300}`, { evidence_id: `big-${i}` }));
  const builder = new SnapshotBuilder({ threads: 1, chunkBytes: 64 * 1024, corrections: () => s.corrections });
  try {
    await ingest(s.dir, s.root, big);
    await builder.absorb(s.dir);
    for (let round = 0; round < 3; round++) {
      await ingest(s.dir, s.root, batch(round));
      await builder.absorb(s.dir);
    }
    retract(s, 'big-10', 'big-4500', 'big-8999', 'r1-item0');
    await builder.retractAndRead(s.dir, [...s.corrections.retracted], new Set());
    const upis = new Set([...big, ...batch(0), ...batch(1), ...batch(2)].map((item) => item.upi));
    await builder.readCarry(s.dir, (carry) => {
      const index = new BlockIndex();
      const all = [...recordsOf(carry, upis, index).values()].flat();
      assert.ok(
        carry.records.some((pairs) => pairs.some((segments) => segments.some((segment) => index.of(segment).blocks > 1))),
        'a segment of several blocks',
      );
      for (const fromChunk of [0, 1, 17, Math.floor(carry.chunks / 2), carry.chunks - 2, carry.chunks - 1, carry.chunks]) {
        const expected = all.filter((item) => !item.retracted && new DataView(item.record.buffer, item.record.byteOffset).getUint32(0, true) >= fromChunk);
        const bytes = new Uint8Array(recordsFrom(carry, fromChunk, index));
        const got: string[] = [];
        for (let at = 0; at < bytes.length; ) {
          const end = recordEndAt(bytes, at);
          got.push(Buffer.from(bytes.subarray(at, end)).toString('hex'));
          at = end;
        }
        assert.deepEqual(got.sort(), expected.map((item) => Buffer.from(item.record).toString('hex')).sort(), `from chunk ${fromChunk} of ${carry.chunks}`);
      }
    });
  } finally {
    await builder.close();
    await s.cleanup();
  }
});

const REFUSALS: { readonly what: string; readonly reason: RegExp; readonly spoil: (s: Setup) => Promise<void>; readonly options?: Partial<BuilderOptions> }[] = [
  {
    what: 'arrays that fail their CRC',
    reason: /fails its CRC/,
    spoil: async (s) => {
      const path = join(s.spillDir, 'kept-carry.bin');
      const bytes = await readFile(path);
      bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0x5a;
      await writeFile(path, bytes);
    },
  },
  {
    what: 'a segment file cut short',
    reason: /holds \d+ bytes, \d+ were written/,
    spoil: async (s) => {
      const file = (await readdir(s.spillDir)).find((name) => name.endsWith('.records'))!;
      await truncate(join(s.spillDir, file), 10);
    },
  },
  {
    what: 'a segment file gone',
    reason: /cannot be opened: ENOENT/,
    spoil: async (s) => {
      const file = (await readdir(s.spillDir)).find((name) => name.endsWith('.records'))!;
      await rm(join(s.spillDir, file));
    },
  },
  {
    what: 'a description that is not JSON',
    reason: /not JSON/,
    spoil: (s) => writeFile(join(s.spillDir, 'kept-carry.json'), '{"format": 1,'),
  },
  {
    what: 'a description of another format',
    reason: /not a kept carry of this release/,
    spoil: async (s) => {
      const path = join(s.spillDir, 'kept-carry.json');
      const manifest = JSON.parse(await readFile(path, 'utf8')) as { format: number };
      await writeFile(path, JSON.stringify({ ...manifest, format: manifest.format + 1 }));
    },
  },
  {
    what: 'records made by other parse rules',
    reason: /parse rules of version/,
    spoil: async (s) => {
      const path = join(s.spillDir, 'kept-carry.json');
      const manifest = JSON.parse(await readFile(path, 'utf8')) as { parseVersion: number };
      await writeFile(path, JSON.stringify({ ...manifest, parseVersion: manifest.parseVersion + 1 }));
    },
  },
  {
    what: 'a corrections journal shorter than when it was kept',
    reason: /kept after 1 corrections; the journal now holds 0/,
    spoil: async (s) => {
      s.corrections = { sequence: 0, retracted: new Set(), clearances: new Map() };
    },
  },
  {
    what: 'a builder of another partition count',
    reason: /kept for 4 partitions/,
    spoil: async () => {},
    options: { threads: 3 },
  },
  {
    what: 'an evidence file changed since',
    reason: /not those it was kept with/,
    spoil: async (s) => {
      const [first] = await listEvidenceFiles(s.dir);
      await utimes(join(s.dir.evidence, first!), new Date(), new Date(Date.now() + 5000));
    },
  },
];

for (const refusal of REFUSALS) {
  test(`a kept carry is refused, and every file read, for ${refusal.what}`, async () => {
    const s = await setup();
    try {
      await firstLife(s, 3);
      await refusal.spoil(s);
      const next = s.builder(refusal.options);
      try {
        const mine = await built(next, s.dir);
        assert.equal(s.reports.length, 1);
        const report = s.reports[0]!;
        assert.ok(!report.used && refusal.reason.test(report.reason), JSON.stringify(report));
        assert.equal(mine.reusedChunks, 0, 'every file read');
        assert.deepEqual(sameBuild(mine.data, await reference(s, refusal.options?.threads)), []);
        assert.ok(!(await readdir(s.spillDir)).includes('kept-carry.json'), 'a refused carry is removed at once');
      } finally {
        await next.close();
      }
      const left = await readdir(s.spillDir);
      assert.ok(left.includes('kept-carry.json'), 'its own carry kept at close instead');
    } finally {
      await s.cleanup();
    }
  });
}

test('a builder that reads nothing before its close keeps nothing, and one without keepCarry leaves no kept carry', async () => {
  const s = await setup();
  try {
    await ingest(s.dir, s.root, batch(0));
    await s.builder().close();
    assert.deepEqual(await readdir(s.spillDir).catch(() => []), []);
    const plain = s.builder({ keepCarry: false });
    await plain.build({ dataDir: s.dir, scoredAt: TEST_SCORED_AT });
    await plain.close();
    assert.deepEqual(await readdir(s.spillDir), []);
  } finally {
    await s.cleanup();
  }
});
