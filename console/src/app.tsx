/**
 * The console's shell: the session (asked for on load, ended by sign-out or
 * by any 401), the navigation, and the page the path names.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { describeError, onUnauthorized, resumeSession, signOut } from './api/client.js';
import type { Session } from './api/types.js';
import { ErrorMessage } from './components/error-message.js';
import { PageHeading } from './components/page-heading.js';
import { BASE, Link, useRoute, type Route } from './router.js';
import { SignInPage } from './pages/sign-in.js';
import { KeysPage } from './pages/keys.js';
import { ScreenPage } from './pages/screen.js';
import { ClustersPage } from './pages/clusters.js';
import { ClusterPage } from './pages/cluster.js';
import { IntelligencePage } from './pages/intelligence.js';
import { WatchlistsPage } from './pages/watchlists.js';
import { WatchlistPage } from './pages/watchlist.js';
import { DisputesPage } from './pages/disputes.js';
import { DisputePage } from './pages/dispute.js';
import { ReportsPage } from './pages/reports.js';

type SessionState =
  | { readonly kind: 'checking' }
  | { readonly kind: 'signed-out'; readonly notice: string | null }
  | { readonly kind: 'signed-in'; readonly session: Session; readonly justSignedIn: boolean }
  | { readonly kind: 'unreachable'; readonly error: string };

const NAV: readonly { readonly href: string; readonly label: string; readonly pages: readonly Route['page'][] }[] = [
  { href: `${BASE}keys`, label: 'Keys', pages: ['keys'] },
  { href: `${BASE}screen`, label: 'Screen', pages: ['screen'] },
  { href: `${BASE}clusters`, label: 'Clusters', pages: ['clusters', 'cluster'] },
  { href: `${BASE}intelligence`, label: 'Intelligence', pages: ['intelligence'] },
  { href: `${BASE}watchlists`, label: 'Watchlists', pages: ['watchlists', 'watchlist'] },
  { href: `${BASE}disputes`, label: 'Disputes', pages: ['disputes', 'dispute'] },
  { href: `${BASE}reports`, label: 'Reports', pages: ['reports'] },
];

export function App() {
  const [state, setState] = useState<SessionState>({ kind: 'checking' });

  useEffect(() => {
    onUnauthorized(() => setState({ kind: 'signed-out', notice: 'Your session has ended. Sign in again.' }));
    resumeSession().then(
      (session) => setState(session === null ? { kind: 'signed-out', notice: null } : { kind: 'signed-in', session, justSignedIn: false }),
      (error: unknown) => setState({ kind: 'unreachable', error: describeError(error) }),
    );
  }, []);

  switch (state.kind) {
    case 'checking':
      return (
        <main class="narrow" aria-busy="true">
          <p role="status">Loading…</p>
        </main>
      );
    case 'unreachable':
      return (
        <main class="narrow">
          <h1>upi-risk console</h1>
          <ErrorMessage message={state.error} />
          <button type="button" onClick={() => location.reload()}>
            Try again
          </button>
        </main>
      );
    case 'signed-out':
      return <SignInPage notice={state.notice} onSignedIn={(session) => setState({ kind: 'signed-in', session, justSignedIn: true })} />;
    case 'signed-in':
      return <SignedIn session={state.session} justSignedIn={state.justSignedIn} onSignedOut={() => setState({ kind: 'signed-out', notice: 'Signed out.' })} />;
  }
}

interface SignedInProps {
  readonly session: Session;
  /** Arrived from the sign-in form, whose button is gone: focus goes to the page's heading as after a navigation. */
  readonly justSignedIn: boolean;
  readonly onSignedOut: () => void;
}

function SignedIn({ session, justSignedIn, onSignedOut }: SignedInProps) {
  const route = useRoute();
  const [signOutError, setSignOutError] = useState<string | null>(null);
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);

  // After a navigation or a sign-in, focus goes to the page's heading, so a
  // screen reader starts there (in the commit that shows the page); on a load
  // it stays where the browser put it.
  useLayoutEffect(() => {
    if (first.current) {
      first.current = false;
      if (!justSignedIn) return;
    }
    main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [route]);

  const onSignOut = () => {
    setSignOutError(null);
    signOut().then(onSignedOut, (error: unknown) => setSignOutError(describeError(error)));
  };

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">upi-risk console</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((item) => (
              <li key={item.href}>
                <Link href={item.href} aria-current={item.pages.includes(route.page) ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">
          Signed in as <strong>{session.key.name}</strong>
        </span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <ErrorMessage message={signOutError} />
      <main id="main" ref={main} tabIndex={-1}>
        <Page route={route} session={session} />
      </main>
    </>
  );
}

function Page({ route, session }: { readonly route: Route; readonly session: Session }) {
  switch (route.page) {
    case 'keys':
      return <KeysPage session={session} />;
    case 'screen':
      return <ScreenPage upi={route.upi} />;
    case 'clusters':
      return <ClustersPage />;
    case 'cluster':
      return <ClusterPage clusterId={route.clusterId} />;
    case 'intelligence':
      return <IntelligencePage session={session} />;
    case 'watchlists':
      return <WatchlistsPage />;
    case 'watchlist':
      // Keyed, so another watchlist starts again on its first pages.
      return <WatchlistPage key={route.watchlistId} watchlistId={route.watchlistId} />;
    case 'disputes':
      return <DisputesPage />;
    case 'dispute':
      // Keyed, so another dispute starts with an empty note and nothing chosen.
      return <DisputePage key={route.disputeId} disputeId={route.disputeId} />;
    case 'reports':
      return <ReportsPage />;
    case 'not-found':
      return (
        <>
          <PageHeading title="Not found" />
          <p>
            No console page is at this address. <Link href={`${BASE}keys`}>Go to Keys</Link>.
          </p>
        </>
      );
  }
}
