// app.tsx — the shell: session bootstrap, the route table, the header with navigation,
// the live-update indicator and the user, and the banners for a database that is down
// or a server that cannot be reached.
import type {ComponentChildren} from 'preact';
import {useEffect, useRef, useState} from 'preact/hooks';
import {apiHealth, describeError} from './lib/api';
import {liveStatus, startLive, stopLive} from './lib/events';
import {installRouter, match, navigate, useLocation} from './lib/router';
import {resume, session, signOut} from './lib/session';
import {useStore} from './lib/store';
import {Toasts} from './components/ui';
import {SearchBox} from './components/search';
import {SignIn} from './pages/SignIn';
import {Dashboard} from './pages/Dashboard';
import {ProxiesPage} from './pages/Proxies';
import {ProxyPage} from './pages/Proxy';
import {ConfigsPage} from './pages/Configs';
import {ConfigEditorPage} from './pages/ConfigEditor';
import {ConfigHistoryPage} from './pages/ConfigHistory';
import {ApplyPage} from './pages/Apply';
import {DeploymentsPage} from './pages/Deployments';
import {DeploymentPage} from './pages/Deployment';
import {SnapshotsPage} from './pages/Snapshots';
import {AuditPage} from './pages/Audit';
import {FleetPage} from './pages/Fleet';
import {MetricsPage} from './pages/Metrics';
import {AlertsPage} from './pages/Alerts';
import {AlertsBadge} from './components/alertsBadge';

type Page = (p: {params: Record<string, string>}) => ComponentChildren;

const ROUTES: [string, Page][] = [
  ['/', () => <Dashboard />],
  ['/proxies', () => <ProxiesPage />],
  ['/proxies/:id', ({params}) => <ProxyPage id={params.id} />],
  ['/configs', () => <ConfigsPage />],
  ['/configs/new', () => <ConfigEditorPage id={null} />],
  ['/configs/:id', ({params}) => <ConfigEditorPage id={params.id} />],
  ['/configs/:id/history', ({params}) => <ConfigHistoryPage id={params.id} />],
  ['/configs/:id/apply', ({params}) => <ApplyPage id={params.id} />],
  ['/deployments', () => <DeploymentsPage />],
  ['/deployments/:id', ({params}) => <DeploymentPage id={params.id} />],
  ['/snapshots', () => <SnapshotsPage group={null} />],
  ['/snapshots/:group', ({params}) => <SnapshotsPage group={params.group} />],
  ['/audit', () => <AuditPage />],
  ['/fleet', () => <FleetPage />],
  ['/stats', () => <MetricsPage />],
];

const NAV: [string, string][] = [
  ['/', 'Dashboard'],
  ['/proxies', 'Proxies'],
  ['/configs', 'Configs'],
  ['/deployments', 'Deployments'],
  ['/snapshots', 'Snapshots'],
  ['/audit', 'Audit'],
  ['/fleet', 'Fleet'],
  ['/stats', 'Metrics'],
];

// Sextant's own alerts: their page, in the navigation, and the header's firing count.
ROUTES.push(['/alerts', () => <AlertsPage />]);
NAV.push(['/alerts', 'Alerts']);

function LiveIndicator() {
  const s = useStore(liveStatus);
  const label = s.mode === 'live' ? 'Live' : s.mode === 'polling' ? 'Polling' : s.mode === 'connecting' ? 'Connecting' : 'Off';
  return (
    <span class={`live live-${s.mode}`} title={s.detail || label} data-testid="live-status">
      <span class="live-dot" aria-hidden="true" />
      {label}
    </span>
  );
}

function Banners() {
  const h = useStore(apiHealth);
  if (h.unreachable)
    return (
      <div class="banner banner-bad" role="alert">
        Sextant is not reachable ({h.unreachable}). Pages retry by themselves.
      </div>
    );
  if (h.unavailable)
    return (
      <div class="banner banner-warn" role="alert">
        Sextant cannot reach its database ({h.unavailable}): reads and changes fail until it is back; pages retry by
        themselves.
      </div>
    );
  return null;
}

function Shell({children}: {children: ComponentChildren}) {
  const {path} = useLocation();
  const me = useStore(session).me;
  // After a navigation inside the app, the keyboard and screen reader go to the new
  // content (as a page load would put them at its top), not stay on the clicked link.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById('main')?.focus({preventScroll: true});
  }, [path]);
  const active = (href: string) => (href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`));
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/">
          Sextant
        </a>
        <nav aria-label="Main" class="nav">
          {NAV.map(([href, label]) => (
            <a key={href} href={href} class={active(href) ? 'nav-link active' : 'nav-link'} aria-current={active(href) ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <SearchBox />
        <div class="top-right">
          <AlertsBadge />
          <LiveIndicator />
          {me && (
            <span class="who" data-testid="who">
              <span class="who-user">{me.user}</span> <span class="badge badge-neutral">{me.role}</span>
            </span>
          )}
          <button
            type="button"
            class="btn btn-ghost"
            onClick={() => {
              signOut();
              navigate('/sign-in', {force: true});
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <Banners />
      <main id="main" class="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

export function App() {
  const {path, search} = useLocation();
  const sess = useStore(session);
  const [boot, setBoot] = useState<'pending' | 'ready' | {error: string}>('pending');

  useEffect(() => {
    installRouter();
    resume()
      .then(() => setBoot('ready'))
      .catch((e) => setBoot({error: describeError(e)}));
  }, []);

  // Live updates run while someone is signed in.
  useEffect(() => {
    if (sess.me) startLive(() => session.set({me: null, ended: 'your session ended (401 on the event stream)'}));
    else stopLive();
  }, [sess.me]);

  // Signed out (or a 401 anywhere): to sign-in, remembering where we were.
  useEffect(() => {
    if (boot !== 'ready') return;
    if (!sess.me && path !== '/sign-in') navigate(`/sign-in?next=${encodeURIComponent(path + search)}`, {replace: true, force: true});
    if (sess.me && path === '/sign-in') {
      const next = new URLSearchParams(search).get('next');
      navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/', {replace: true, force: true});
    }
  }, [boot, sess.me, path]);

  if (boot === 'pending') return <div class="boot">Loading…</div>;
  if (typeof boot === 'object')
    return (
      <div class="boot" role="alert">
        <p>Could not start: {boot.error}</p>
        <button type="button" class="btn" onClick={() => window.location.reload()}>
          Reload
        </button>
      </div>
    );
  if (!sess.me || path === '/sign-in')
    return (
      <>
        <SignIn ended={sess.ended} />
        <Toasts />
      </>
    );

  let page: ComponentChildren = null;
  for (const [pattern, render] of ROUTES) {
    const params = match(pattern, path);
    if (params) {
      page = <div key={path}>{render({params})}</div>;
      break;
    }
  }
  return (
    <Shell>
      {page ?? (
        <div class="empty">
          <p class="empty-title">No such page</p>
          <p>
            <a href="/">Back to the dashboard</a>
          </p>
        </div>
      )}
      <Toasts />
    </Shell>
  );
}
