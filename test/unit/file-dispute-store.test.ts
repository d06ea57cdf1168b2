import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { FileDisputeStore, disputeJournalPath } from '../../src/corrections/file-dispute-store.js';
import { dataDir } from '../../src/common/data-dir.js';
import { ErrorCode } from '../../src/common/errors.js';
import { tempDataDir } from '../helpers.js';
import { KEY_A, disputeStoreCases, openDisputeOf, receivedReportOf, rejected } from '../dispute-store-cases.js';

const dirs: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of dirs) await cleanup();
});

async function journal(): Promise<string> {
  const t = await tempDataDir();
  dirs.push(t.cleanup);
  return disputeJournalPath(t.dir);
}

disputeStoreCases('file journal', async () => FileDisputeStore.open(await journal()));

test('the journal is state/disputes.ndjson of the data directory', () => {
  assert.equal(disputeJournalPath(dataDir('/srv/data')), '/srv/data/state/disputes.ndjson');
});

test('everything acknowledged is there after a restart; a torn last line is cut off, and appends after it stay readable', async () => {
  const path = await journal();
  const store = await FileDisputeStore.open(path);
  const open = await store.openDispute(openDisputeOf(KEY_A, 'a@ybl'));
  const decided = await store.openDispute(openDisputeOf(KEY_A, 'b@ybl'));
  await store.changeDispute(decided.id, async (d) => rejected(d));
  const report = receivedReportOf(KEY_A, 'a@ybl');
  await store.addReport(report);
  await store.close();
  await appendFile(path, '{"op":"dispute","d":{"id":"dsp_');

  const reopened = await FileDisputeStore.open(path);
  assert.deepEqual(await reopened.dispute(open.id), open);
  assert.equal((await reopened.dispute(decided.id))?.status, 'REJECTED');
  assert.deepEqual(await reopened.report(report.id), report);
  assert.ok((await readFile(path, 'utf8')).endsWith('}\n'), 'the torn piece is gone from the file');
  // The open dispute still holds its place: a second of a@ybl is the first.
  assert.equal((await reopened.openDispute(openDisputeOf(KEY_A, 'a@ybl'))).id, open.id);
  const later = await reopened.openDispute(openDisputeOf(KEY_A, 'c@ybl'));
  await reopened.close();

  const third = await FileDisputeStore.open(path);
  assert.equal((await third.dispute(later.id))?.upi, 'c@ybl');
  assert.equal((await third.disputes({ owner: KEY_A, status: null }, null, 10)).items.length, 3);
  await third.close();
});

test('a line this service did not write is refused with ERR_DISPUTE_STATE naming it', async () => {
  const good = JSON.stringify({ op: 'dispute', d: openDisputeOf(KEY_A, 'a@ybl') });
  const cases: [string, RegExp][] = [
    ['{"op":"dispute"', /line 2: not JSON/],
    ['{"op":"watchlist","w":{}}', /line 2: not a dispute or report line/],
    [JSON.stringify({ op: 'dispute', d: { ...openDisputeOf(KEY_A, 'b@ybl'), status: 'MAYBE' } }), /line 2: not a AdminDispute: \/status/],
    [JSON.stringify({ op: 'report', r: { ...receivedReportOf(KEY_A, 'b@ybl'), extra: 1 } }), /line 2: not a Report/],
    [JSON.stringify({ op: 'dispute', d: { ...(JSON.parse(good) as { d: object }).d, owner: 'key_cccccccccccc' } }), /line 2: dsp_[0-9a-f]{28} changes its owner/],
    [JSON.stringify({ op: 'report', r: receivedReportOf(KEY_A, 'b@ybl'), k: 'has space' }), /line 2: rep_[0-9a-f]{28} has an Idempotency-Key that is not one/],
    [JSON.stringify({ op: 'report', r: receivedReportOf(KEY_A, 'b@ybl'), k: 7 }), /line 2: rep_[0-9a-f]{28} has an Idempotency-Key that is not one/],
  ];
  for (const [line, message] of cases) {
    const path = await journal();
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, `${good}\n${line}\n`);
    await assert.rejects(FileDisputeStore.open(path), (error: Error & { code?: string }) => {
      assert.equal(error.code, ErrorCode.DISPUTE_STATE);
      assert.match(error.message, message);
      return true;
    });
  }
  // Two reports of one key under one Idempotency-Key: the journal was not written by this service.
  const twice = await journal();
  await mkdir(dirname(twice), { recursive: true });
  const keyed = (r: object) => JSON.stringify({ op: 'report', r, k: 'pay-1' });
  await writeFile(twice, `${keyed(receivedReportOf(KEY_A, 'a@ybl'))}\n${keyed(receivedReportOf(KEY_A, 'b@ybl'))}\n`);
  await assert.rejects(FileDisputeStore.open(twice), (error: Error & { code?: string }) => error.code === ErrorCode.DISPUTE_STATE && /line 2: rep_[0-9a-f]{28} repeats the Idempotency-Key of rep_/.test(error.message));
  // A key comes with a report's first line only: a later line cannot give it a second one.
  const later = await journal();
  await mkdir(dirname(later), { recursive: true });
  const report = receivedReportOf(KEY_A, 'a@ybl');
  await writeFile(later, `${keyed(report)}\n${JSON.stringify({ op: 'report', r: { ...report, status: 'DISMISSED' }, k: 'pay-2' })}\n`);
  await assert.rejects(FileDisputeStore.open(later), (error: Error & { code?: string }) => error.code === ErrorCode.DISPUTE_STATE && /line 2: rep_[0-9a-f]{28} is given an Idempotency-Key after it was stored/.test(error.message));
  // A byte damaged on disk (0xff is never UTF-8): refused, not read with U+FFFD in its place.
  const path = await journal();
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, Buffer.concat([Buffer.from(`${good}\n`), Buffer.from(`${good.replace('"a@ybl"', '"\u00ff@ybl"')}\n`, 'latin1')]));
  await assert.rejects(FileDisputeStore.open(path), (error: Error & { code?: string }) => error.code === ErrorCode.DISPUTE_STATE && /line 2: not UTF-8/.test(error.message));
});

test('a missing journal is an empty one, made with its folder at start; an empty one is read', async () => {
  const path = await journal();
  const store = await FileDisputeStore.open(path);
  assert.equal(await readFile(path, 'utf8'), '');
  assert.deepEqual(await store.disputes({ owner: null, status: null }, null, 10), { items: [], next: null });
  await store.addReport(receivedReportOf(KEY_A, 'a@ybl'));
  await store.close();
  assert.equal((await readFile(path, 'utf8')).split('\n').length, 2);
  await writeFile(path, '');
  const empty = await FileDisputeStore.open(path);
  assert.deepEqual(await empty.reports({ owner: null, status: null }, null, 10), { items: [], next: null });
  await empty.close();
});
