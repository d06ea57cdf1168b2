import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FileWatchStore } from '../../src/watch/file-watch-store.js';
import { DEFAULT_DELIVERY, WebhookDelivery } from '../../src/watch/webhook-delivery.js';
import type { WatchStore } from '../../src/watch/watch-store.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDataDir, until } from '../helpers.js';
import { startReceiver } from '../webhook-receiver.js';
import { seedOneEvent } from '../watch-fixtures.js';

// A delivery whose outcome the store does not take (a journal that cannot
// be written, a store that is down) leaves the event due as it was: it is
// held back for the first retry's delay rather than sent again at once,
// so the receiver is not flooded while the store cannot record, and it is
// sent and recorded once the store takes outcomes again.

const HOLD_MS = 600;

test('an attempt the store did not record is not sent again before the first retry delay', { timeout: 30_000 }, async () => {
  const receiver = await startReceiver();
  const { root, cleanup } = await tempDataDir();
  const store = await FileWatchStore.open(join(root, 'journal.ndjson'));
  let refusals = 2;
  // The store as delivery sees it, its first two outcomes refused.
  const flaky = new Proxy(store, {
    get(target, name) {
      if (name === 'attempted') {
        return async (...args: Parameters<WatchStore['attempted']>) => {
          if (refusals > 0) {
            refusals--;
            throw new Error('the journal cannot be written');
          }
          return target.attempted(...args);
        };
      }
      const value: unknown = Reflect.get(target, name, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  const delivery = new WebhookDelivery(flaky, { allowed: new Set(['127.0.0.1']), logger: silentLogger, policy: { ...DEFAULT_DELIVERY, firstRetryMs: HOLD_MS } });
  try {
    const event = await seedOneEvent(store, receiver.url);
    delivery.wake();
    await until('delivered and recorded', 15_000, () => store.findEvent('wl_1', event.id)?.delivery.state === 'delivered');
    const hits = receiver.received.map((r) => r.at);
    assert.equal(hits.length, 3, 'sent once per refused outcome and once more');
    for (let i = 1; i < hits.length; i++) assert.ok(hits[i]! - hits[i - 1]! >= HOLD_MS - 50, `sent again after ${hits[i]! - hits[i - 1]!} ms`);
    assert.equal(store.findEvent('wl_1', event.id)!.delivery.attempts.length, 1, 'only the recorded attempt is in the journal');
  } finally {
    await delivery.close();
    await store.close();
    await receiver.close();
    await cleanup();
  }
});
