import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { FileWatchStore } from '../../src/watch/file-watch-store.js';
import { DEFAULT_DELIVERY, WebhookDelivery } from '../../src/watch/webhook-delivery.js';
import { newEventId, stateOf, type StoredEvent } from '../../src/watch/watchlist.js';
import { clearedBatchItem } from '../../src/engine/verdict.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDataDir, until } from '../helpers.js';
import { seedOneEvent } from '../watch-fixtures.js';

/** A receiver answering every request with `answer`, counting the requests that reach it. */
async function receiver(answer: (res: import('node:http').ServerResponse) => void): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    req.resume();
    req.on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    hits: () => hits,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** One event for a watchlist pointing at `url`, and the delivery's first attempt. */
async function firstAttempt(url: string, policy = DEFAULT_DELIVERY): Promise<StoredEvent> {
  const { root, cleanup } = await tempDataDir();
  const store = await FileWatchStore.open(join(root, 'journal.ndjson'));
  try {
    const event = await seedOneEvent(store, url);
    const delivery = new WebhookDelivery(store, { allowed: new Set(['127.0.0.1']), logger: silentLogger, policy });
    delivery.wake();
    await until('an attempt is recorded', 15_000, () => (store.findEvent('wl_1', event.id)?.delivery.attempts.length ?? 0) > 0);
    await delivery.close();
    return store.findEvent('wl_1', event.id)!;
  } finally {
    await store.close();
    await cleanup();
  }
}

test('a redirect is not followed: the event stays pending, the target is not asked', async () => {
  const target = await receiver((res) => res.writeHead(200).end('ok'));
  const redirecting = await receiver((res) => res.writeHead(307, { location: target.url }).end());
  try {
    const stored = await firstAttempt(redirecting.url);
    assert.equal(stored.delivery.state, 'pending');
    assert.equal(stored.delivery.attempts[0]!.status, 307);
    assert.equal(target.hits(), 0);
  } finally {
    await target.close();
    await redirecting.close();
  }
});

test('an answer is read up to the cap, then the connection is dropped; 2xx still counts', async () => {
  const huge = await receiver((res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(64 * 1024, 'x');
    // Far more than the cap, written until the client goes away.
    let sent = 0;
    const write = () => {
      while (sent < 64 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
      if (sent < 64 * 1024 * 1024) res.once('drain', write);
      else res.end();
    };
    res.on('close', () => (sent = Infinity));
    write();
  });
  try {
    const started = Date.now();
    const stored = await firstAttempt(huge.url);
    assert.equal(stored.delivery.state, 'delivered');
    assert.ok(Date.now() - started < 10_000, 'not reading 64 MiB');
  } finally {
    await huge.close();
  }
});

test('a receiver that does not answer in time is an attempt that failed', async () => {
  const silent = await receiver(() => {});
  try {
    const stored = await firstAttempt(silent.url, { ...DEFAULT_DELIVERY, timeoutMs: 300 });
    assert.equal(stored.delivery.state, 'pending');
    assert.equal(stored.delivery.attempts[0]!.status, null);
    assert.match(stored.delivery.attempts[0]!.error ?? '', /no answer within 300 ms/);
  } finally {
    await silent.close();
  }
});

test('a receiver that trickles its answer a byte at a time is cut off at the timeout, not when it stops', async () => {
  let writing: NodeJS.Timeout | null = null;
  const trickling = await receiver((res) => {
    // Never silent for the socket's timeout, never done: the whole attempt's deadline is what ends it.
    res.socket?.write('HTTP/1.1 200 OK\r\n');
    writing = setInterval(() => res.socket?.write('X'), 50);
    res.on('close', () => clearInterval(writing!));
  });
  try {
    const started = Date.now();
    const stored = await firstAttempt(trickling.url, { ...DEFAULT_DELIVERY, timeoutMs: 500 });
    assert.ok(Date.now() - started < 5_000, `cut off after ${Date.now() - started} ms`);
    assert.equal(stored.delivery.state, 'pending');
    assert.match(stored.delivery.attempts[0]!.error ?? '', /no answer within 500 ms/);
  } finally {
    if (writing !== null) clearInterval(writing);
    await trickling.close();
  }
});

test("one watchlist's backlog to a receiver that never answers does not hold back another's event", async () => {
  const silent = await receiver(() => {});
  const good = await receiver((res) => res.writeHead(200).end('ok'));
  const { root, cleanup } = await tempDataDir();
  const store = await FileWatchStore.open(join(root, 'journal.ndjson'));
  const delivery = new WebhookDelivery(store, { allowed: new Set(['127.0.0.1']), logger: silentLogger, policy: { ...DEFAULT_DELIVERY, timeoutMs: 2_000 } });
  try {
    const now = Date.now();
    const eventOf = (watchlistId: string, upi: string, at: number) => ({
      id: newEventId(at),
      type: 'vpa.changed' as const,
      watchlist_id: watchlistId,
      upi,
      before: clearedBatchItem(upi),
      after: clearedBatchItem(upi),
      data_version: 'v',
      occurred_at: new Date(at).toISOString(),
    });
    const created_at = new Date(now).toISOString();
    await store.create({ id: 'wl_backlog', owner: 'key_aaaaaaaaaaaa', name: 'backlog', webhook_url: silent.url, filters: {}, secret: 'whsec_x', created_at });
    await store.create({ id: 'wl_other', owner: 'key_bbbbbbbbbbbb', name: 'other', webhook_url: good.url, filters: {}, secret: 'whsec_y', created_at });
    const backlog = Array.from({ length: 40 }, (_, i) => `v${i}@ybl`);
    await store.addVpas('wl_backlog', backlog.map((upi) => [upi, stateOf(clearedBatchItem(upi))]));
    await store.addVpas('wl_other', [['o@ybl', stateOf(clearedBatchItem('o@ybl'))]]);
    // The backlog's events are older: due first.
    await store.screened([], backlog.map((upi, i) => eventOf('wl_backlog', upi, now - 1_000 + i)));
    const other = eventOf('wl_other', 'o@ybl', now);
    await store.screened([], [other]);
    delivery.wake();
    await until('the other watchlist delivered', 15_000, () => store.findEvent('wl_other', other.id)?.delivery.state === 'delivered');
    // Its turn came beside the backlog's first two attempts, before any of them timed out: not after
    // the backlog's events had taken every slot until their attempts failed.
    const attempted = backlog.filter((_, i) => (store.events('wl_backlog', null, 100).events.find((e) => e.event.upi === backlog[i])?.delivery.attempts.length ?? 0) > 0);
    assert.deepEqual(attempted, [], 'no attempt of the backlog ended before the other was delivered');
  } finally {
    await delivery.close();
    await store.close();
    await silent.close();
    await good.close();
    await cleanup();
  }
});

test('an event redelivered after its day is given up is retried as a new one: backoff from the first delay, a day from the redelivery', async () => {
  const failing = await receiver((res) => res.writeHead(503).end());
  const { root, cleanup } = await tempDataDir();
  const store = await FileWatchStore.open(join(root, 'journal.ndjson'));
  const delivery = new WebhookDelivery(store, { allowed: new Set(['127.0.0.1']), logger: silentLogger });
  try {
    const day = 24 * 60 * 60_000;
    const occurred = Date.now() - 2 * day;
    await store.create({ id: 'wl_1', owner: 'key_aaaaaaaaaaaa', name: 'x', webhook_url: failing.url, filters: {}, secret: 'whsec_x', created_at: new Date(occurred).toISOString() });
    await store.addVpas('wl_1', [['a@ybl', stateOf(clearedBatchItem('a@ybl'))]]);
    const event = { id: newEventId(occurred), type: 'vpa.changed' as const, watchlist_id: 'wl_1', upi: 'a@ybl', before: clearedBatchItem('a@ybl'), after: clearedBatchItem('a@ybl'), data_version: 'v', occurred_at: new Date(occurred).toISOString() };
    await store.screened([], [event]);
    // Its first day: twelve failures, then given up.
    const earlier = Array.from({ length: 12 }, (_, i) => ({ at: new Date(occurred + i * 2 * 60 * 60_000).toISOString(), status: 503, error: 'answered 503', duration_ms: 2 }));
    await store.attempted(event.id, { state: 'failed', attempts: earlier, nextAttemptAt: null });
    // Redelivered now, as the API's redeliver records it.
    const redelivered = Date.now();
    await store.attempted(event.id, { state: 'pending', attempts: earlier, nextAttemptAt: redelivered, since: redelivered });
    delivery.wake();
    await until('the redelivery attempted', 15_000, () => store.findEvent('wl_1', event.id)!.delivery.attempts.length > earlier.length);
    const after = store.findEvent('wl_1', event.id)!.delivery;
    assert.equal(after.state, 'pending', 'not given up on its first failure');
    assert.equal(after.since, redelivered);
    const wait = after.nextAttemptAt! - Date.parse(after.attempts.at(-1)!.at);
    assert.ok(wait >= 1_000 && wait <= DEFAULT_DELIVERY.firstRetryMs + 1_000, `the next attempt ${wait} ms later: the first retry's delay, not the thirteenth's`);
  } finally {
    await delivery.close();
    await store.close();
    await failing.close();
    await cleanup();
  }
});

test('any status a receiver sends is recorded, and a redelivery asked for while an attempt is out is kept', async () => {
  let status = 999;
  let delayMs = 0;
  const odd = await receiver((res) => setTimeout(() => res.writeHead(status).end(), delayMs));
  const { root, cleanup } = await tempDataDir();
  const path = join(root, 'journal.ndjson');
  const store = await FileWatchStore.open(path);
  const delivery = new WebhookDelivery(store, { allowed: new Set(['127.0.0.1']), logger: silentLogger });
  try {
    const now = Date.now();
    await store.create({ id: 'wl_1', owner: 'key_aaaaaaaaaaaa', name: 'x', webhook_url: odd.url, filters: {}, secret: 'whsec_x', created_at: new Date(now).toISOString() });
    const eventOf = (upi: string) => ({ id: newEventId(now), type: 'vpa.changed' as const, watchlist_id: 'wl_1', upi, before: clearedBatchItem(upi), after: clearedBatchItem(upi), data_version: 'v', occurred_at: new Date(now).toISOString() });
    const first = eventOf('a@ybl');
    await store.screened([], [first]);
    delivery.wake();
    await until('the attempt recorded', 10_000, () => store.findEvent('wl_1', first.id)!.delivery.attempts.length === 1);
    assert.equal(store.findEvent('wl_1', first.id)!.delivery.attempts[0]!.status, 999);
    assert.equal(store.findEvent('wl_1', first.id)!.delivery.state, 'pending');
    assert.equal(odd.hits(), 1, 'sent once, then backed off');

    // Redelivered while an attempt is out: the attempt's outcome does not undo it.
    status = 503;
    delayMs = 800;
    const second = eventOf('b@ybl');
    await store.screened([], [second]);
    delivery.wake();
    await until('the attempt out', 10_000, () => odd.hits() === 2);
    const redeliveredAt = Date.now();
    await store.attempted(second.id, { state: 'pending', attempts: [], nextAttemptAt: redeliveredAt, since: redeliveredAt });
    await until('the attempt recorded', 10_000, () => store.findEvent('wl_1', second.id)!.delivery.attempts.length >= 1);
    const after = store.findEvent('wl_1', second.id)!.delivery;
    assert.equal(after.since, redeliveredAt, 'the run of the redelivery');
    assert.equal(after.state, 'pending');
    await store.close();
    // Both outcomes as written read back.
    const reopened = await FileWatchStore.open(path);
    assert.equal(reopened.findEvent('wl_1', first.id)!.delivery.attempts[0]!.status, 999);
    await reopened.close();
  } finally {
    await delivery.close();
    await store.close();
    await odd.close();
    await cleanup();
  }
});
