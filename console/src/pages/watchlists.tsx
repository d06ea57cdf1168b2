/**
 * Watchlists: every key's, read-only (callers manage theirs with a screen
 * key through /v1/watchlists); each opens its VPAs and events.
 */
import { ErrorMessage } from '../components/error-message.js';
import { OwnerKey } from '../components/owner-key.js';
import { PageHeading } from '../components/page-heading.js';
import { Table, numeric } from '../components/table.js';
import { Time } from '../components/time.js';
import { formatNumber } from '../format.js';
import { Link, watchlistPath } from '../router.js';
import { useLoad } from '../use-load.js';
import { loadOwnedWatchlists } from '../watch/owned-watchlists.js';

export function WatchlistsPage() {
  const owned = useLoad((signal) => loadOwnedWatchlists(signal), []);
  return (
    <>
      <PageHeading title="Watchlists" />
      <p>
        Each watchlist’s VPAs are screened again whenever the intelligence changes, and a change that matters is sent to its webhook. Callers
        create and manage their watchlists with a <code>screen</code> key; the console shows every key’s.
      </p>
      <ErrorMessage message={owned.error} />
      {owned.data === null ? (
        owned.loading ? <p role="status">Loading watchlists…</p> : null
      ) : owned.data.watchlists.length === 0 ? (
        <p>No watchlist yet.</p>
      ) : (
        <Table caption={`Every key’s watchlists (${formatNumber(owned.data.watchlists.length)})`} columns={['Name', 'Owner key', 'Webhook URL', numeric('VPAs'), 'Created']}>
          {owned.data.watchlists.map((watchlist) => (
            <tr key={watchlist.id}>
              <th scope="row">
                <Link href={watchlistPath(watchlist.id)}>{watchlist.name}</Link> <span class="muted">{watchlist.id}</span>
              </th>
              <td>
                <OwnerKey id={watchlist.owner} keys={owned.data!.keys} />
              </td>
              <td class="url">
                <code>{watchlist.webhook_url}</code>
              </td>
              <td class="num">{formatNumber(watchlist.vpa_count)}</td>
              <td>
                <Time iso={watchlist.created_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
