/**
 * One watchlist: what it is and whose, its watched VPAs with their verdicts
 * now, and its events with their deliveries (an event's attempts open
 * beneath it). Both tables page by cursor and refresh every 15 s.
 */
import { useEffect, useRef } from 'preact/hooks';
import { fetchWatchEvents, fetchWatchedVpas } from '../api/admin.js';
import type { AdminWatchlist } from '../api/types.js';
import { BatchItemTable } from '../components/batch-item-table.js';
import { ErrorMessage } from '../components/error-message.js';
import { OwnerKey } from '../components/owner-key.js';
import { PageHeading } from '../components/page-heading.js';
import { Pager } from '../components/pager.js';
import { Time } from '../components/time.js';
import { WatchEventTable } from '../components/watch-event-table.js';
import { formatNumber } from '../format.js';
import { BASE, Link } from '../router.js';
import { useCursorPages } from '../use-cursor-pages.js';
import { useLoad } from '../use-load.js';
import { loadOwnedWatchlist, type KeysById } from '../watch/owned-watchlists.js';

const VPAS_PER_PAGE = 100;
const EVENTS_PER_PAGE = 50;
const REFRESH_MS = 15_000;

export function WatchlistPage({ watchlistId }: { readonly watchlistId: string }) {
  const owned = useLoad((signal) => loadOwnedWatchlist(watchlistId, signal), [watchlistId]);
  const watchlist = owned.data?.watchlist ?? undefined;
  return (
    <>
      <PageHeading title={watchlist === undefined ? `Watchlist ${watchlistId}` : `Watchlist “${watchlist.name}”`} />
      <p>
        <Link href={`${BASE}watchlists`}>All watchlists</Link>
      </p>
      <ErrorMessage message={owned.error} />
      {owned.data === null ? (
        owned.loading ? <p role="status">Loading the watchlist…</p> : null
      ) : watchlist === undefined ? (
        <p>No watchlist has this id: its key may have deleted it.</p>
      ) : (
        <WatchlistView watchlist={watchlist} keys={owned.data.keys} onRefresh={owned.reload} />
      )}
    </>
  );
}

interface WatchlistViewProps {
  readonly watchlist: AdminWatchlist;
  readonly keys: KeysById;
  /** Reloads the watchlist itself (its VPA count). */
  readonly onRefresh: () => Promise<void>;
}

function WatchlistView({ watchlist, keys, onRefresh }: WatchlistViewProps) {
  const { id } = watchlist;
  const vpas = useCursorPages((cursor, signal) => fetchWatchedVpas(id, VPAS_PER_PAGE, cursor, signal));
  const events = useCursorPages((cursor, signal) => fetchWatchEvents(id, EVENTS_PER_PAGE, cursor, signal));
  const vpasHeading = useRef<HTMLHeadingElement>(null);
  const eventsHeading = useRef<HTMLHeadingElement>(null);

  // Every page shown is loaded again: verdicts change with the intelligence, deliveries with the receiver.
  const refresh = () => Promise.all([onRefresh(), vpas.loaded.reload(), events.loaded.reload()]);
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void refresh();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [onRefresh, vpas.loaded.reload, events.loaded.reload]);

  return (
    <>
      <dl class="pairs">
        <dt>Id</dt>
        <dd>
          <code>{id}</code>
        </dd>
        <dt>Owner key</dt>
        <dd>
          <OwnerKey id={watchlist.owner} keys={keys} />
        </dd>
        <dt>Webhook URL</dt>
        <dd>
          <code>{watchlist.webhook_url}</code>
        </dd>
        <dt>Events for</dt>
        <dd>{describeFilters(watchlist.filters)}</dd>
        <dt>VPAs</dt>
        <dd>{formatNumber(watchlist.vpa_count)}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={watchlist.created_at} />
        </dd>
      </dl>
      <div class="button-row">
        <button type="button" onClick={() => void refresh()}>
          Refresh
        </button>
        <span class="muted">Refreshed every {REFRESH_MS / 1000} s.</span>
      </div>

      <section aria-labelledby="watched-title">
        <h2 id="watched-title" ref={vpasHeading} tabIndex={-1}>
          Watched VPAs
        </h2>
        <ErrorMessage message={vpas.loaded.error} />
        {vpas.loaded.data === null ? (
          vpas.loaded.loading ? <p role="status">Loading the VPAs…</p> : null
        ) : vpas.loaded.data.vpas.length === 0 ? (
          <p>No VPA is watched yet.</p>
        ) : (
          <>
            <p>
              Verdicts now, from data version <code>{vpas.loaded.data.data_version}</code>.
            </p>
            <BatchItemTable caption={`Watched VPAs, page ${vpas.number}`} class="watched" items={vpas.loaded.data.vpas} />
          </>
        )}
        <Pager pages={vpas} previousLabel="Previous page" nextLabel="Next page" focusOnTurn={vpasHeading} />
      </section>

      <section aria-labelledby="events-title">
        <h2 id="events-title" ref={eventsHeading} tabIndex={-1}>
          Events
        </h2>
        <p>
          One for each watched VPA whose status, risk category, cluster or confidence band changed, sent to the webhook until it answers 2xx.
        </p>
        <ErrorMessage message={events.loaded.error} />
        {events.loaded.data === null ? (
          events.loaded.loading ? <p role="status">Loading the events…</p> : null
        ) : events.loaded.data.events.length === 0 ? (
          <p>No event yet.</p>
        ) : (
          <WatchEventTable events={events.loaded.data.events} caption={`Events, newest first, page ${events.number}`} />
        )}
        <Pager pages={events} previousLabel="Newer events" nextLabel="Older events" focusOnTurn={eventsHeading} />
      </section>
    </>
  );
}

/** A watchlist's filters in words: which changes make events. */
function describeFilters(filters: AdminWatchlist['filters']): string {
  const parts: string[] = [];
  if (filters.statuses !== undefined) parts.push(`status ${filters.statuses.join(' or ')}`);
  if (filters.risk_categories !== undefined) parts.push(`risk category ${filters.risk_categories.join(', ')}`);
  return parts.length === 0 ? 'every change' : `changes to ${parts.join(' and ')} (after the change)`;
}
