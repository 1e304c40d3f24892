// The dashboard's shell: the sign-in form, then a navigation and one page per SPEC.md feature, chosen
// by the URL's fragment (#/assets), so every page has an address and the server serves one file.
import { html, render, useEffect, useRef, useState } from './preact-htm.js';
import { ApiError, api, del, get, prefetch, setSession } from './api.js';
import { ErrorNotice, Notice, Skeleton, focusTitleOnNextPage, useAction } from './components.js';

// Each page is its own module, loaded when first shown (the overview's while the session is checked).
const PAGES = [
  { path: 'overview', label: 'Overview', load: () => import('./page-overview.js').then((m) => m.OverviewPage) },
  { path: 'assets', label: 'Assets', load: () => import('./page-assets.js').then((m) => m.AssetsPage) },
  { path: 'api-keys', label: 'API keys', load: () => import('./page-api-keys.js').then((m) => m.ApiKeysPage) },
  { path: 'storage', label: 'Buckets & keys', load: () => import('./page-storage.js').then((m) => m.StoragePage) },
  { path: 'objects', label: 'Objects', load: () => import('./page-objects.js').then((m) => m.ObjectsPage) },
  { path: 'usage', label: 'Usage & credits', load: () => import('./page-usage.js').then((m) => m.UsagePage) },
  { path: 'projects', label: 'Projects & proxy', load: () => import('./page-projects.js').then((m) => m.ProjectsPage) },
  { path: 'security', label: 'Security events', load: () => import('./page-security.js').then((m) => m.SecurityPage) },
  { path: 'domains', label: 'Domains', load: () => import('./page-domains.js').then((m) => m.DomainsPage) },
  { path: 'api', label: 'API reference', load: () => import('./page-api.js').then((m) => m.ApiReferencePage) },
];
/** The data each page asks for first, fetched beside the session check when the dashboard opens on it. */
const FIRST_CALL = { overview: '/api/v3/cdn/summary' };

const views = new Map();
/** The page's component once its module is loaded (loading it on first use); null until then. */
function usePageView(page) {
  const [, setLoaded] = useState(0);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (views.has(page.path)) return undefined;
    let live = true;
    setError(null);
    page.load().then(
      (view) => {
        views.set(page.path, view);
        if (live) setLoaded((n) => n + 1);
      },
      (err) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [page.path]);
  return { View: views.get(page.path) ?? null, error };
}

function currentPath() {
  const path = location.hash.replace(/^#\/?/, '').split('?')[0];
  return PAGES.some((p) => p.path === path) ? path : 'overview';
}

function SignIn({ onSignedIn, notice }) {
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, onSubmit } = useAction(async () => {
    const session = await api('POST', '/dashboard/session', { name, password });
    setPassword('');
    onSignedIn(session);
  });
  return html`<main class="sign-in">
    <form class="card" onSubmit=${onSubmit} aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">s3edge</h1>
      <p class="muted">Sign in to your account.</p>
      ${notice ? html`<${Notice}>${notice}<//>` : null}
      <${ErrorNotice} error=${error} />
      <label>User name<input name="name" autocomplete="username" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <label>Password<input name="password" type="password" autocomplete="current-password" required value=${password} onInput=${(e) => setPassword(e.target.value)} /></label>
      <button type="submit" class="primary" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
    </form>
  </main>`;
}

function Shell({ session, onSignOut }) {
  const { user } = session;
  const [path, setPath] = useState(currentPath());
  const [menuOpen, setMenuOpen] = useState(false);
  const shown = useRef(path);
  useEffect(() => {
    const onHash = () => {
      const next = currentPath();
      // The new page's title takes the focus once it has rendered (a screen reader announces it, Tab
      // goes on from there).
      if (next !== shown.current) focusTitleOnNextPage();
      shown.current = next;
      setPath(next);
      setMenuOpen(false);
    };
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  const page = PAGES.find((p) => p.path === path);
  const { View, error } = usePageView(page);
  document.title = `${page.label} · s3edge`;
  return html`<div class="shell">
    <a class="skip-link" href="#main">Skip to content</a>
    <header class="top">
      <a class="brand" href="#/overview">s3edge</a>
      <button type="button" class="menu-toggle" aria-expanded=${menuOpen} aria-controls="nav" onClick=${() => setMenuOpen(!menuOpen)}>Menu</button>
      <div class="who"><span class="user-name" data-testid="user-name">${user.name}</span><button type="button" onClick=${onSignOut}>Sign out</button></div>
    </header>
    <nav id="nav" class=${menuOpen ? 'side open' : 'side'} aria-label="Sections">
      <ul>${PAGES.map((p) => html`<li><a href=${`#/${p.path}`} aria-current=${p.path === path ? 'page' : undefined}>${p.label}</a></li>`)}</ul>
    </nav>
    <main class="content" id="main" tabindex="-1">${error
      ? html`<${Notice} tone="error">The ${page.label} page could not be loaded (${error.message}): the dashboard may have been updated. <button type="button" class="small" onClick=${() => location.reload()}>Reload the dashboard</button><//>`
      : View ? html`<${View} key=${path} session=${session} />` : html`<${Skeleton} label=${`Loading ${page.label}`} />`}</main>
  </div>`;
}

function App() {
  const [state, setState] = useState({ checking: true, session: null, notice: null });
  const signedOut = (notice) => {
    setSession('');
    setState({ checking: false, session: null, notice });
  };
  const signedIn = (session) => {
    setSession(session.csrfToken, () => signedOut('Your session ended; sign in again.'));
    setState({ checking: false, session, notice: null });
  };
  useEffect(() => {
    // The first page's module and its first call start now, beside the session check, not after it.
    const first = PAGES.find((p) => p.path === currentPath());
    if (FIRST_CALL[first.path]) prefetch(FIRST_CALL[first.path]);
    first.load().catch(() => undefined);
    get('/dashboard/session').then(signedIn, (err) => signedOut(err instanceof ApiError && err.status === 401 ? null : err.message));
  }, []);
  const signOut = async () => {
    try {
      await del('/dashboard/session');
    } finally {
      signedOut('You are signed out.');
    }
  };
  if (state.checking) return html`<div class="boot"><${Skeleton} label="Opening the dashboard" /></div>`;
  if (!state.session) return html`<${SignIn} onSignedIn=${signedIn} notice=${state.notice} />`;
  return html`<${Shell} session=${state.session} onSignOut=${signOut} />`;
}

render(html`<${App} />`, document.getElementById('root'));
