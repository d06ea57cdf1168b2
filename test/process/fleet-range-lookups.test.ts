import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PUBLISH_WHEN_ASKED, appendToLog, withTestSchema } from '../store-fixtures.js';
import { evidence, tempDataDir, until } from '../helpers.js';
import { migrate } from '../../src/store/migrations.js';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { FollowerService } from '../../src/fleet/follower-service.js';
import { HashRangeKeeper } from '../../src/service/hash-range-keeper.js';
import { answerRange, parseRangePrefix } from '../../src/api/range-answer.js';
import { ByteScratch } from '../../src/common/byte-scratch.js';
import { silentLogger } from '../../src/common/logger.js';
import { vpaHashHex } from '../../src/vpa/vpa-hash.js';

test("a follower's range lookups find what the log adds, from its delta and after the next publication", { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    await appendToLog(location, [evidence('first.mule@ybl', 'https://one.example')]);
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 100, policy: PUBLISH_WHEN_ASKED });
    let follower: FollowerService | null = null;
    let hashes: HashRangeKeeper | null = null;
    try {
      await until('first publication', 30_000, () => builder.published !== null);
      follower = await FollowerService.start({ location, dataDir: (await tempDataDir()).dir, pollMs: 100 });
      const served = follower;
      const keeper = new HashRangeKeeper(served, { threads: 1, logger: silentLogger });
      hashes = keeper;
      const found = (upi: string): boolean => {
        const made = keeper.snapshot;
        if (made === null) return false;
        const hash = vpaHashHex(upi);
        const body = JSON.parse(Buffer.from(answerRange(served.view, made.ranges, keeper.hashesOf(served.delta), parseRangePrefix(hash.slice(0, 5)), false, new ByteScratch(65_536))).toString()) as { entries: { suffix: string }[] };
        return body.entries.some((e) => e.suffix === hash.slice(5));
      };
      await until('the snapshot found by range', 30_000, () => found('first.mule@ybl'));
      assert.equal(found('never.seen@ybl'), false);

      await appendToLog(location, [evidence('logged.later@okaxis', 'https://two.example')]);
      await until('the log found by range, from the delta', 10_000, () => found('logged.later@okaxis'));

      const before = served.publication.seq;
      builder.requestBuild();
      // The next snapshot's ranges are made before it is served: it is served with them, never without.
      await until('the next publication served', 30_000, () => {
        assert.notEqual(keeper.snapshot, null, 'ranges of the snapshot served');
        return served.publication.seq > before;
      });
      assert.equal(keeper.snapshot?.data, served.current.data);
      assert.ok(found('logged.later@okaxis') && found('first.mule@ybl'), 'both found by range over it at once');
      assert.equal(served.delta.meta.vpaCount, 0);
    } finally {
      hashes?.close();
      await follower?.close();
      await builder.close();
      await t.cleanup();
    }
  });
});
