/**
 * Every key's watchlists with the keys they belong to: the admin API names
 * a watchlist's owner by key id, the key list gives its name.
 */
import { listKeys, listWatchlists } from '../api/admin.js';
import type { AdminWatchlist, KeyRecord } from '../api/types.js';

export interface OwnedWatchlists {
  readonly watchlists: readonly AdminWatchlist[];
  /** Every key by id. */
  readonly keys: ReadonlyMap<string, KeyRecord>;
}

export async function loadOwnedWatchlists(signal: AbortSignal): Promise<OwnedWatchlists> {
  const [watchlists, keys] = await Promise.all([listWatchlists(signal), listKeys(signal)]);
  return { watchlists, keys: new Map(keys.keys.map((key) => [key.id, key])) };
}

