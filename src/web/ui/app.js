// The dashboard's shell: the sign-in form, then a navigation and one page per SPEC.md feature, chosen
// by the URL's fragment (#/assets), so every page has an address and the server serves one file.
import { html, render, useEffect, useRef, useState } from './preact-htm.js';
import { ApiError, api, del, get, setSession } from './api.js';
import { ErrorNotice, Notice, useAction } from './components.js';
import { OverviewPage } from './page-overview.js';
import { AssetsPage } from './page-assets.js';
import { ApiKeysPage } from './page-api-keys.js';
import { StoragePage } from './page-storage.js';
import { UsagePage } from './page-usage.js';
import { ProjectsPage } from './page-projects.js';
import { DomainsPage } from './page-domains.js';

const PAGES = [
  { path: 'overview', label: 'Overview', view: OverviewPage },
  { path: 'assets', label: 'Assets', view: AssetsPage },
  { path: 'api-keys', label: 'API keys', view: ApiKeysPage },
  { path: 'storage', label: 'Buckets & keys', view: StoragePage },
  { path: 'usage', label: 'Usage & credits', view: UsagePage },
  { path: 'projects', label: 'Projects & proxy', view: ProjectsPage },
  { path: 'domains', label: 'Domains', view: DomainsPage },
];

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
  const navigated = useRef(false);
  useEffect(() => {
    const onHash = () => {
      navigated.current = true;
      setPath(currentPath());
      setMenuOpen(false);
    };
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  // After a navigation the new page's title takes focus (a screen reader announces it, Tab goes on
  // from there); it exists only once the new page has rendered, hence an effect, not the hash handler.
  useEffect(() => {
    if (navigated.current) document.getElementById('page-title')?.focus();
  }, [path]);
  const page = PAGES.find((p) => p.path === path);
  const View = page.view;
  document.title = `${page.label} · s3edge`;
  return html`<div class="shell">
    <header class="top">
      <a class="brand" href="#/overview">s3edge</a>
      <button type="button" class="menu-toggle" aria-expanded=${menuOpen} aria-controls="nav" onClick=${() => setMenuOpen(!menuOpen)}>Menu</button>
      <div class="who"><span class="user-name" data-testid="user-name">${user.name}</span><button type="button" onClick=${onSignOut}>Sign out</button></div>
    </header>
    <nav id="nav" class=${menuOpen ? 'side open' : 'side'} aria-label="Sections">
      <ul>${PAGES.map((p) => html`<li><a href=${`#/${p.path}`} aria-current=${p.path === path ? 'page' : undefined}>${p.label}</a></li>`)}</ul>
    </nav>
    <main class="content"><${View} key=${path} session=${session} /></main>
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
    get('/dashboard/session').then(signedIn, (err) => signedOut(err instanceof ApiError && err.status === 401 ? null : err.message));
  }, []);
  const signOut = async () => {
    try {
      await del('/dashboard/session');
    } finally {
      signedOut('You are signed out.');
    }
  };
  if (state.checking) return html`<p class="muted boot" role="status">Loading…</p>`;
  if (!state.session) return html`<${SignIn} onSignedIn=${signedIn} notice=${state.notice} />`;
  return html`<${Shell} session=${state.session} onSignOut=${signOut} />`;
}

render(html`<${App} />`, document.getElementById('root'));
