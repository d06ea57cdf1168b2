/**
 * A watchlist's events, newest first: when, which VPA, its verdict before →
 * after (status and band, risk category, cluster) and how its delivery
 * stands. Each row's Attempts button (`aria-expanded`) shows or hides the
 * row of its delivery attempts beneath.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { BAND_LABELS, confidenceBand } from '../../../src/api/advice.js';
import type { BatchItem, DeliveryAttempt, WatchEvent } from '../api/types.js';
import { formatMilliseconds, formatNumber } from '../format.js';
import { Link, screenPath } from '../router.js';
import { Table, numeric } from './table.js';
import { Time } from './time.js';
import { ClusterLink, StatusBadge } from './verdict-cells.js';

const COLUMNS = ['Time', 'VPA', 'Status', 'Risk category', 'Cluster', 'Delivery', numeric('Attempts'), 'Next attempt', 'Details'];

export function WatchEventTable({ events, caption }: { readonly events: readonly WatchEvent[]; readonly caption: string }) {
  // Ids of the events whose attempts are shown; kept across refreshes.
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((shown) => {
      const next = new Set(shown);
      if (!next.delete(id)) next.add(id);
      return next;
    });

  return (
    <Table caption={caption} class="events" columns={COLUMNS}>
      {events.map((event) => {
        const rowId = `event-${event.id}`;
        const attemptsId = `attempts-${event.id}`;
        const expanded = open.has(event.id);
        const { before, after, delivery } = event;
        return [
          <tr key={event.id}>
            <td>
              <Time iso={event.occurred_at} />
            </td>
            <th scope="row" id={rowId} class="vpa">
              <Link href={screenPath(event.upi)}>{event.upi}</Link>
            </th>
            <td>
              <Change changed={statusText(before) !== statusText(after)} before={<Status item={before} />} after={<Status item={after} />} />
            </td>
            <td>
              <Change changed={before.risk_category !== after.risk_category} before={before.risk_category ?? '—'} after={after.risk_category ?? '—'} />
            </td>
            <td>
              <Change
                changed={before.cluster_id !== after.cluster_id}
                before={<ClusterLink clusterId={before.cluster_id} />}
                after={<ClusterLink clusterId={after.cluster_id} />}
              />
            </td>
            <td>
              <span class={`badge delivery-${delivery.state}`}>{delivery.state}</span>
            </td>
            <td class="num">{formatNumber(delivery.attempts.length)}</td>
            <td>
              <Time iso={delivery.next_attempt_at} />
            </td>
            <td>
              <button type="button" class="secondary" aria-expanded={expanded} aria-controls={attemptsId} aria-describedby={rowId} onClick={() => toggle(event.id)}>
                Attempts
              </button>
            </td>
          </tr>,
          <tr key={attemptsId} id={attemptsId} class="attempts" hidden={!expanded}>
            <td colSpan={COLUMNS.length}>{expanded ? <AttemptTable event={event} /> : null}</td>
          </tr>,
        ];
      })}
    </Table>
  );
}

/** A verdict's status, with the advice band of a FLAGGED one (a change of band alone makes an event). */
function statusText(item: BatchItem): string {
  return item.status === 'FLAGGED' ? `FLAGGED ${BAND_LABELS[confidenceBand(item.status, item.confidence)]}` : item.status;
}

function Status({ item }: { readonly item: BatchItem }) {
  return (
    <>
      <StatusBadge status={item.status} />
      {item.status === 'FLAGGED' ? ` ${BAND_LABELS[confidenceBand(item.status, item.confidence)]}` : null}
    </>
  );
}

/** before → after where the event changed it, else the value it kept. */
function Change({ changed, before, after }: { readonly changed: boolean; readonly before: ComponentChildren; readonly after: ComponentChildren }) {
  if (!changed) return <>{after}</>;
  return (
    <span class="change">
      {before}
      <span aria-hidden="true"> → </span>
      <span class="sr-only"> to </span>
      {after}
    </span>
  );
}

function AttemptTable({ event }: { readonly event: WatchEvent }) {
  const attempts: readonly DeliveryAttempt[] = event.delivery.attempts;
  if (attempts.length === 0) return <p>No delivery attempt yet.</p>;
  return (
    <Table caption={`Delivery attempts for ${event.upi}, oldest first (the last 20 are kept)`} class="attempt-list" columns={['At', numeric('HTTP status'), 'Error', numeric('Duration')]}>
      {attempts.map((attempt, index) => (
        <tr key={`${attempt.at}-${index}`} class={attempt.error === null ? undefined : 'failed'}>
          <td>
            <Time iso={attempt.at} />
          </td>
          <td class="num">{attempt.status ?? 'no answer'}</td>
          <td>{attempt.error ?? ''}</td>
          <td class="num">{formatMilliseconds(attempt.duration_ms)}</td>
        </tr>
      ))}
    </Table>
  );
}
