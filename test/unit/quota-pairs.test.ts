import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QuotaService, type QuotaDecision } from '../../src/access/quota.js';
import { SharedWindowTable } from '../../src/access/shared-windows.js';
import type { KeyRecord } from '../../src/access/key-record.js';
import type { PlansConfig } from '../../src/access/plans.js';

// The quota finds a key's windows by its record, remembered from the first
// request: a record replaced by another (new limits, another plan) must be
// held to what the new one says, and two records naming the same limits
// share one quota, as they did when windows were found by name.

const plans: PlansConfig = {
  plans: new Map([
    ['default', { burst: 3, sustained: 100, windowSeconds: 60 }],
    ['large', { burst: 5, sustained: 100, windowSeconds: 60 }],
  ]),
  authFailuresPerIp: { points: 10, windowSeconds: 60 },
};

const record = (id: string, overrides: Partial<KeyRecord> = {}): KeyRecord => ({
  id,
  name: id,
  plan: 'default',
  scopes: ['screen'],
  limits: null,
  created_at: '2026-11-25T00:00:00Z',
  rotated_at: null,
  revoked_at: null,
  hash: `hash-${id}`,
  ...overrides,
});

/** How many of `n` requests in a row the quota admits (all within one second). */
function admitted(quota: QuotaService, key: KeyRecord, n: number): number {
  let count = 0;
  for (let i = 0; i < n; i++) if ((quota.consume(key) as QuotaDecision).allowed) count++;
  return count;
}

for (const shared of [false, true]) {
  test(`a replaced key record is held to its own limits (${shared ? 'shared windows' : 'this thread'})`, () => {
    const now = 1_795_420_000_000;
    const quota = new QuotaService({ plans, now: () => now, ...(shared ? { sharedWindows: new SharedWindowTable() } : {}) });
    assert.equal(admitted(quota, record('a'), 10), 3);
    // The same key, moved to a larger plan: a new record, counted in that plan's windows.
    assert.equal(admitted(quota, record('a', { plan: 'large' }), 10), 5);
    // Its own limits: a custom pair, on every later request too.
    const custom = record('a', { limits: { burst: 7, sustained: 100, windowSeconds: 60 } });
    assert.equal(admitted(quota, custom, 10), 7);
    assert.equal(admitted(quota, custom, 3), 0);
    assert.equal((quota.consume(custom) as QuotaDecision).limit, 100);
    // A plan that does not exist falls back to the default plan, whose window for 'a' is spent.
    assert.equal(admitted(quota, record('a', { plan: 'gone' }), 2), 0);
  });
}

test('two records with the same key id and limits count in one window', () => {
  const now = 1_795_420_000_000;
  const quota = new QuotaService({ plans, now: () => now });
  const limits = { burst: 4, sustained: 100, windowSeconds: 60 };
  assert.equal(admitted(quota, record('b', { limits }), 2), 2);
  // Reloaded from the key file: an equal record, not the same object.
  assert.equal(admitted(quota, record('b', { limits: { ...limits } }), 5), 2);
});
