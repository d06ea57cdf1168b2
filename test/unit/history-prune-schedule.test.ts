import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextPruneIn } from '../../src/fleet/history-recorder.js';

// The store's history is pruned once a day, whichever follower holds the
// history lease: a take-over prunes when the last prune, by anyone, is a
// day old, and never sooner than a minute after it.

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const NOW = Date.parse('2026-11-30T12:00:00Z');

test('a store never pruned is pruned a minute after the take-over', () => {
  assert.equal(nextPruneIn(null, NOW), MINUTE);
});

test('a take-over soon after a prune waits for the rest of the day', () => {
  assert.equal(nextPruneIn(NOW - 10 * MINUTE, NOW), DAY - 10 * MINUTE);
  assert.equal(nextPruneIn(NOW - DAY + 5 * MINUTE, NOW), 5 * MINUTE);
});

test('a prune overdue (leases moving more often than any wait) comes a minute after the take-over', () => {
  assert.equal(nextPruneIn(NOW - DAY, NOW), MINUTE);
  assert.equal(nextPruneIn(NOW - 30 * DAY, NOW), MINUTE);
});

test('a last prune later than now (by a clock ahead) is not waited on', () => {
  assert.equal(nextPruneIn(NOW + 1, NOW), MINUTE);
  assert.equal(nextPruneIn(NOW + DAY, NOW), MINUTE);
});
