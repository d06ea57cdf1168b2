import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { ErrorCode } from '../../src/common/errors.js';
import { PositionReserve } from '../../src/service/position-reserve.js';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { TEST_SCORED_AT, evidence, ingest, tempDataDir, until } from '../helpers.js';

test('positions count from 1 in a new data directory and continue past the reserved block after a reopen', async (t) => {
  const { dir, cleanup } = await tempDataDir();
  t.after(cleanup);
  const first = await PositionReserve.open(dir, false);
  assert.deepEqual([await first.next(), await first.next(), await first.next()], [1, 2, 3]);
  assert.deepEqual(JSON.parse(await readFile(dir.positions, 'utf8')), { reserved: PositionReserve.BLOCK });
  // A process that ended (or was killed) mid-block: the next starts past the block, never inside it.
  const second = await PositionReserve.open(dir, true);
  assert.equal(await second.next(), PositionReserve.BLOCK + 1);
});

test('positions asked for at once are distinct and in order, each reserved on disk before it is handed out', async (t) => {
  const { dir, cleanup } = await tempDataDir();
  t.after(cleanup);
  const reserve = await PositionReserve.open(dir, false);
  const count = 2 * PositionReserve.BLOCK + 500;
  const positions = await Promise.all(Array.from({ length: count }, () => reserve.next()));
  assert.deepEqual(positions, Array.from({ length: count }, (_, i) => i + 1));
  const { reserved } = JSON.parse(await readFile(dir.positions, 'utf8')) as { reserved: number };
  assert.ok(reserved >= count, `reserved ${reserved} < ${count}`);
});

test('a data directory that served before the record existed starts past the current time', async (t) => {
  const { dir, cleanup } = await tempDataDir();
  t.after(cleanup);
  const now = Date.parse('2026-11-28T00:00:00Z');
  const reserve = await PositionReserve.open(dir, true, now);
  assert.equal(await reserve.next(), now + 1);
});

test('a damaged record is refused with ERR_POSITION_STATE, never read as a fresh start', async (t) => {
  const { dir, cleanup } = await tempDataDir();
  t.after(cleanup);
  await mkdir(dir.state, { recursive: true });
  for (const text of ['', '{"reserved": ', '[]', 'null', '{"reserved": -1}', '{"reserved": 1.5}', '{"reserved": "7"}', '{"reserved": 7, "extra": 1}', '{"reserved": 9007199254740993}']) {
    await writeFile(dir.positions, text);
    await assert.rejects(PositionReserve.open(dir, true), (error: NodeJS.ErrnoException) => error.code === ErrorCode.POSITION_STATE, JSON.stringify(text));
  }
});

test('evidence whose merge cannot reserve a position is still served, by a compaction', async () => {
  const d = await tempDataDir();
  await ingest(d.dir, d.root, [evidence('first@ybl', 'https://a.example', { evidence_id: 'f1' })]);
  const service = await SnapshotService.start({ dataDir: d.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT });
  try {
    // A directory where the record goes: every write of it fails.
    await mkdir(d.dir.positions, { recursive: true });
    await ingest(d.dir, d.root, [evidence('second@ybl', 'https://b.example', { evidence_id: 's1' })]);
    await until('the evidence is served', 20_000, async () => {
      await service.refresh();
      return service.view.verdict('second@ybl').status === 'FLAGGED';
    });
    assert.ok(!service.view.version.includes('+'), `served from a new snapshot, not a delta: ${service.view.version}`);
  } finally {
    await service.close();
    await d.cleanup();
  }
});
