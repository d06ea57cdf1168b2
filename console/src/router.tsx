/**
 * History routing under /console/: the server answers index.html for every
 * path there that is not an asset, so a deep link (a cluster, a VPA to
 * screen) loads the app, which draws the page the path names.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console/';

export type Route =
  | { readonly page: 'keys' }
  | { readonly page: 'screen'; readonly upi: string | null }
  | { readonly page: 'clusters' }
  | { readonly page: 'cluster'; readonly clusterId: string }
  | { readonly page: 'intelligence' }
  | { readonly page: 'watchlists' }
  | { readonly page: 'watchlist'; readonly watchlistId: string }
  | { readonly page: 'disputes' }
  | { readonly page: 'dispute'; readonly disputeId: string }
  | { readonly page: 'reports' }
  | { readonly page: 'not-found' };

export function parseRoute(pathname: string, search: string): Route {
  const path = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname.replace(/^\/console\/?/, '');
  const parts = path.split('/').filter((part) => part !== '');
  const [first, second] = parts;
  if (first === undefined || (first === 'keys' && parts.length === 1)) return { page: 'keys' };
  if (first === 'screen' && parts.length === 1) return { page: 'screen', upi: new URLSearchParams(search).get('upi') };
  if (first === 'clusters' && parts.length === 1) return { page: 'clusters' };
  if (first === 'clusters' && second !== undefined && parts.length === 2) return { page: 'cluster', clusterId: decodeURIComponent(second) };
  if (first === 'intelligence' && parts.length === 1) return { page: 'intelligence' };
  if (first === 'watchlists' && parts.length === 1) return { page: 'watchlists' };
  if (first === 'watchlists' && second !== undefined && parts.length === 2) return { page: 'watchlist', watchlistId: decodeURIComponent(second) };
  if (first === 'disputes' && parts.length === 1) return { page: 'disputes' };
  if (first === 'disputes' && second !== undefined && parts.length === 2) return { page: 'dispute', disputeId: decodeURIComponent(second) };
  if (first === 'reports' && parts.length === 1) return { page: 'reports' };
  return { page: 'not-found' };
}

export function screenPath(upi: string): string {
  return `${BASE}screen?upi=${encodeURIComponent(upi)}`;
}

export function clusterPath(clusterId: string): string {
  return `${BASE}clusters/${encodeURIComponent(clusterId)}`;
}

export function watchlistPath(watchlistId: string): string {
  return `${BASE}watchlists/${encodeURIComponent(watchlistId)}`;
}

export function disputePath(disputeId: string): string {
  return `${BASE}disputes/${encodeURIComponent(disputeId)}`;
}

const NAVIGATED = 'console:navigated';

/** Go to `href` (a path under /console/) without reloading. */
export function navigate(href: string, options: { replace?: boolean } = {}): void {
  if (options.replace === true) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  window.dispatchEvent(new Event(NAVIGATED));
}

/** The current route, redrawn on navigation and on the browser's back and forward. */
export function useRoute(): Route {
  const read = () => parseRoute(location.pathname, location.search);
  const [route, setRoute] = useState<Route>(read);
  useEffect(() => {
    const update = () => setRoute(read());
    window.addEventListener('popstate', update);
    window.addEventListener(NAVIGATED, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(NAVIGATED, update);
    };
  }, []);
  return route;
}

interface LinkProps {
  readonly href: string;
  readonly children: ComponentChildren;
  readonly 'aria-current'?: 'page' | undefined;
}

/** An ordinary link (open in a new tab works) that navigates in place on a plain click. */
export function Link({ href, children, 'aria-current': current }: LinkProps) {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || event.defaultPrevented) return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} aria-current={current} onClick={onClick}>
      {children}
    </a>
  );
}
