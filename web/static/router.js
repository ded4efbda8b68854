// router.js: history-API routing under /app/.
//
// The Go handler answers every /app/... path that is not a file with
// index.html, so any URL the router produces can be reloaded or shared.
// Routes are patterns such as '/mcps/:id/tools/:name'; each parameter is one
// percent-decoded path segment (a tool named "a/b" travels as "a%2Fb").

export const BASE = '/app';

let routes = [];
let onRoute = () => {};

/**
 * start installs the routes and the render callback, then renders the
 * current URL. onRouteFn(match, url) gets match = {route, params} or null.
 */
export function start(routeList, onRouteFn) {
  routes = routeList.map((r) => ({ ...r, parts: r.path.split('/').filter(Boolean) }));
  onRoute = onRouteFn;
  window.addEventListener('popstate', () => dispatch({ pop: true }));
  document.addEventListener('click', interceptLinks);
  dispatch({ initial: true });
}

function match(pathname) {
  let rest = pathname;
  if (rest === BASE || rest.startsWith(`${BASE}/`)) rest = rest.slice(BASE.length);
  else return null;
  const parts = rest.split('/').filter(Boolean);
  for (const route of routes) {
    if (route.parts.length !== parts.length) continue;
    const params = {};
    let ok = true;
    for (let i = 0; i < parts.length; i++) {
      const want = route.parts[i];
      if (want.startsWith(':')) {
        try { params[want.slice(1)] = decodeURIComponent(parts[i]); } catch { ok = false; break; }
      } else if (want !== parts[i]) {
        ok = false;
        break;
      }
    }
    if (ok) return { route, params };
  }
  return null;
}

function dispatch(info = {}) {
  const url = new URL(window.location.href);
  onRoute(match(url.pathname), url, info);
}

/** navigate goes to an app URL ('/app/...' or a path relative to /app). */
export function navigate(to, { replace = false } = {}) {
  const target = to.startsWith(BASE) ? to : BASE + to;
  const here = window.location.pathname + window.location.search;
  if (replace) window.history.replaceState(null, '', target);
  else if (target !== here) window.history.pushState(null, '', target);
  dispatch({ replace });
}

/** Re-renders the current URL, e.g. after signing in from another tab. */
export function reload() {
  dispatch({});
}

/**
 * href builds '/app' + path + query string; query values that are null,
 * undefined or '' are left out. Path segments must already be encoded
 * (use seg()).
 */
export function href(path, query) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v === undefined || v === null || v === '') continue;
    params.set(k, String(v));
  }
  const qs = params.toString();
  return BASE + path + (qs ? `?${qs}` : '');
}

/** Encodes one value as a single URL path segment. */
export const seg = (v) => encodeURIComponent(String(v));

/** Only same-app paths may be used as ?next= targets (no open redirects). */
export function safeNext(next) {
  if (typeof next !== 'string') return null;
  if (!next.startsWith(`${BASE}/`) || next.startsWith('//')) return null;
  if (next.startsWith(`${BASE}/login`) || next.startsWith(`${BASE}/signup`)) return null;
  return next;
}

function interceptLinks(e) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest?.('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, window.location.href);
  if (url.origin !== window.location.origin) return;
  if (url.pathname !== BASE && !url.pathname.startsWith(`${BASE}/`)) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
}
