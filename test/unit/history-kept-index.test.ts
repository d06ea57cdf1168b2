import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import fc from 'fast-check';
import { HistoryError } from '../../src/common/errors.js';
import { CLEARED_FACTS, ChangeLog, type AnswerFacts } from '../../src/history/change-log.js';
import { indexPathOf } from '../../src/history/facts-index-file.js';
import { flaggedFacts, withHistoryLog } from '../helpers.js';

// The index of the history of answers that a clean close keeps beside the
// log: the next open reads it and the records after it alone, and answers
// exactly as a pass over every record would; one that does not match the
// log (a log changed since, a crash, a state never served, a torn file) is
// not used, and the log is read whole.

const T0 = Date.parse('2026-11-01T00:00:00Z');
const KEYS = Array.from({ length: 40 }, (_, i) => `vpa${i}@ybl`);

async function append(log: ChangeLog, changes: readonly (readonly [string, AnswerFacts])[], at: number, version: string): Promise<void> {
  log.begin(at, version);
  for (const [key, facts] of changes) log.add(key, facts, 'evidence');
  await log.commit();
}

const facts = (n: number): AnswerFacts => (n === 0 ? CLEARED_FACTS : flaggedFacts((n * 997) % 10_001, n % 3, n % 5));

/** What `log` tells of every key: the newest answer, and each change. */
async function told(log: ChangeLog): Promise<unknown[]> {
  return Promise.all(KEYS.map(async (key) => [log.latest(key), await log.changesOf(key, 0)]));
}

/** What a pass over every record of the log at `path` tells (the kept index moved aside, then put back). */
async function toldByEveryRecord(path: string, servedUntil: number): Promise<unknown[]> {
  const kept = await readFile(indexPathOf(path)).catch(() => null);
  await rm(indexPathOf(path), { force: true });
  const log = await ChangeLog.open(path, servedUntil);
  assert.equal(log.opened.keptIndex, false);
  const out = await told(log);
  // Closed without keeping: its own close would write an index of its own.
  await log.close();
  if (kept === null) await rm(indexPathOf(path), { force: true });
  else await writeFile(indexPathOf(path), kept);
  return out;
}

test('after a clean close the next open reads no record, and tells what every record tells', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(fc.tuple(fc.integer({ min: 0, max: KEYS.length - 1 }), fc.integer({ min: 0, max: 40 })), { maxLength: 12 }), { minLength: 1, maxLength: 12 }),
      fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
      async (states, closeAfter) => {
        await withHistoryLog(async (path) => {
          let log = await ChangeLog.open(path, 0);
          let at = T0;
          for (let i = 0; i < states.length; i++) {
            at += 1000;
            await append(log, states[i]!.map(([k, n]) => [KEYS[k]!, facts(n)] as const), at, `v${i}`);
            if (!closeAfter[i]) continue;
            assert.equal(await log.close(), null, 'the index is kept');
            log = await ChangeLog.open(path, at);
            assert.equal(log.opened.keptIndex, true);
            assert.equal(log.opened.bytesRead, 0, 'no record is read');
          }
          const fromIndex = await told(log);
          await log.close();
          assert.deepEqual(await toldByEveryRecord(path, at), fromIndex);
        });
      },
    ),
    { numRuns: 25 },
  );
});

test('after a crash, the index kept by the clean close before it and the records after it', async () => {
  await withHistoryLog(async (path) => {
    const first = await ChangeLog.open(path, 0);
    await append(first, [['vpa1@ybl', facts(3)], ['vpa2@ybl', facts(4)]], T0 + 1000, 'v1');
    await first.close();
    const second = await ChangeLog.open(path, T0 + 1000);
    await append(second, [['vpa1@ybl', facts(0)], ['vpa3@ybl', facts(5)]], T0 + 2000, 'v2');
    const grown = (await stat(path)).size;
    // Never closed: the process ended. The index on disk is the first close's.
    const third = await ChangeLog.open(path, T0 + 2000);
    assert.equal(third.opened.keptIndex, true);
    assert.ok(third.opened.bytesRead > 0 && third.opened.bytesRead < grown, `only the records after the index: ${third.opened.bytesRead} of ${grown} bytes`);
    const fromIndex = await told(third);
    await append(third, [['vpa2@ybl', facts(0)]], T0 + 3000, 'v3');
    const toldAfter = await told(third);
    // Its close keeps an index of the whole log again.
    assert.equal(await third.close(), null);
    const fourth = await ChangeLog.open(path, T0 + 3000);
    assert.equal(fourth.opened.keptIndex, true, fourth.opened.indexRefused ?? '');
    assert.equal(fourth.opened.bytesRead, 0);
    assert.deepEqual(await told(fourth), toldAfter);
    await fourth.close();
    assert.deepEqual(await toldByEveryRecord(path, T0 + 3000), toldAfter);
    assert.notDeepEqual(fromIndex, toldAfter);
  });
});

test('a log read whole at open, a torn record cut off, keeps an index at close that the next open uses', async () => {
  await withHistoryLog(async (path) => {
    const first = await ChangeLog.open(path, 0);
    for (let i = 1; i <= 3; i++) await append(first, KEYS.slice(0, 7 * i).map((key, k) => [key, facts(i + k)] as const), T0 + i * 1000, `v${i}`);
    await first.close();
    await rm(indexPathOf(path), { force: true });
    // A record cut short at the end, as a crash leaves one.
    const whole = await readFile(path);
    await writeFile(path, Buffer.concat([whole, whole.subarray(16, 40)]));
    const second = await ChangeLog.open(path, T0 + 3000);
    assert.equal(second.opened.keptIndex, false);
    const fromRecords = await told(second);
    assert.equal(await second.close(), null);
    const third = await ChangeLog.open(path, T0 + 3000);
    assert.equal(third.opened.keptIndex, true, third.opened.indexRefused ?? '');
    assert.equal(third.opened.bytesRead, 0);
    assert.deepEqual(await told(third), fromRecords);
    await third.close();
  });
});

/** Why the open of the log at `path` did not use its kept index (it must not have), the log closed again. */
async function refusal(path: string, servedUntil: number): Promise<string> {
  const log = await ChangeLog.open(path, servedUntil);
  const { keptIndex, indexRefused } = log.opened;
  assert.equal(keptIndex, false);
  assert.notEqual(log.latest('vpa1@ybl'), null, 'the log is read whole');
  await log.close();
  return indexRefused ?? '';
}

test('an index that does not match the log is not used, with the reason, and the log is read whole', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [['vpa1@ybl', facts(3)]], T0 + 1000, 'v1');
    await append(log, [['vpa2@ybl', facts(4)]], T0 + 2000, 'v2');
    await log.close();
    const kept = await readFile(indexPathOf(path));
    for (const [index, why] of [
      [kept.subarray(0, kept.length - 3), /cut short/],
      [Buffer.concat([kept.subarray(0, kept.length - 1), Buffer.from([kept[kept.length - 1]! ^ 1])]), /fails its CRC/],
      [Buffer.from('not an index\n'), /not an index this service keeps/],
    ] as const) {
      await writeFile(indexPathOf(path), index);
      assert.match(await refusal(path, T0 + 2000), why);
    }
    await writeFile(indexPathOf(path), kept);
    // The second state was never served (a crash between its record and the record of versions): cut off, and the index held it.
    assert.match(await refusal(path, T0 + 1500), /never served/);
    assert.equal((await ChangeLog.open(path, T0 + 1500).then(async (l) => [l.latest('vpa2@ybl'), await l.close()]))[0], null);
    // The log changed under the index: as long as it was, with other bytes (vpa3's record in place of vpa2's).
    const other = await ChangeLog.open(path, T0 + 1500);
    await append(other, [['vpa3@ybl', facts(6)]], T0 + 2000, 'v2');
    await other.close().then(() => writeFile(indexPathOf(path), kept));
    assert.match(await refusal(path, T0 + 2000), /not the one it was kept with/);
  });
});

test('a record corrupted under a kept index is refused at open, as without one', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [['vpa1@ybl', facts(3)], ['vpa2@ybl', facts(4)]], T0 + 1000, 'v1');
    await log.close();
    const bytes = await readFile(path);
    bytes[24 + 8]! ^= 0x01;
    await writeFile(path, bytes);
    await assert.rejects(ChangeLog.open(path, T0 + 1000), (error: unknown) => error instanceof HistoryError && /fails its CRC/.test(error.message));
  });
});

test('a prune drops the kept index, and the next close keeps one of the pruned log', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    await append(log, [['vpa1@ybl', facts(3)], ['vpa2@ybl', facts(4)]], T0 + 1000, 'v1');
    await log.close();
    const reopened = await ChangeLog.open(path, T0 + 1000);
    assert.equal(reopened.opened.keptIndex, true);
    await append(reopened, [['vpa1@ybl', facts(6)]], T0 + 1200, 'v1b');
    await append(reopened, [['vpa1@ybl', facts(5)]], T0 + 2000, 'v2');
    assert.equal(await reopened.prune(T0 + 1500), 1);
    await assert.rejects(stat(indexPathOf(path)), { code: 'ENOENT' });
    const fromIndex = await told(reopened);
    await reopened.close();
    const again = await ChangeLog.open(path, T0 + 2000);
    assert.equal(again.opened.keptIndex, true);
    assert.deepEqual(await told(again), fromIndex);
    await again.close();
  });
});

test('a record corrupted under a kept index, before the last MiB it names the log by, is refused when it is read', async () => {
  await withHistoryLog(async (path) => {
    const log = await ChangeLog.open(path, 0);
    const keys = Array.from({ length: 12_000 }, (_, i) => `payee${i}@ybl`);
    await append(log, keys.map((key, i) => [key, facts(1 + (i % 7))] as const), T0 + 1000, 'v1');
    await log.close();
    assert.ok((await stat(path)).size > 1.5 * (1 << 20));
    const bytes = await readFile(path);
    bytes[24 + 8]! ^= 0x01;
    await writeFile(path, bytes);
    const reopened = await ChangeLog.open(path, T0 + 1000);
    assert.equal(reopened.opened.keptIndex, true, 'a start reads no more than the end of the log');
    await assert.rejects(reopened.changesOf(keys[0]!, 0), (error: unknown) => error instanceof HistoryError && /fails its CRC/.test(error.message));
    assert.equal((await reopened.changesOf(keys[1]!, 0)).length, 1);
    await reopened.close();
  });
});
