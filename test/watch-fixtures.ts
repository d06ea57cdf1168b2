import { newEventId, stateOf, type WatchEvent } from '../src/watch/watchlist.js';
import type { WatchStore } from '../src/watch/watch-store.js';
import { clearedBatchItem } from '../src/engine/verdict.js';

/** A watchlist `wl_1` in `store` whose webhook is `url`, watching a@ybl, and one event of it due for delivery. */
export async function seedOneEvent(store: WatchStore, url: string): Promise<WatchEvent> {
  await store.create({ id: 'wl_1', owner: 'key_aaaaaaaaaaaa', name: 'x', webhook_url: url, filters: {}, secret: 'whsec_x', created_at: new Date().toISOString() });
  await store.addVpas('wl_1', [['a@ybl', stateOf(clearedBatchItem('a@ybl'))]]);
  const now = Date.now();
  const event: WatchEvent = { id: newEventId(now), type: 'vpa.changed', watchlist_id: 'wl_1', upi: 'a@ybl', before: clearedBatchItem('a@ybl'), after: clearedBatchItem('a@ybl'), data_version: 'v', occurred_at: new Date(now).toISOString() };
  await store.screened([{ watchlistId: 'wl_1', upi: 'a@ybl', state: stateOf(clearedBatchItem('a@ybl')) }], [event]);
  return event;
}
