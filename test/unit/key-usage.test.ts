import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { FileUsageLedger, HOUR_MS, UsageCounter, type UsageEntry } from '../../src/access/key-usage.js';
import { ErrorCode } from '../../src/common/errors.js';
import { tempDataDir } from '../helpers.js';

const DAY_START = Date.parse('2026-11-26T00:00:00Z');

test('a thread counts requests and 429s per key, and starts afresh when drained', () => {
  const counter = new UsageCounter();
  counter.count('key_a', false);
  counter.count('key_a', true);
  counter.count('key_b', false);
  assert.deepEqual(counter.drain(), [
    ['key_a', 2, 1],
    ['key_b', 1, 0],
  ]);
  assert.deepEqual(counter.drain(), []);
});

test('totals over a window are the sums of what was added in its hours (any hand-overs)', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ hour: fc.integer({ min: 0, max: 30 }), key: fc.constantFrom('key_a', 'key_b', 'key_c'), requests: fc.nat(50), limited: fc.nat(50) }), { maxLength: 40 }),
        fc.integer({ min: 0, max: 30 }),
        async (handOvers, fromHour) => {
          const ledger = await FileUsageLedger.open(join(root, `usage-${Math.random()}.json`), 60_000);
          // Hand-overs arrive in time order, as they do.
          const sorted = [...handOvers].sort((a, b) => a.hour - b.hour);
          for (const h of sorted) await ledger.add([[h.key, h.requests + h.limited, h.limited]], DAY_START + h.hour * HOUR_MS + 1234);
          const last = sorted.at(-1)?.hour ?? 0;
          const totals = await ledger.since(DAY_START + fromHour * HOUR_MS + 5);
          for (const key of ['key_a', 'key_b', 'key_c']) {
            // Hours more than a day behind the newest are dropped.
            const kept = sorted.filter((h) => h.key === key && h.hour >= fromHour && h.hour > last - 25);
            const requests = kept.reduce((sum, h) => sum + h.requests + h.limited, 0);
            const limited = kept.reduce((sum, h) => sum + h.limited, 0);
            assert.equal(totals.get(key)?.requests ?? 0, requests);
            assert.equal(totals.get(key)?.limited ?? 0, limited);
            const used = sorted.filter((h) => h.key === key && h.requests + h.limited > 0).at(-1);
            assert.equal(totals.get(key)?.lastUsedAt ?? null, used === undefined ? null : DAY_START + used.hour * HOUR_MS + 1234);
          }
        },
      ),
      { numRuns: 60 },
    );
  } finally {
    await cleanup();
  }
});

test('what was counted survives a restart once flushed', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'state', 'key-usage.json');
    const ledger = await FileUsageLedger.open(path, 60_000);
    const entries: UsageEntry[] = [['key_a', 7, 2]];
    await ledger.add(entries, DAY_START + 10);
    await ledger.flush();
    const reopened = await FileUsageLedger.open(path);
    assert.deepEqual(await reopened.since(DAY_START), new Map([['key_a', { requests: 7, limited: 2, lastUsedAt: DAY_START + 10 }]]));
  } finally {
    await cleanup();
  }
});

test('a usage file this service did not write is ERR_ADMIN_STATE', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'key-usage.json');
    for (const bad of ['nope', '{"version":2,"hours":[],"lastUsed":[]}', '{"version":1,"hours":[[5,[]]],"lastUsed":[]}', '{"version":1,"hours":[[0,[["k",1,2]]]],"lastUsed":[]}']) {
      await writeFile(path, bad);
      await assert.rejects(FileUsageLedger.open(path), (error: Error & { code?: string }) => error.code === ErrorCode.ADMIN_STATE);
    }
  } finally {
    await cleanup();
  }
});
