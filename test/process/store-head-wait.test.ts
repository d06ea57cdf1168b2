import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, StoreError } from '../../src/common/errors.js';
import { logClearance, logClearanceEnd, logRetraction } from '../../src/store/correction-log.js';
import { appendEvidenceBytes } from '../../src/store/evidence-log.js';
import { migrate } from '../../src/store/migrations.js';
import { connectStore } from '../../src/store/postgres.js';
import { appendToLog, testClient, withTestSchema } from '../store-fixtures.js';
import { evidence, ndjson } from '../helpers.js';

// A writer answering an HTTP request waits for the log's head a bounded
// time (log-head.ts): behind another transaction holding it, such as a CLI
// ingest of millions of lines, it fails with ERR_STORE saying so, having
// stored nothing, and the same connection works on. Without a bound (the
// CLI's way) it waits and then goes ahead.

const WAIT_MS = 300;

function isHeadBusy(error: unknown): boolean {
  return error instanceof StoreError && error.code === ErrorCode.STORE && /being written by another ingest or correction/.test(error.message);
}

test('HTTP writers give up on a held log head after their bound; the CLI way waits', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const head = await appendToLog(location, [evidence('held@ybl', 'https://held.example', { evidence_id: 'held-1' })]);
    const holder = await testClient(location);
    const writer = await connectStore(location);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT position FROM log_head FOR UPDATE');

      const body = Buffer.from(ndjson([evidence('waiting@ybl', 'https://waiting.example', { evidence_id: 'wait-1' })]));
      const attempts: [string, () => Promise<unknown>][] = [
        ['ingest', () => appendEvidenceBytes(writer, location, body, 'request body', WAIT_MS)],
        ['retraction', () => logRetraction(writer, location, ['held-1'], 'wrong', 'key-1', WAIT_MS)],
        ['clearance', () => logClearance(writer, location, { id: 'clr-1', upi: 'held@ybl', reason: 'merchant', reference: null, createdAt: Date.now(), createdBy: 'key-1', countsFrom: 0 }, WAIT_MS)],
        ['clearance end', () => logClearanceEnd(writer, location, 'clr-1', 'key-1', Date.now(), WAIT_MS)],
      ];
      for (const [what, attempt] of attempts) {
        const started = performance.now();
        await assert.rejects(attempt(), isHeadBusy, what);
        const waited = performance.now() - started;
        assert.ok(waited >= WAIT_MS * 0.9 && waited < 5_000, `${what} gave up after ${waited.toFixed(0)} ms`);
      }

      // The CLI's way: no bound, so it waits for the holder and then stores.
      const unbounded = appendEvidenceBytes(writer, location, body, 'cli file');
      const settled = await Promise.race([unbounded.then(() => 'stored'), new Promise((resolve) => setTimeout(resolve, 2 * WAIT_MS, 'waiting'))]);
      assert.equal(settled, 'waiting');
      await holder.query('COMMIT');
      const stored = await unbounded;
      assert.equal(stored.added, 1);
      assert.equal(stored.position, head + 1, 'nothing stored by the refused writers took a position');

      // With the head free, a bounded writer goes ahead on the same connection, and its bound was the lock's alone.
      const retracted = await logRetraction(writer, location, ['held-1'], 'wrong', 'key-1', WAIT_MS);
      assert.equal(retracted.retracted, 1);
      assert.equal(retracted.position, head + 2);
      const timeout = (await writer.query<{ lock_timeout: string }>('SHOW lock_timeout')).rows[0]!.lock_timeout;
      assert.equal(timeout, '0', 'the bound ends with its transaction');
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
      await writer.end();
    }
  });
});
