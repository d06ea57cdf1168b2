import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { ARRAY_FIELDS, type SnapshotData } from '../../src/engine/snapshot-data.js';
import { listSnapshots, readSnapshotFile } from '../../src/engine/snapshot-files.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { answerSingle } from '../../src/api/single-answer.js';
import { ByteScratch } from '../../src/common/byte-scratch.js';
import { silentLogger } from '../../src/common/logger.js';
import { AnswerHistory } from '../../src/history/answer-changes.js';
import { evidence, ingest, tempDataDir, TEST_SCORED_AT, until } from '../helpers.js';

// A snapshot built by the serving process is handed over from the pool in
// shared memory as soon as it is assembled, so it is served without waiting
// for its file to be written and read back. It must be the same snapshot
// the file holds.

const ITEMS = [
  evidence('gang.one@ybl', 'https://t.me/gangchannel', { source_category: 'telegram' }),
  evidence('gang.two@okaxis', 'https://t.me/gangchannel', { source_category: 'telegram', screenshot_available: true }),
  evidence('gang.two@okaxis', 'https://bet.example/pay', { captured_at: '2026-07-01T00:00:00Z' }),
  evidence('solo@paytm', 'https://phish.example/kyc', { source_category: 'phishing', risk_category: 'nbfc_impersonation' }),
];

test('onAssembled gets the snapshot in shared memory, the same one its file holds', async () => {
  const t = await tempDataDir();
  const builder = new SnapshotBuilder({ threads: 2 });
  try {
    await ingest(t.dir, t.root, ITEMS);
    const handed: SnapshotData[] = [];
    const report = await builder.build({ dataDir: t.dir, scoredAt: TEST_SCORED_AT, onAssembled: (data) => handed.push(data) });
    assert.equal(handed.length, 1);
    const early = handed[0]!;
    assert.equal(early.meta.id, report.meta.id);
    for (const field of ARRAY_FIELDS) {
      assert.ok(early[field].buffer instanceof SharedArrayBuffer, `${field} is in shared memory`);
    }
    // Assembled there, each array in a buffer of its own; a copy would have packed them into one.
    assert.equal(new Set(ARRAY_FIELDS.map((field) => early[field].buffer)).size, ARRAY_FIELDS.length, 'handed over without a copy');
    assert.equal(early.maxKeyLength, 'gang.two@okaxis'.length);

    const fromFile = await readSnapshotFile(report.path);
    assert.deepEqual(early.meta, fromFile.meta);
    for (const field of ARRAY_FIELDS) {
      assert.deepEqual(Buffer.from(early[field].buffer, early[field].byteOffset, early[field].byteLength), Buffer.from(fromFile[field].buffer, fromFile[field].byteOffset, fromFile[field].byteLength), field);
    }
    const served = new SnapshotView(early);
    const loaded = new SnapshotView(fromFile);
    const out = new ByteScratch(1024);
    const answer = (view: SnapshotView, upi: string): string => {
      const json = answerSingle(new ServingView(view), upi, out);
      return typeof json === 'string' ? json : Buffer.from(json).toString();
    };
    for (const upi of ['gang.one@ybl', 'GANG.TWO@okaxis', 'solo@paytm', 'nobody@ybl']) assert.equal(answer(served, upi), answer(loaded, upi), upi);
    const clusterId = served.verdict('gang.one@ybl').cluster_id!;
    assert.deepEqual(served.cluster(clusterId), loaded.cluster(clusterId));
  } finally {
    await builder.close();
    await t.cleanup();
  }
});

test('a rebuild in the service swaps once, to the snapshot it wrote', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, ITEMS.slice(0, 2));
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 2, scoredAt: () => TEST_SCORED_AT });
  try {
    const swaps: string[] = [];
    service.onSwap((event) => swaps.push(`${event.reason} ${event.next.meta.id}`));
    await ingest(t.dir, t.root, ITEMS.slice(2));
    await service.refresh();
    await service.compact();
    const newest = (await listSnapshots(t.dir))[0]!;
    assert.deepEqual(swaps, [`rebuild ${service.current.meta.id}`]);
    assert.ok(newest.endsWith(`snapshot-${service.current.meta.id}.upisnap`), 'the served snapshot is the one written');
    assert.equal(service.current.verdict('solo@paytm').status, 'FLAGGED');
  } finally {
    await service.close();
    await t.cleanup();
  }
});

test('a rebuild whose swap waits is not loaded again from its own file meanwhile', async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, ITEMS.slice(0, 2));
  // The history of answers compares a rebuilt snapshot ahead of its swap (seconds at 10M); the file is written meanwhile.
  const answers = await AnswerHistory.open(t.dir.answerChanges, 0, 400 * 86_400_000, silentLogger);
  const compared: string[] = [];
  const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 2, scoredAt: () => TEST_SCORED_AT, answers });
  const compareAhead = answers.compareAhead.bind(answers);
  answers.compareAhead = async (view) => {
    compared.push(view.meta.id);
    if (compared.length === 1) {
      // A look at the data directory (the watcher's) once the file is there, while this swap waits.
      await until('the rebuilt snapshot written', 10_000, async () => ((await listSnapshots(t.dir))[0] ?? '').includes(view.meta.id));
      await service.refresh();
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    return compareAhead(view);
  };
  try {
    const swaps: string[] = [];
    service.onSwap((event) => swaps.push(`${event.reason} ${event.next.meta.id}`));
    await ingest(t.dir, t.root, ITEMS.slice(2));
    await service.compact();
    await service.refresh();
    assert.deepEqual(swaps, [`rebuild ${service.current.meta.id}`]);
    assert.deepEqual(compared, [service.current.meta.id], 'compared once: not adopted as another process\'s snapshot');
  } finally {
    await service.close();
    await answers.close();
    await t.cleanup();
  }
  assert.equal(compared.length, 1, 'nor after');
});
