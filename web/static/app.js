// app.js: the dashboard's entry point. Builds the page shell (header, nav,
// inbox badge, loading bar), declares the routes and renders pages into
// <main>. Each page module exports render(ctx) with ctx = {root, params,
// query, url, signal}; signal aborts when the user navigates away, so a slow
// answer never paints over the next page.

import * as api from './api.js';
import * as session from './session.js';
import * as store from './store.js';
import * as badge from './badge.js';
import * as router from './router.js';
import { h, problemBox, toast } from './ui.js';

import * as loginPage from './pages/login.js';
import * as signupPage from './pages/signup.js';
import * as switchPage from './pages/switch-account.js';
import * as mcpsPage from './pages/mcps.js';
import * as overviewPage from './pages/overview.js';
import * as toolsPage from './pages/tools.js';
import * as toolPage from './pages/tool.js';
import * as probesPage from './pages/probes.js';
import * as releasesPage from './pages/releases.js';
import * as insightsPage from './pages/insights.js';
import * as sessionsPage from './pages/sessions.js';
import * as timelinePage from './pages/timeline.js';
import * as rulesPage from './pages/rules.js';
import * as ruleFormPage from './pages/rule-form.js';
import * as slosPage from './pages/slos.js';
import * as setupPage from './pages/setup.js';
import * as channelsPage from './pages/channels.js';
import * as inboxPage from './pages/inbox.js';
import * as deliveriesPage from './pages/deliveries.js';
import * as membersPage from './pages/members.js';
import * as usagePage from './pages/usage.js';
import * as settingsPage from './pages/settings.js';
import * as notFoundPage from './pages/not-found.js';
import * as verifyPage from './pages/verify.js';

const home = {
  render() {
    const last = session.lastMcp();
    router.navigate(last ? `/mcps/${router.seg(last)}/overview` : '/mcps', { replace: true });
  },
};

const routes = [
  { path: '/', page: home },
  { path: '/login', page: loginPage, public: true },
  { path: '/signup', page: signupPage, public: true },
  { path: '/verify', page: verifyPage, public: true },
  { path: '/switch-account', page: switchPage },
  { path: '/mcps', page: mcpsPage },
  { path: '/mcps/:id', page: { render: ({ params, url }) => router.navigate(`/mcps/${router.seg(params.id)}/overview${url.search}`, { replace: true }) } },
  { path: '/mcps/:id/overview', page: overviewPage },
  { path: '/mcps/:id/tools', page: toolsPage },
  { path: '/mcps/:id/tools/:name', page: toolPage },
  { path: '/mcps/:id/probes', page: probesPage },
  { path: '/mcps/:id/releases', page: releasesPage },
  { path: '/mcps/:id/insights', page: insightsPage },
  { path: '/mcps/:id/sessions', page: sessionsPage },
  { path: '/mcps/:id/sessions/:sessionId', page: timelinePage },
  { path: '/mcps/:id/alerts', page: rulesPage },
  { path: '/mcps/:id/alerts/new', page: ruleFormPage },
  { path: '/mcps/:id/alerts/:ruleId', page: ruleFormPage },
  { path: '/mcps/:id/slos', page: slosPage },
  { path: '/mcps/:id/slos/:sloId', page: slosPage },
  { path: '/mcps/:id/setup', page: setupPage },
  { path: '/channels', page: channelsPage },
  { path: '/inbox', page: inboxPage },
  { path: '/deliveries', page: deliveriesPage },
  { path: '/members', page: membersPage },
  { path: '/usage', page: usagePage },
  { path: '/settings', page: settingsPage },
];

// ---------------------------------------------------------------- shell

const NAV = [
  { path: '/mcps', label: 'MCPs', testid: 'nav-mcps' },
  { path: '/channels', label: 'Channels', testid: 'nav-channels' },
  { path: '/deliveries', label: 'Deliveries', testid: 'nav-deliveries' },
  { path: '/members', label: 'Members', testid: 'nav-members' },
  { path: '/usage', label: 'Usage', testid: 'nav-usage' },
  { path: '/settings', label: 'Settings', testid: 'nav-settings' },
];

function buildShell() {
  const loadingBar = h('div', { class: 'loading-bar', testid: 'loading', role: 'progressbar', 'aria-label': 'Loading', hidden: true });
  const navLinks = NAV.map((n) => h('a', { href: router.href(n.path), testid: n.testid, dataset: { path: n.path } }, n.label));
  const accountName = h('span', { class: 'account-name', testid: 'account-name' });
  const userEmail = h('span', { class: 'user-email', testid: 'user-email' });
  const logout = h('button', { type: 'button', class: 'btn btn-small', testid: 'logout-button' }, 'Log out');
  const nav = h('nav', { id: 'nav', class: 'nav', 'aria-label': 'Main' },
    h('div', { class: 'nav-links' }, navLinks),
    h('div', { class: 'nav-account' },
      h('div', { class: 'who' }, accountName, userEmail),
      h('a', { href: router.href('/switch-account'), class: 'btn btn-small btn-ghost', testid: 'nav-switch-account' }, 'Switch account'),
      logout));
  const count = h('span', { class: 'count', testid: 'inbox-badge', hidden: true, dataset: { count: '0' } }, '0');
  const inbox = h('a', { href: router.href('/inbox'), class: 'inbox-link', testid: 'nav-inbox', dataset: { path: '/inbox' } },
    bellIcon(), h('span', { class: 'inbox-text' }, 'Inbox'), count);
  const toggle = h('button', { type: 'button', class: 'nav-toggle', testid: 'nav-toggle', 'aria-expanded': 'false', 'aria-controls': 'nav' },
    h('span', { class: 'burger', 'aria-hidden': 'true' }), h('span', { class: 'sr-only' }, 'Menu'));
  const header = h('header', { class: 'topbar' },
    h('a', { href: router.href('/'), class: 'brand', testid: 'nav-home' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'MCPScope'),
    nav, h('div', { class: 'topbar-right' }, inbox, toggle));
  const main = h('main', { id: 'main', tabindex: '-1' });
  const app = document.getElementById('app');
  app.replaceChildren(h('a', { class: 'skip-link', href: '#main' }, 'Skip to content'), loadingBar, header, main);

  const setNav = (open) => {
    document.body.classList.toggle('nav-open', open);
    toggle.setAttribute('aria-expanded', String(open));
  };
  toggle.addEventListener('click', () => setNav(!document.body.classList.contains('nav-open')));
  logout.addEventListener('click', () => signOut(logout));

  api.onLoadingChange((busy) => { loadingBar.hidden = !busy; });
  badge.init(count);
  store.onAccount((a) => { accountName.textContent = a.name || ''; });

  return {
    main,
    closeNav: () => setNav(false),
    update(pathname) {
      const s = session.current();
      document.body.classList.toggle('signed-in', !!s);
      document.body.classList.toggle('signed-out', !s);
      accountName.textContent = s?.account?.name || '';
      userEmail.textContent = s?.user?.email || '';
      const rel = pathname.slice(router.BASE.length) || '/';
      for (const a of [...navLinks, inbox]) {
        const p = a.dataset.path;
        const active = rel === p || rel.startsWith(`${p}/`) || (p === '/mcps' && rel === '/');
        if (active) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
      }
    },
  };
}

// Drawn inline: emoji fonts are not everywhere and external images are out.
function bellIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', 'bell');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', 'M6 8a6 6 0 1 1 12 0c0 7 3 9 3 9H3s3-2 3-9M10.3 21a1.94 1.94 0 0 0 3.4 0');
  svg.append(path);
  return svg;
}

async function signOut(button) {
  button.disabled = true;
  try {
    await api.post('/v1/auth/logout', undefined, { expire: false });
  } catch {
    // The token is forgotten locally either way; a failed revoke only means
    // it stays valid until it expires.
  } finally {
    button.disabled = false;
  }
  session.clear();
  store.reset();
  badge.set(0);
  router.navigate('/login', { replace: true });
}

// ---------------------------------------------------------------- routing

const shell = buildShell();
let controller = null;

async function onRoute(match, url, info) {
  controller?.abort();
  controller = new AbortController();
  const { signal } = controller;
  shell.closeNav();

  const signedIn = !!session.token();
  if (match && !match.route.public && !signedIn) {
    router.navigate(router.href('/login', { next: url.pathname + url.search }), { replace: true });
    return;
  }
  shell.update(url.pathname);
  if (signedIn) {
    store.account().catch(() => {});
    if (info.initial) badge.refresh();
  }

  const root = h('div', { class: 'page' });
  shell.main.replaceChildren(root);
  if (!info.initial && !info.pop) {
    window.scrollTo(0, 0);
    shell.main.focus({ preventScroll: true });
  }
  const page = match ? match.route.page : notFoundPage;
  try {
    await page.render({ root, params: match?.params || {}, query: url.searchParams, url, signal });
  } catch (err) {
    if (signal.aborted || api.isAbort(err)) return;
    root.replaceChildren(problemBox(err));
  }
}

api.onUnauthorized(() => {
  store.reset();
  badge.set(0);
  const here = window.location.pathname + window.location.search;
  if (window.location.pathname.startsWith(`${router.BASE}/login`)) return;
  router.navigate(router.href('/login', { next: router.safeNext(here), expired: '1' }), { replace: true });
});

session.onExternalChange(() => {
  store.reset();
  badge.refresh();
  router.reload();
});

// Never leave a blank page: anything unexpected is at least said out loud.
window.addEventListener('unhandledrejection', (e) => {
  if (api.isAbort(e.reason)) return;
  toast(e.reason?.detail || e.reason?.message || 'Something went wrong.', 'error');
});
window.addEventListener('error', (e) => {
  if (e.error) toast(e.error.message || 'Something went wrong.', 'error');
});

window.__mcpscopeStarted = true;
router.start(routes, onRoute);
