/**
 * Watchlists: every key's, read-only (callers manage theirs with a screen
 * key through /v1/watchlists), a page at a time; each opens its VPAs and
 * events.
 */
import { useRef } from 'preact/hooks';
import { listWatchlists } from '../api/admin.js';
import { ErrorMessage } from '../components/error-message.js';
import { OwnerKey } from '../components/owner-key.js';
import { PageHeading } from '../components/page-heading.js';
import { Pager } from '../components/pager.js';
import { Table, numeric } from '../components/table.js';
import { Time } from '../components/time.js';
import { formatNumber } from '../format.js';
import { Link, watchlistPath } from '../router.js';
import { useCursorPages } from '../use-cursor-pages.js';
import { useLoad } from '../use-load.js';
import { loadKeysById } from '../watch/owned-watchlists.js';

const WATCHLISTS_PER_PAGE = 100;

export function WatchlistsPage() {
  const watchlists = useCursorPages((cursor, signal) => listWatchlists(WATCHLISTS_PER_PAGE, cursor, signal));
  const keys = useLoad((signal) => loadKeysById(signal), []);
  const heading = useRef<HTMLHeadingElement>(null);
  const page = watchlists.loaded.data;
  const keysById = keys.data;
  return (
    <>
      <PageHeading title="Watchlists" />
      <p>
        Each watchlist’s VPAs are screened again whenever the intelligence changes, and a change that matters is sent to its webhook. Callers
        create and manage their watchlists with a <code>screen</code> key; the console shows every key’s.
      </p>
      <h2 class="sr-only" ref={heading} tabIndex={-1}>
        Every key’s watchlists
      </h2>
      <ErrorMessage message={watchlists.loaded.error ?? keys.error} />
      {page === null || keysById === null ? (
        watchlists.loaded.loading || keys.loading ? <p role="status">Loading watchlists…</p> : null
      ) : page.watchlists.length === 0 && watchlists.number === 1 ? (
        <p>No watchlist yet.</p>
      ) : (
        <Table caption={`Every key’s watchlists, page ${watchlists.number}`} columns={['Name', 'Owner key', 'Webhook URL', numeric('VPAs'), 'Created']}>
          {page.watchlists.map((watchlist) => (
            <tr key={watchlist.id}>
              <th scope="row">
                <Link href={watchlistPath(watchlist.id)}>{watchlist.name}</Link> <span class="muted">{watchlist.id}</span>
              </th>
              <td>
                <OwnerKey id={watchlist.owner} keys={keysById} />
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
      <Pager pages={watchlists} previousLabel="Previous page" nextLabel="Next page" focusOnTurn={heading} />
    </>
  );
}
