/**
 * Watchlists with the keys they belong to: the admin API names a
 * watchlist's owner by key id, the key list gives its name.
 */
import { fetchWatchlist, listKeys } from '../api/admin.js';
import type { AdminWatchlist, KeyRecord } from '../api/types.js';

/** Every key by id. */
export type KeysById = ReadonlyMap<string, KeyRecord>;

export async function loadKeysById(signal: AbortSignal): Promise<KeysById> {
  return new Map((await listKeys(signal)).keys.map((key) => [key.id, key]));
}

export interface OwnedWatchlist {
  /** Null when no watchlist has the id. */
  readonly watchlist: AdminWatchlist | null;
  readonly keys: KeysById;
}

export async function loadOwnedWatchlist(id: string, signal: AbortSignal): Promise<OwnedWatchlist> {
  const [watchlist, keys] = await Promise.all([fetchWatchlist(id, signal), loadKeysById(signal)]);
  return { watchlist, keys };
}
