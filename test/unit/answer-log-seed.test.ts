import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { HistoryError } from '../../src/common/errors.js';
import { ChangeLog, decodeStoredRecord, type DecodedStoredRecord } from '../../src/history/change-log.js';
import { ScoreColumns } from '../../src/history/score-columns.js';
import { flaggedFacts, withHistoryLog } from '../helpers.js';

// A recorder taking the fleet's history over writes its change log from the
// store's newest records (ChangeLog.seed). The numbers of those records are
// the VPAs' places in the columns, so a set of records that is not one
// history (a number twice, a VPA missing, bytes other than those decoded) is
// refused, and the log already there stays as it was.

const T0 = Date.parse('2026-11-01T00:00:00Z');

async function* inRuns(...runs: readonly DecodedStoredRecord[][]): AsyncGenerator<DecodedStoredRecord[]> {
  for (const run of runs) yield run;
}

/** Three VPAs' records, as a recorder copies them to the store. */
async function threeRecords(): Promise<DecodedStoredRecord[]> {
  const records: DecodedStoredRecord[] = [];
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    log.begin(T0, 's1');
    for (const [i, key] of ['a@ybl', 'b@ybl', 'c@ybl'].entries()) log.add(key, flaggedFacts(4000 + i), 'evidence');
    const committed = await log.commit();
    await log.recordRuns(committed.start, committed.end, (run) => {
      for (const bytes of run) records.push({ bytes, record: decodeStoredRecord(bytes, path) });
      return Promise.resolve();
    });
    await log.close();
  });
  assert.deepEqual(
    records.map((r) => r.record.number),
    [0, 1, 2],
  );
  return records;
}

test('a log is made only of records that are one history: each VPA numbered once from 0, each record the bytes decoded', async () => {
  const records = await threeRecords();
  const column = { at: T0, scoredAt: T0, values: Uint16Array.of(4000, 4001, 4002) };

  await withHistoryLog(async (path) => {
    await ChangeLog.seed(path, T0, T0, inRuns(records.slice(0, 2), records.slice(2)), column);
    const files = await readdir(dirname(path));
    const refused = async (why: RegExp, runs: DecodedStoredRecord[][], withColumn = column): Promise<void> => {
      await assert.rejects(ChangeLog.seed(path, T0, T0, inRuns(...runs), withColumn), (error: unknown) => error instanceof HistoryError && why.test(error.message));
      assert.deepEqual(await readdir(dirname(path)), files, 'nothing left beside the log, and the log kept');
    };

    await refused(/two VPAs are numbered 1/, [records, [records[1]!]]);
    await refused(/2 VPAs numbered up to 2: some VPA's record is missing/, [[records[0]!, records[2]!]]);
    const damaged = Buffer.from(records[1]!.bytes);
    damaged[damaged.length - 1]! ^= 1;
    await refused(/is not the bytes it was decoded from/, [[records[0]!, { bytes: damaged, record: records[1]!.record }, records[2]!]]);
    // Another record's bytes, whole, beside this one's reading.
    await refused(/is not the bytes it was decoded from/, [[records[0]!, { bytes: records[2]!.bytes, record: records[1]!.record }, records[2]!]]);
    await refused(/a column of 4 VPAs beside the records of 3/, [records], { ...column, values: Uint16Array.of(1, 2, 3, 4) });

    const kept = await ChangeLog.open(path, T0);
    try {
      assert.equal(kept.vpaCount, 3);
      for (const key of ['a@ybl', 'b@ybl', 'c@ybl']) assert.notEqual(kept.latest(key), null, key);
    } finally {
      await kept.close();
    }
  });
});

test("a number far past the records' count is refused as a missing record, without room made for it", async () => {
  const records = await threeRecords();
  const far = Buffer.from(records[2]!.bytes);
  far.writeUInt32LE(0xfffffff0, 36);
  far.writeUInt32LE(crc32(far.subarray(4)), 0);
  await withHistoryLog(async (path) => {
    const before = process.memoryUsage().arrayBuffers;
    await assert.rejects(
      ChangeLog.seed(path, T0, T0, inRuns([records[0]!, records[1]!, { bytes: far, record: { ...records[2]!.record, number: 0xfffffff0 } }]), null),
      (error: unknown) => error instanceof HistoryError && /3 VPAs numbered up to 4294967280: some VPA's record is missing/.test(error.message),
    );
    assert.ok(process.memoryUsage().arrayBuffers - before < 64 << 20, 'no bitset of the number claimed');
  });
});

test('a column that cannot be written leaves the log and its columns as they were', async () => {
  const records = await threeRecords();
  await withHistoryLog(async (path) => {
    await ChangeLog.seed(path, T0, T0, inRuns(records), { at: T0, scoredAt: T0, values: Uint16Array.of(4000, 4001, 4002) });
    const scores = join(dirname(path), 'scores');
    const files = await readdir(dirname(path));
    const columns = await readdir(scores);
    // A column whose values are gone by the time they are written: the write fails after the records were checked.
    const lost = new Uint16Array(3);
    structuredClone(lost.buffer, { transfer: [lost.buffer] });
    await assert.rejects(ChangeLog.seed(path, T0, T0, inRuns(records.slice(0, 2)), { at: T0 + 1, scoredAt: T0, values: lost }), HistoryError);
    assert.deepEqual(await readdir(dirname(path)), files, 'nothing left beside the log');
    assert.deepEqual(await readdir(scores), columns, 'the columns kept');
    const kept = await ChangeLog.open(path, T0);
    const kepts = await ScoreColumns.open(scores, T0);
    try {
      assert.equal(kept.vpaCount, 3, 'the log kept');
      assert.equal(await kepts.valueOf(kepts.at(T0)!, 2), 4002);
    } finally {
      await kept.close();
    }
  });
});
