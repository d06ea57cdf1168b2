import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FileWatchStore } from '../../src/watch/file-watch-store.js';
import { newEventId, stateOf, type WatchEvent, type Watchlist } from '../../src/watch/watchlist.js';
import { clearedBatchItem } from '../../src/engine/verdict.js';
import { ErrorCode } from '../../src/common/errors.js';
import { tempDataDir } from '../helpers.js';

const CLEARED = stateOf(clearedBatchItem('x@ybl'));
const FLAGGED = [1, 9000, 0, 12, 3, 2] as const;

function watchlist(id: string, owner = 'key_aaaaaaaaaaaa'): Watchlist {
  return { id, owner, name: id, webhook_url: 'https://hooks.example.com/x', filters: {}, secret: 'whsec_x', created_at: '2026-11-26T00:00:00.000Z' };
}

function event(watchlistId: string, upi: string, at: number): WatchEvent {
  return { id: newEventId(at), type: 'vpa.changed', watchlist_id: watchlistId, upi, before: clearedBatchItem(upi), after: clearedBatchItem(upi), data_version: 'v', occurred_at: new Date(at).toISOString() };
}

test('everything acknowledged is there after a restart, and a torn last line is skipped', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'watch', 'journal.ndjson');
    const store = await FileWatchStore.open(path);
    await store.create(watchlist('wl_1'));
    await store.create(watchlist('wl_2', 'key_bbbbbbbbbbbb'));
    await store.addVpas('wl_1', [['a@ybl', CLEARED], ['b@ybl', CLEARED]]);
    await store.removeVpas('wl_1', ['b@ybl']);
    await store.setSecret('wl_1', 'whsec_new', 'whsec_x');
    const e = event('wl_1', 'a@ybl', 1_000);
    await store.screened([{ watchlistId: 'wl_1', upi: 'a@ybl', state: FLAGGED }], [e]);
    await store.attempted(e.id, { state: 'pending', attempts: [{ at: new Date(1_000).toISOString(), status: 503, error: 'answered 503', duration_ms: 3 }], nextAttemptAt: 5_000 });
    await store.remove('wl_2');
    await appendFile(path, '{"op":"watchl');

    const reopened = await FileWatchStore.open(path);
    assert.equal(reopened.find('key_aaaaaaaaaaaa', 'wl_1')?.secret, 'whsec_new');
    assert.equal(reopened.find('key_bbbbbbbbbbbb', 'wl_1'), null, "another owner's");
    assert.equal(reopened.find('key_bbbbbbbbbbbb', 'wl_2'), null, 'removed');
    assert.deepEqual(reopened.pageVpas('wl_1', null, 10), { upis: ['a@ybl'], next: null });
    assert.deepEqual([...[...reopened.watched()][0]!.states], [['a@ybl', FLAGGED]]);
    assert.deepEqual(reopened.due(4_999, 10), [], 'not due yet');
    assert.equal(reopened.due(5_000, 10)[0]?.delivery.attempts.length, 1);
  } finally {
    await cleanup();
  }
});

test("a VPA's events go one at a time, oldest first; other VPAs' do not wait", async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const store = await FileWatchStore.open(join(root, 'journal.ndjson'));
    await store.create(watchlist('wl_1'));
    await store.addVpas('wl_1', [['a@ybl', CLEARED], ['b@ybl', CLEARED]]);
    const first = event('wl_1', 'a@ybl', 1_000);
    const second = event('wl_1', 'a@ybl', 2_000);
    const other = event('wl_1', 'b@ybl', 3_000);
    await store.screened([], [first, other, second]);
    assert.deepEqual(store.due(10_000, 10).map((s) => s.event.id), [first.id, other.id]);
    await store.attempted(first.id, { state: 'delivered', attempts: [], nextAttemptAt: null });
    assert.deepEqual(store.due(10_000, 10).map((s) => s.event.id), [second.id, other.id]);
    assert.deepEqual(store.events('wl_1', null, 2).events.map((s) => s.event.id), [other.id, second.id], 'newest first');
    assert.equal(store.events('wl_1', null, 2).next, second.id);
  } finally {
    await cleanup();
  }
});

test('VPAs are added up to the room given, all of a call or none of it', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const store = await FileWatchStore.open(join(root, 'journal.ndjson'));
    await store.create(watchlist('wl_1'));
    assert.deepEqual(await store.addVpas('wl_1', [['a@ybl', CLEARED], ['b@ybl', CLEARED], ['a@ybl', CLEARED]], 3), { added: 2, total: 2 });
    // Two new and one watched already: four would be one over.
    assert.equal(await store.addVpas('wl_1', [['a@ybl', CLEARED], ['c@ybl', CLEARED], ['d@ybl', CLEARED]], 3), null);
    assert.equal(store.vpaCount('wl_1'), 2);
    assert.deepEqual(await store.addVpas('wl_1', [['a@ybl', CLEARED], ['c@ybl', CLEARED]], 3), { added: 1, total: 3 });
  } finally {
    await cleanup();
  }
});

test('pending events are due again, in order, after a restart', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'journal.ndjson');
    const store = await FileWatchStore.open(path);
    await store.create(watchlist('wl_1'));
    await store.addVpas('wl_1', [['a@ybl', CLEARED], ['b@ybl', CLEARED]]);
    const first = event('wl_1', 'a@ybl', 1_000);
    const second = event('wl_1', 'a@ybl', 2_000);
    const other = event('wl_1', 'b@ybl', 3_000);
    await store.screened([], [first, second, other]);
    await store.attempted(first.id, { state: 'pending', attempts: [], nextAttemptAt: 50_000 });
    await store.attempted(other.id, { state: 'delivered', attempts: [], nextAttemptAt: null });
    await store.close();
    const reopened = await FileWatchStore.open(path);
    // The first waits for its retry, and the second behind it.
    assert.deepEqual(reopened.due(10_000, 10), []);
    assert.equal(reopened.nextDue(), 50_000);
    assert.deepEqual(reopened.due(60_000, 10).map((s) => s.event.id), [first.id]);
    await reopened.close();
  } finally {
    await cleanup();
  }
});

test('a journal grown past what it describes is rewritten smaller, with the same content', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'journal.ndjson');
    const store = await FileWatchStore.open(path, 1);
    await store.create(watchlist('wl_1'));
    for (let i = 0; i < 50; i++) {
      await store.addVpas('wl_1', [[`v${i}@ybl`, CLEARED]]);
      await store.removeVpas('wl_1', [`v${i}@ybl`]);
    }
    await store.addVpas('wl_1', [['kept@ybl', CLEARED]]);
    await store.close();
    assert.ok((await stat(path)).size < 1000, 'rewritten');
    const reopened = await FileWatchStore.open(path);
    assert.deepEqual(reopened.pageVpas('wl_1', null, 10).upis, ['kept@ybl']);
  } finally {
    await cleanup();
  }
});

test('a rotation written over a secret already replaced changes nothing; a rewrite keeps a redelivery not yet attempted and drops a previous secret past its time', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'journal.ndjson');
    const store = await FileWatchStore.open(path, 1);
    await store.create(watchlist('wl_1'));
    await store.create(watchlist('wl_2'));
    // Two rotations from the same secret, as two replicas at once: the first written wins.
    await store.setSecret('wl_1', 'whsec_first', 'whsec_x', { secret: 'whsec_x', until: Date.now() + 60_000 });
    await store.setSecret('wl_1', 'whsec_second', 'whsec_x');
    assert.equal(store.get('wl_1')!.secret, 'whsec_first');
    assert.equal(store.get('wl_1')!.previous?.secret, 'whsec_x');
    await store.setSecret('wl_2', 'whsec_y', 'whsec_x', { secret: 'whsec_x', until: Date.now() - 1 });
    // An event redelivered before its first attempt (it waited behind another of its VPA).
    const e = event('wl_1', 'a@ybl', 1_000);
    await store.screened([], [e]);
    const redelivered = { state: 'pending' as const, attempts: [], nextAttemptAt: 2_000_000, since: 2_000_000 };
    await store.attempted(e.id, redelivered);
    for (let i = 0; i < 50; i++) {
      await store.addVpas('wl_1', [[`v${i}@ybl`, CLEARED]]);
      await store.removeVpas('wl_1', [`v${i}@ybl`]);
    }
    await store.close();
    assert.ok((await stat(path)).size < 3000, `rewritten: ${(await stat(path)).size} bytes`);
    const reopened = await FileWatchStore.open(path);
    assert.equal(reopened.get('wl_1')!.secret, 'whsec_first');
    assert.equal(reopened.get('wl_1')!.previous?.secret, 'whsec_x', 'kept while in its time');
    assert.equal(reopened.get('wl_2')!.secret, 'whsec_y');
    assert.equal(reopened.get('wl_2')!.previous, undefined, 'past its time: not carried on');
    assert.deepEqual(reopened.findEvent('wl_1', e.id)!.delivery, redelivered);
  } finally {
    await cleanup();
  }
});

test('a journal line this service did not write is ERR_ADMIN_STATE', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'journal.ndjson');
    for (const bad of ['nope\n', '{"op":"explode"}\n', '{"op":"add","id":"wl_missing","e":[]}\n', '{"op":"watchlist","w":{"id":"wl_1"}}\n']) {
      await writeFile(path, bad);
      await assert.rejects(FileWatchStore.open(path), (error: Error & { code?: string }) => error.code === ErrorCode.ADMIN_STATE && /line 1/.test(error.message));
    }
    // Lines of the right shape whose content no store writes: each refused at its line, naming why.
    const created = JSON.stringify({ op: 'watchlist', w: watchlist('wl_1') });
    const screened = JSON.stringify({ op: 'screened', c: [], events: [event('wl_1', 'a@ybl', 1_000)] });
    const eventId = (JSON.parse(screened) as { events: WatchEvent[] }).events[0]!.id;
    const attempt = { at: new Date(1_000).toISOString(), status: 503, error: 'answered 503', duration_ms: 3 };
    const attempted = (d: unknown) => JSON.stringify({ op: 'attempted', id: eventId, d });
    for (const [lines, why] of [
      [[created, created], /created twice/],
      [[JSON.stringify({ op: 'watchlist', w: { ...watchlist('wl_1'), filters: { statuses: ['BLOCKED'] } } })], /not a watchlist/],
      [[JSON.stringify({ op: 'watchlist', w: { ...watchlist('wl_1'), filters: { risk_categories: 'mule' } } })], /not a watchlist/],
      [[created, screened, attempted({ state: 'pending', attempts: [attempt], nextAttemptAt: null })], /without a delivery/],
      [[created, screened, attempted({ state: 'failed', attempts: [attempt], nextAttemptAt: 5_000 })], /without a delivery/],
      [[created, screened, attempted({ state: 'pending', attempts: [{ ...attempt, status: 'x' }], nextAttemptAt: 5_000 })], /without a delivery/],
      [[created, screened, attempted({ state: 'pending', attempts: [{ ...attempt, at: 'yesterday' }], nextAttemptAt: 5_000 })], /without a delivery/],
      [[created, screened, attempted({ state: 'pending', attempts: [], nextAttemptAt: 5_000, since: 'now' })], /without a delivery/],
    ] as const) {
      await writeFile(path, lines.map((l) => `${l}\n`).join(''));
      await assert.rejects(FileWatchStore.open(path), (error: Error & { code?: string }) => error.code === ErrorCode.ADMIN_STATE && new RegExp(`line ${lines.length}`).test(error.message) && why.test(error.message), lines.at(-1));
    }
  } finally {
    await cleanup();
  }
});

test('an append that fails leaves the journal whole and takes no change after it; a restart serves what was acknowledged', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'watch', 'journal.ndjson');
    const store = await FileWatchStore.open(path);
    await store.create(watchlist('wl_1'));
    const acknowledged = (await stat(path)).size;
    // The journal made unwritable: its name now a folder, as a full disk would refuse the append.
    await rename(path, `${path}.kept`);
    await mkdir(path);
    await assert.rejects(store.create(watchlist('wl_2')), { code: ErrorCode.ADMIN_STATE });
    await rm(path, { recursive: true });
    await rename(`${path}.kept`, path);
    // A change built on the one lost would be journaled without it: refused, and the journal untouched.
    await assert.rejects(store.addVpas('wl_2', [['a@ybl', CLEARED]]), /no watchlist change is taken until the server is restarted/);
    assert.equal((await stat(path)).size, acknowledged);
    const reopened = await FileWatchStore.open(path);
    assert.notEqual(reopened.find('key_aaaaaaaaaaaa', 'wl_1'), null);
    assert.equal(reopened.find('key_aaaaaaaaaaaa', 'wl_2'), null);
  } finally {
    await cleanup();
  }
});
