import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { silentLogger, type Logger } from '../../src/common/logger.js';
import { HistoryRecorder } from '../../src/fleet/history-recorder.js';
import type { ServedChange } from '../../src/history/answer-changes.js';
import { migrate } from '../../src/store/migrations.js';
import { snapshotAndDelta } from '../delta-fixtures.js';
import { evidence, tempDataDir, until } from '../helpers.js';
import { testClient, withTestSchema } from '../store-fixtures.js';

// A follower taking the history lease records the state it serves then
// (FollowerService.recordTakenOver), compared with every VPA: the first
// state of a recording. A merge or swap that reached the recorder first is
// that first state already, and the state served at the take-over is not
// compared whole again (at 10M, seconds in the follower's queue of changes).

const DAY = 86_400_000;
const MERGE: ServedChange = { kind: 'merge', corrected: new Set(), clearances: new Map() };
const SNAPSHOT: ServedChange = { ...MERGE, kind: 'snapshot' };

for (const mergeFirst of [false, true]) {
  test(`the state served at a take-over is recorded once${mergeFirst ? ', when a merge got there first' : ''}`, { timeout: 60_000 }, async () => {
    const { base, deltas } = snapshotAndDelta([[evidence('x@ybl', 'https://a.example')], [evidence('y@ybl', 'https://b.example')]]);
    const delta = deltas[0]!;
    await withTestSchema(async (location) => {
      await migrate(location);
      const t = await tempDataDir();
      const compared: unknown[] = [];
      const logger: Logger = { ...silentLogger, info: (fields, message) => void (message === 'answer changes recorded' && compared.push(fields.compared)) };
      const recorder = new HistoryRecorder({ location, path: join(t.root, 'history', 'changes.log'), keepMs: 400 * DAY, logger, leasePollMs: 100 });
      const served: Promise<void>[] = [];
      try {
        // What the follower does at a take-over, behind a merge when one came first.
        recorder.start(() => {
          const recorded = (async () => {
            if (mergeFirst) await recorder.record(base, delta, MERGE);
            await recorder.recordFirst(base, delta, SNAPSHOT);
          })();
          served.push(recorded);
          return recorded;
        });
        await until('the lease taken', 20_000, () => served.length > 0);
        await served[0];
        assert.ok(recorder.recording);
        assert.deepEqual(compared, ['every VPA'], 'one whole comparison');
        const db = await testClient(location);
        try {
          const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM answer_states');
          assert.equal(Number(rows[0]!.n), 1, 'one state recorded');
          const changes = await db.query<{ vpa: string }>('SELECT vpa FROM answer_changes ORDER BY vpa');
          assert.deepEqual(
            changes.rows.map((row) => row.vpa),
            ['x@ybl', 'y@ybl'],
          );
        } finally {
          await db.end();
        }
        // Once a state is recorded, a state served later is recorded as any other.
        await recorder.record(base, delta, SNAPSHOT);
        assert.equal(compared.length, 2);
      } finally {
        await recorder.close();
        await t.cleanup();
      }
    });
  });
}
