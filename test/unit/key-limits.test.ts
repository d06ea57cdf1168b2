import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_KEY_LIMITS, keyLimitsProblem, readKeyRecords } from '../../src/access/key-record.js';
import { parsePlans } from '../../src/access/plans.js';

// A key's or a plan's limits are whole numbers from 1 to MAX_KEY_LIMITS,
// checked alike wherever they come from (a key record, the plans file, the
// CLI, the admin API): a record with a burst of 1e16 or a window of years
// would otherwise be loaded and then fail every request of its key.

const stored = {
  id: 'key_0123456789ab',
  name: 'bank',
  plan: 'default',
  created_at: '2026-01-01T00:00:00.000Z',
  rotated_at: null,
  revoked_at: null,
  hash: 'a'.repeat(64),
};
const fail = (why: string) => new Error(why);
const plansWith = (limits: unknown) => ({ version: 1, plans: { default: limits }, authFailuresPerIp: { points: 20, windowSeconds: 60 } });

test('limits within the bounds are taken, by a key record and by the plans file alike (property)', () => {
  const within = fc.record({
    burst: fc.integer({ min: 1, max: MAX_KEY_LIMITS.burst }),
    sustained: fc.integer({ min: 1, max: MAX_KEY_LIMITS.sustained }),
    windowSeconds: fc.integer({ min: 1, max: MAX_KEY_LIMITS.windowSeconds }),
  });
  fc.assert(
    fc.property(within, (generated) => {
      const limits = { ...generated };
      assert.equal(keyLimitsProblem(limits), null);
      assert.deepEqual(readKeyRecords([{ ...stored, limits }], fail)[0]!.limits, limits);
      assert.deepEqual(parsePlans(plansWith(limits)).plans.get('default'), limits);
    }),
  );
});

test('limits out of bounds, not whole or not numbers are refused by each reader', () => {
  const ok = { burst: 10, sustained: 1000, windowSeconds: 60 };
  const bad = [
    { ...ok, burst: 1e16 },
    { ...ok, burst: MAX_KEY_LIMITS.burst + 1 },
    { ...ok, sustained: 0 },
    { ...ok, sustained: 2.5 },
    { ...ok, windowSeconds: MAX_KEY_LIMITS.windowSeconds + 1 },
    { ...ok, windowSeconds: '60' },
    { burst: 10, sustained: 1000 },
    null,
    [],
  ];
  for (const limits of bad) {
    assert.notEqual(keyLimitsProblem(limits), null, JSON.stringify(limits));
    if (limits !== null) assert.throws(() => readKeyRecords([{ ...stored, limits }], fail), /limits/, JSON.stringify(limits));
    assert.throws(() => parsePlans(plansWith(limits)), /plans\.default/, JSON.stringify(limits));
  }
  assert.throws(() => parsePlans({ ...plansWith(ok), authFailuresPerIp: { points: 20, windowSeconds: MAX_KEY_LIMITS.windowSeconds + 1 } }), /authFailuresPerIp/);
});
