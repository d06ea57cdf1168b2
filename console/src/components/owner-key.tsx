/** The key a watchlist belongs to: its name (if the key list has it), its id, and whether it is revoked. */
import type { KeyRecord } from '../api/types.js';

export function OwnerKey({ id, keys }: { readonly id: string; readonly keys: ReadonlyMap<string, KeyRecord> }) {
  const key = keys.get(id);
  return (
    <>
      {key?.name ?? 'unknown key'} <span class="muted">{id}</span>{' '}
      {key !== undefined && key.revoked_at !== null ? <span class="badge revoked">revoked</span> : null}
    </>
  );
}
