// mcp-frame.js: the header every page about one MCP shares: its name, a
// switcher to the same tab of another MCP, the tabs, and (on metric tabs) the
// date range picker. The selected MCP is in the path and the range in the
// query string, so every view can be shared as a link.

import * as api from './api.js';
import * as store from './store.js';
import * as session from './session.js';
import * as router from './router.js';
import * as range from './range.js';
import { h } from './ui.js';

export const TABS = [
  { id: 'overview', label: 'Overview', metric: true },
  { id: 'tools', label: 'Tools', metric: true },
  { id: 'insights', label: 'Insights', metric: true },
  { id: 'releases', label: 'Releases', metric: true },
  { id: 'sessions', label: 'Sessions', metric: true },
  { id: 'alerts', label: 'Alerts' },
  { id: 'probes', label: 'Probes' },
  { id: 'slos', label: 'SLOs' },
  { id: 'setup', label: 'Keys & setup' },
];

/**
 * mcpFrame renders the shared header into ctx.root and returns {content,
 * range, picker, mcpId, mcp (a promise of the MCP)}. withRange: show the
 * date picker and read the range from the URL. keep: extra query parameters
 * to keep when the range changes (e.g. tool sort order).
 */
export function mcpFrame(ctx, tab, { withRange = false, keep = [], title } = {}) {
  const { root, params, query } = ctx;
  const mcpId = params.id;
  session.setLastMcp(mcpId);
  const r = range.fromQuery(query);
  const rangeQ = (query.has('from') || query.has('to') || query.has('preset')) ? range.toQuery(r) : {};
  const base = `/mcps/${router.seg(mcpId)}`;

  const name = h('span', { testid: 'mcp-title' }, '…');
  const switcher = h('select', { class: 'mcp-switcher', testid: 'mcp-switcher', 'aria-label': 'Switch MCP' });
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'MCP sections' },
    TABS.map((t) => h('a', {
      href: router.href(`${base}/${t.id}`, t.metric ? rangeQ : {}),
      testid: `tab-${t.id}`,
      'aria-current': t.id === tab ? 'page' : null,
    }, t.label)));

  let picker = null;
  if (withRange) {
    picker = range.picker(r, (next) => {
      const q = {};
      for (const k of keep) if (query.get(k)) q[k] = query.get(k);
      router.navigate(router.href(ctx.url.pathname.slice(router.BASE.length), { ...q, ...range.toQuery(next) }));
    });
  }

  const content = h('div', { class: 'mcp-content' });
  root.append(
    h('div', { class: 'mcp-header' },
      h('div', { class: 'mcp-title-row' },
        h('h1', null, name, title ? h('span', { class: 'muted title-sub' }, ` · ${title}`) : null),
        switcher),
      tabs,
      picker),
    content);

  const mcp = findMcp(mcpId).then((m) => {
    name.textContent = m.name;
    document.title = `${m.name}${title ? ` · ${title}` : ''} · MCPScope`;
    return m;
  });
  mcp.catch((err) => {
    name.textContent = mcpId;
    if (err?.status === 404) session.setLastMcp(null);
  });
  fillSwitcher(switcher, mcpId, tab, rangeQ);

  return { content, range: r, rangeQuery: rangeQ, picker, mcpId, mcp, base };
}

async function findMcp(id) {
  const items = await store.mcps().catch(() => []);
  const m = items.find((x) => x.id === id);
  return m || api.get(api.path`/v1/mcps/${id}`, null, { quiet: true });
}

async function fillSwitcher(select, mcpId, tab, rangeQ) {
  let items = [];
  try { items = await store.mcps(); } catch { /* the switcher just stays small */ }
  if (!items.some((m) => m.id === mcpId)) items = [{ id: mcpId, name: mcpId }, ...items];
  select.replaceChildren(...items.map((m) => h('option', { value: m.id, selected: m.id === mcpId }, m.name)));
  select.hidden = items.length < 2;
  select.addEventListener('change', () => {
    const t = TABS.find((x) => x.id === tab) ? tab : 'overview';
    const metric = TABS.find((x) => x.id === t)?.metric;
    router.navigate(router.href(`/mcps/${router.seg(select.value)}/${t}`, metric ? rangeQ : {}));
  });
}
