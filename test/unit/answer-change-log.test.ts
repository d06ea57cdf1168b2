import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { HistoryError } from '../../src/common/errors.js';
import type { ChangeCause } from '../../src/api/history-paths.js';
import { CLEARED_FACTS, ChangeLog, toldOf, type AnswerFacts } from '../../src/history/change-log.js';
import { flaggedFacts, withHistoryLog } from '../helpers.js';

// The history of answers on disk: each VPA's changes chained newest to
// oldest, an index of the newest made again at open, a torn or unserved
// tail cut off, and anything else this service does not write refused.

const T0 = Date.parse('2026-11-01T00:00:00Z');
const flagged = flaggedFacts;
interface Change {
  readonly key: string;
  readonly facts: AnswerFacts;
  readonly cause: ChangeCause;
}
const change = (key: string, facts: AnswerFacts, cause: ChangeCause = 'evidence'): Change => ({ key, facts, cause });

/** The changes of one state, served from `at` as `version`. */
async function append(log: ChangeLog, changes: readonly Change[], at: number, version: string): Promise<void> {
  log.begin(at, version);
  for (const c of changes) log.add(c.key, c.facts, c.cause);
  await log.commit();
}

test('changes are read back oldest first, within the time asked, and the newest answer of each VPA is held', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500)), change('b@ybl', flagged(9000, 7, 3))], T0, 'snap-1');
    await append(log, [change('a@ybl', flagged(8600, 12), 'compaction')], T0 + 1000, 'snap-2');
    // One VPA twice in one append: the second chains to the first.
    await append(log, [change('a@ybl', CLEARED_FACTS, 'retraction'), change('a@ybl', flagged(4000), 'clearance_ended')], T0 + 2000, 'snap-2+5');
    assert.equal(log.latest('a@ybl'), toldOf(flagged(4000)));
    assert.equal(log.latest('b@ybl'), toldOf(flagged(9000, 7, 3)));
    assert.equal(log.latest('c@ybl'), null);
    const all = await log.changesOf('a@ybl', 0);
    assert.deepEqual(
      all.map((c) => [c.at, c.data_version, c.status, c.risk_category, c.confidence, c.cluster_id, c.cause]),
      [
        ['2026-11-01T00:00:00Z', 'snap-1', 'FLAGGED', 'mule', 0.45, null, 'evidence'],
        ['2026-11-01T00:00:01Z', 'snap-2', 'FLAGGED', 'mule', 0.86, 'MC-12', 'compaction'],
        ['2026-11-01T00:00:02Z', 'snap-2+5', 'CLEARED', null, null, null, 'retraction'],
        ['2026-11-01T00:00:02Z', 'snap-2+5', 'FLAGGED', 'mule', 0.4, null, 'clearance_ended'],
      ],
    );
    assert.equal((await log.changesOf('a@ybl', T0 + 1000)).length, 3, 'only what is within the time asked');
    assert.deepEqual(await log.changesOf('c@ybl', 0), []);
    await log.close();

    const reopened = await ChangeLog.open(path, T0 + 2000);
    assert.deepEqual(await reopened.changesOf('a@ybl', 0), all, 'the same after a restart');
    assert.equal(reopened.latest('a@ybl'), toldOf(flagged(4000)));
    assert.equal(reopened.vpaCount, 2);
    await reopened.close();
  });
});

test('a time that went back is recorded as the last time, never before it', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500))], T0 + 5000, 'v1');
    await append(log, [change('a@ybl', CLEARED_FACTS, 'expiry')], T0, 'v2');
    assert.deepEqual((await log.changesOf('a@ybl', 0)).map((c) => c.at), ['2026-11-01T00:00:05Z', '2026-11-01T00:00:05Z']);
    await log.close();
  });
});

test('many VPAs: the index grows and finds each', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    const keys = Array.from({ length: 5000 }, (_, i) => `payee${i}@ybl`);
    await append(log, keys.map((k, i) => change(k, flagged(i % 10_001))), T0, 'v1');
    await append(log, keys.filter((_, i) => i % 3 === 0).map((k) => change(k, CLEARED_FACTS, 'expiry')), T0 + 1, 'v2');
    for (const [i, k] of keys.entries()) assert.equal(log.latest(k), toldOf(i % 3 === 0 ? CLEARED_FACTS : flagged(i % 10_001)), k);
    await log.close();
    const reopened = await ChangeLog.open(path, T0 + 1);
    assert.equal(reopened.vpaCount, 5000);
    assert.equal((await reopened.changesOf('payee3@ybl', 0)).length, 2);
    await reopened.close();
  });
});

test('a state of many changes is written as it is added: once drained, at most two runs are not in the file', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    log.begin(T0, 'v1');
    const before = (await stat(path)).size;
    // 500,000 records of 48 bytes (a 12-character VPA, a 2-character version): 24 MB, about six runs.
    const keys = Array.from({ length: 500_000 }, (_, i) => `p${String(i).padStart(7, '0')}@ybl`);
    for (const k of keys) log.add(k, flagged(5000), 'evidence');
    await log.drained();
    const added = log.bytes - before;
    const RUN = 4 << 20;
    const written = (await stat(path)).size - before;
    assert.ok(added > 4 * RUN, `${added} bytes added`);
    assert.ok(written >= added - 2 * (RUN + 600), `${written} of ${added} bytes written once drained`);
    await log.commit();
    assert.equal((await stat(path)).size, log.bytes);
    await log.close();
    const reopened = await ChangeLog.open(path, T0);
    assert.equal(reopened.vpaCount, keys.length);
    assert.equal(reopened.latest(keys.at(-1)!), toldOf(flagged(5000)));
    await reopened.close();
  });
});

test('an answer is told by its status, risk and band; the cluster apart', () => {
  assert.equal(toldOf(CLEARED_FACTS), 0);
  assert.equal(toldOf(flagged(8499)), toldOf(flagged(6000)), 'one band: 0.60-0.84');
  assert.notEqual(toldOf(flagged(8500)), toldOf(flagged(8499)));
  assert.notEqual(toldOf(flagged(9000, 0, 1)), toldOf(flagged(9000, 0, 2)));
  assert.equal(toldOf(flagged(9000, 0xffffffff)), toldOf(flagged(9000, 0xfffffffe)));
  assert.ok(toldOf(flagged(10_000, 0xffffffff, 4)) < 64);
});

test('a pass lists the VPAs recorded FLAGGED that it did not see', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500)), change('b@ybl', flagged(4500)), change('c@ybl', CLEARED_FACTS, 'expiry')], T0, 'v1');
    log.startPass();
    assert.equal(log.toldAt(log.seen('a@ybl')), toldOf(flagged(4500)));
    assert.equal(log.seen('new@ybl'), -1);
    assert.deepEqual(await log.unseenFlagged(), ['b@ybl']);
    await log.close();
  });
});

test('records of a state never served, and a last record cut short, are cut off at open', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500))], T0, 'v1');
    const served = (await stat(path)).size;
    await append(log, [change('a@ybl', flagged(9000), 'compaction')], T0 + 1000, 'v2');
    await log.close();
    // The record of versions holds T0 alone: v2 was written, then the process ended before it was served.
    const cut = await ChangeLog.open(path, T0);
    assert.equal((await stat(path)).size, served);
    assert.equal(cut.latest('a@ybl'), toldOf(flagged(4500)));
    await append(cut, [change('a@ybl', CLEARED_FACTS, 'retraction')], T0 + 2000, 'v3');
    await cut.close();
    const size = (await stat(path)).size;
    await truncate(path, size - 3);
    const torn = await ChangeLog.open(path, T0 + 2000);
    assert.equal((await stat(path)).size, served, 'the torn record is cut off');
    assert.deepEqual((await torn.changesOf('a@ybl', 0)).map((c) => c.data_version), ['v1']);
    await torn.close();
  });
});

test('a record that fails its CRC, a foreign file or one of another format is refused', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500)), change('b@ybl', flagged(4600))], T0, 'v1');
    await log.close();
    const whole = await readFile(path);
    const flipped = Buffer.from(whole);
    flipped[24 + 8]! ^= 0x01;
    await writeFile(path, flipped);
    await assert.rejects(ChangeLog.open(path, T0), (error: unknown) => error instanceof HistoryError && /fails its CRC/.test(error.message));
    await writeFile(path, 'not a history at all, longer than a header\n');
    await assert.rejects(ChangeLog.open(path, T0), /no UPIRCHNG header/);
    const other = Buffer.from(whole);
    other.writeUInt32LE(9, 8);
    await writeFile(path, other);
    await assert.rejects(ChangeLog.open(path, T0), /format 9/);
    // Refused files are left as they were, for an operator to restore.
    assert.deepEqual(await readFile(path), other);
  });
});

test('records naming VPA numbers this service would not write are refused at open, before room is made for them', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500)), change('b@ybl', flagged(4600))], T0, 'v1');
    await append(log, [change('a@ybl', flagged(4700))], T0 + 1000, 'v2');
    await log.close();
    await rm(`${path}.index`);
    const whole = await readFile(path);
    // The records' places: a@ybl (0), b@ybl (1), a@ybl again (0).
    const places: number[] = [];
    for (let at = 24; at < whole.length; at += whole.readUInt32LE(at + 4)) places.push(at);
    assert.equal(places.length, 3);
    const renumbered = async (record: number, number: number) => {
      const bytes = Buffer.from(whole);
      bytes.writeUInt32LE(number, places[record]! + 36);
      const end = places[record]! + bytes.readUInt32LE(places[record]! + 4);
      bytes.writeUInt32LE(crc32(bytes.subarray(places[record]! + 4, end)), places[record]!);
      await writeFile(path, bytes);
    };
    const refused = (pattern: RegExp) => (error: unknown) => error instanceof HistoryError && pattern.test(error.message);
    await renumbered(1, 0);
    await assert.rejects(ChangeLog.open(path, T0 + 1000), refused(/two VPAs are numbered 0/));
    await renumbered(2, 1);
    await assert.rejects(ChangeLog.open(path, T0 + 1000), refused(/a VPA numbered 0 is named 1/));
    await renumbered(1, 2);
    await assert.rejects(ChangeLog.open(path, T0 + 1000), refused(/unused below 2/));
    await renumbered(1, 0xfffffff0);
    await assert.rejects(ChangeLog.open(path, T0 + 1000), refused(/names VPA number 4294967280, more than the file holds records/));
    // As written, it opens.
    await writeFile(path, whole);
    const opened = await ChangeLog.open(path, T0 + 1000);
    assert.deepEqual([opened.numberOf('a@ybl'), opened.numberOf('b@ybl')], [0, 1]);
    await opened.close();
  });
});

test('a write that fails leaves the file as it was, and the log refusing until it is opened again', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500))], T0, 'v1');
    const written = (await stat(path)).size;
    assert.throws(() => log.add('b@ybl', flagged(1), 'evidence'), RangeError, 'no state begun');
    log.begin(T0 + 1, 'v2');
    assert.throws(() => log.begin(T0 + 1, 'v2'), RangeError, 'one state at a time');
    log.add('a@ybl', flagged(9000), 'compaction');
    // The file is closed under the log: the commit fails, and nothing more is taken.
    await log.close();
    await assert.rejects(log.commit(), HistoryError);
    assert.throws(() => log.begin(T0 + 2, 'v3'), HistoryError);
    await assert.rejects(log.changesOf('a@ybl', 0), HistoryError);
    assert.equal((await stat(path)).size, written);
    const reopened = await ChangeLog.open(path, T0 + 1);
    assert.deepEqual((await reopened.changesOf('a@ybl', 0)).map((c) => c.data_version), ['v1']);
    await reopened.close();
  });
});

test('pruned at a cutoff: each VPA keeps every change after it and its newest before it, in a smaller file', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    const DAY = 24 * 3600 * 1000;
    // a@ybl changes on days 0, 1, 5; b@ybl once on day 0; c@ybl on days 2 and 6.
    await append(log, [change('a@ybl', flagged(4500)), change('b@ybl', flagged(9000, 3))], T0, 'd0');
    await append(log, [change('a@ybl', flagged(7000), 'compaction')], T0 + DAY, 'd1');
    await append(log, [change('c@ybl', flagged(3000))], T0 + 2 * DAY, 'd2');
    await append(log, [change('a@ybl', CLEARED_FACTS, 'retraction')], T0 + 5 * DAY, 'd5');
    await append(log, [change('c@ybl', CLEARED_FACTS, 'expiry')], T0 + 6 * DAY, 'd6');
    const cutoff = T0 + 3 * DAY;
    const keys = ['a@ybl', 'b@ybl', 'c@ybl'];
    const told = keys.map((k) => log.latest(k));
    const within = await Promise.all(keys.map((k) => log.changesOf(k, cutoff)));
    const before = log.bytes;
    assert.equal(log.replacedAt, T0 + DAY, "a@ybl's change of day 1 replaced its first");

    assert.equal(await log.prune(cutoff), 1, 'a@ybl of day 0 went; its day 1, b@ybl of day 0 and c@ybl of day 2 tell their answers at the cutoff');
    assert.ok(log.bytes < before);
    assert.deepEqual(keys.map((k) => log.latest(k)), told);
    assert.deepEqual(await Promise.all(keys.map((k) => log.changesOf(k, cutoff))), within);
    assert.deepEqual((await log.changesOf('a@ybl', 0)).map((c) => c.data_version), ['d1', 'd5'], 'the chain now starts at what was kept');
    assert.deepEqual((await log.changesOf('c@ybl', 0)).map((c) => c.data_version), ['d2', 'd6']);
    assert.equal((await log.answerAt('a@ybl', cutoff)).facts.confidence, 7000, "a@ybl's answer at the cutoff");
    assert.equal((await log.answerAt('c@ybl', cutoff)).facts.confidence, 3000);
    assert.equal(log.replacedAt, T0 + 5 * DAY, 'the records kept of days 1 and 2 are replaced on days 5 and 6: nothing to drop before then');
    // Written after the prune, and read back the same after a restart.
    await append(log, [change('b@ybl', CLEARED_FACTS, 'clearance')], T0 + 7 * DAY, 'd7');
    await log.close();
    const reopened = await ChangeLog.open(path, T0 + 7 * DAY);
    assert.deepEqual((await reopened.changesOf('b@ybl', 0)).map((c) => [c.data_version, c.cause]), [['d0', 'evidence'], ['d7', 'clearance']]);
    assert.deepEqual(await reopened.changesOf('c@ybl', cutoff), within[2]);
    assert.equal(reopened.vpaCount, 3);
    await reopened.close();
  });
});

test('an answer as of an instant: the newest record then, with the confidence of a column written after it', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500)), change('b@ybl', flagged(6000, 7, 2))], T0, 'v1');
    // A new snapshot: every VPA scored again, a's answer otherwise the same (no record), b's changed (a record).
    log.begin(T0 + 1000, 'v2');
    log.setServedConfidence(log.numberOf('a@ybl'), 4400);
    log.add('b@ybl', flagged(6100, 8, 2), 'compaction');
    await log.commit(T0);
    await append(log, [change('a@ybl', CLEARED_FACTS, 'retraction')], T0 + 2000, 'v3');
    const at = async (key: string, instant: number) => {
      const { facts, detail } = await log.answerAt(key, instant);
      return facts.flagged ? [facts.confidence, facts.cluster, detail?.sources[0]?.url] : 'CLEARED';
    };
    assert.equal(await at('a@ybl', T0 - 1), 'CLEARED', 'before its first record');
    assert.deepEqual(await at('a@ybl', T0), [4500, 0, 'https://0.example/0']);
    assert.deepEqual(await at('a@ybl', T0 + 1500), [4400, 0, 'https://0.example/0'], "the column's confidence");
    assert.equal(await at('a@ybl', T0 + 2000), 'CLEARED');
    assert.deepEqual(await at('b@ybl', T0 + 999), [6000, 7, 'https://2.example/7']);
    assert.deepEqual(await at('b@ybl', T0 + 1000), [6100, 8, 'https://2.example/8'], 'its record of the same state');
    assert.equal(await at('nobody@ybl', T0 + 5000), 'CLEARED');
    await log.close();
    // Read whole at the next open (no index kept): the same.
    await rm(`${path}.index`);
    const reopened = await ChangeLog.open(path, T0 + 2000);
    assert.equal((await reopened.answerAt('a@ybl', T0 + 1500)).facts.confidence, 4400);
    await reopened.close();
  });
});

test('a column damaged is refused when read; one of a state never served is removed at open', async () => {
  const DAY = 24 * 3600 * 1000;
  await withHistoryLog(async (path) => {
    const scores = join(dirname(path), 'scores');
    let log = await ChangeLog.open(path, 0);
    await append(log, [change('a@ybl', flagged(4500))], T0, 'v1');
    log.begin(T0 + 1000, 'v2');
    log.setServedConfidence(log.numberOf('a@ybl'), 4400);
    await log.commit(T0);
    log.begin(T0 + 2000, 'v3');
    await log.commit(T0 + DAY);
    await log.close();
    const names = (await readdir(scores)).sort();
    assert.equal(names.length, 2);
    // The record of versions holds T0 + 1000 last: the column of T0 + 2000 was never served.
    log = await ChangeLog.open(path, T0 + 1000);
    assert.deepEqual(await readdir(scores), [names[0]]);
    assert.equal((await log.answerAt('a@ybl', T0 + 1500)).facts.confidence, 4400);
    await log.close();
    // A bit flipped in its values, under the index that close kept: found when an answer reads that block.
    const column = join(scores, names[0]!);
    const bytes = await readFile(column);
    // The first value: after the 40-byte header and the one block's CRC.
    bytes[44]! ^= 0x01;
    await writeFile(column, bytes);
    log = await ChangeLog.open(path, T0 + 1000);
    assert.equal(log.opened.keptIndex, true);
    await assert.rejects(log.answerAt('a@ybl', T0 + 1500), (error: unknown) => error instanceof HistoryError && /fails its CRC/.test(error.message));
    assert.equal((await log.answerAt('a@ybl', T0 + 500)).facts.confidence, 4500, 'answers before it need no column');
    await log.close();
    // Read whole at open (no index), the newest column is read whole too: refused then.
    await rm(`${path}.index`);
    await assert.rejects(ChangeLog.open(path, T0 + 1000), /fails its CRC/);
    await writeFile(column, bytes.subarray(0, 45));
    await assert.rejects(ChangeLog.open(path, T0 + 1000), /cut short or grown/);
  });
});

test('a log of format 1 is moved aside, and the history begins again', async () => {
  await withHistoryLog(async (path) => {
    await mkdir(dirname(path), { recursive: true });
    const head = Buffer.alloc(16);
    head.write('UPIRCHNG', 0, 'latin1');
    head.writeUInt32LE(1, 8);
    await writeFile(path, head);
    const log = await ChangeLog.open(path, 0);
    assert.equal(log.opened.movedAside, `${path}.format1`);
    assert.deepEqual(await readFile(`${path}.format1`), head);
    assert.equal(log.startedAt, 0, 'no state recorded yet');
    assert.equal(log.vpaCount, 0);
    await append(log, [change('a@ybl', flagged(4500))], T0, 'v1');
    assert.equal(log.startedAt, T0, 'the history begins with its first state');
    await log.close();
    assert.equal((await ChangeLog.open(path, T0).then(async (l) => [l.startedAt, await l.close()]))[0], T0);
  });
});

test('a record longer than a run of the scan at open is read whole, not taken for a torn tail', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    const captured = '2026-11-01T00:00:00Z';
    const sources = Array.from({ length: 6000 }, (_, i) => ({ url: `https://pages.example/${'x'.repeat(200)}/${i}`, category: 'scam' as const, captured_at: captured, screenshot_available: false }));
    const detail = { cluster_size: 0, first_seen: captured, last_seen: captured, sources, evidence_count: sources.length };
    // The first record of the file, longer than the 1 MiB a scan reads at a time.
    await append(log, [change('big@ybl', { ...flagged(9000), detail: () => detail }), change('after@ybl', flagged(4500))], T0, 'v1');
    await log.close();
    const size = (await stat(path)).size;
    assert.ok(size > 1.2 * (1 << 20));
    await rm(`${path}.index`);
    const reopened = await ChangeLog.open(path, T0);
    assert.equal((await stat(path)).size, size, 'nothing cut off');
    assert.equal(reopened.vpaCount, 2);
    assert.equal((await reopened.answerAt('big@ybl', T0)).detail?.sources.length, 6000);
    await reopened.close();
  });
});
