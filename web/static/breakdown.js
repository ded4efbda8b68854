// breakdown.js: the "break down by" card of the overview and tool pages:
// GET /v1/mcps/{id}/breakdown?by&from&to[&tool]&compare=previous, shown as
// bars (calls, errors in red) and a table with the change against the
// previous period. The dimension is kept in the URL (?by=), so a breakdown
// can be shared.

import * as api from './api.js';
import * as fmt from './format.js';
import * as range from './range.js';
import * as router from './router.js';
import { h, problemBox, table } from './ui.js';

const DIMENSIONS = [
  ['tool', 'Tool'], ['method', 'Method'], ['client_name', 'Client'], ['client_version', 'Client version'],
  ['server_version', 'Server version'], ['protocol_version', 'Protocol version'], ['error_type', 'Error type'], ['user_id', 'User'], ['attribute', 'Attribute…'],
];

/** The change from prev to cur as text (+12%), or null without a base. */
export function change(cur, prev) {
  if (typeof cur !== 'number' || typeof prev !== 'number') return null;
  if (prev === 0) return cur === 0 ? { text: '±0', raw: 0 } : { text: 'new', raw: '' };
  const r = (cur - prev) / prev;
  const pct = Math.round(r * 1000) / 10;
  return { text: `${pct > 0 ? '+' : pct < 0 ? '−' : '±'}${Math.abs(pct)}%`, raw: r };
}

/**
 * breakdownCard returns the card. opts: ctx (the page's), mcpId, range,
 * tool (a tool page: its calls only; the tool dimension is left out).
 */
export function breakdownCard({ ctx, mcpId, range: r, tool }) {
  const query = ctx.query;
  let by = query.get('by') || (tool ? 'client_version' : 'client_name');
  let attrKey = '';
  if (by.startsWith('attribute:')) { attrKey = by.slice('attribute:'.length); by = 'attribute'; }
  const dims = DIMENSIONS.filter(([v]) => !(tool && v === 'tool'));
  const select = h('select', { testid: 'breakdown-by', 'aria-label': 'Break down by' },
    dims.map(([v, label]) => h('option', { value: v, selected: v === by }, label)));
  const attr = h('input', { type: 'text', testid: 'breakdown-attribute', placeholder: 'attribute key', value: attrKey, hidden: by !== 'attribute', 'aria-label': 'Attribute key' });
  const body = h('div', { testid: 'breakdown-body' });
  const card = h('section', { class: 'card', testid: 'breakdown' },
    h('div', { class: 'card-head' }, h('h2', null, 'Break down by'),
      h('div', { class: 'breakdown-controls' }, select, attr)),
    body);

  let ctrl = null;
  const show = async () => {
    const dim = select.value === 'attribute' ? (attr.value ? `attribute:${attr.value}` : '') : select.value;
    attr.hidden = select.value !== 'attribute';
    if (!dim) { body.replaceChildren(h('p', { class: 'muted' }, 'Type an attribute key.')); return; }
    // Keep the choice in the URL without re-rendering the page.
    const u = new URL(location.href);
    u.searchParams.set('by', dim);
    history.replaceState(history.state, '', u);
    ctrl?.abort();
    ctrl = new AbortController();
    ctx.signal?.addEventListener('abort', () => ctrl.abort(), { once: true });
    body.dataset.state = 'loading';
    try {
      const q = { ...range.apiQuery(r), by: dim, compare: 'previous', limit: 10 };
      if (tool) q.tool = tool;
      const d = await api.get(api.path`/v1/mcps/${mcpId}/breakdown`, q, { signal: ctrl.signal });
      body.replaceChildren(...view(d, mcpId, tool));
      body.dataset.state = 'ready';
      body.dataset.by = d.by;
    } catch (err) {
      if (api.isAbort(err)) return;
      body.replaceChildren(problemBox(err));
      body.dataset.state = 'error';
    }
  };
  select.addEventListener('change', show);
  attr.addEventListener('change', show);
  show();
  return card;
}

function view(d, mcpId, tool) {
  const items = Array.isArray(d.items) ? d.items : [];
  const rows = d.other ? [...items, { ...d.other, value: null, isOther: true }] : items;
  const max = Math.max(1, ...rows.map((r) => r.calls));
  const label = (r) => (r.isOther ? 'Other' : r.value === '' ? '(none)' : r.value);
  const bars = h('div', { class: 'breakdown-bars', testid: 'breakdown-bars', role: 'img', 'aria-label': 'Calls per value; the numbers are in the table below' },
    rows.map((r) => h('div', { class: 'bar-row' },
      h('span', { class: 'bar-label', title: label(r) }, label(r)),
      h('div', { class: 'bar-track' },
        h('div', { class: 'bar-fill', style: `width: ${(100 * r.calls) / max}%` }),
        h('div', { class: 'bar-err', style: `width: ${(100 * r.errors) / max}%` })),
      h('span', { class: 'num' }, fmt.count(r.calls)))));
  const prevLabel = d.previous ? `vs ${d.previous.from}…${d.previous.to}` : '';
  return [
    rows.length ? bars : null,
    table({
      testid: 'breakdown-table',
      rowTestid: 'breakdown-row',
      rows,
      empty: 'No calls in this range.',
      rowAttrs: (r) => ({ dataset: { value: r.isOther ? '' : r.value, other: r.isOther ? 'true' : 'false', calls: String(r.calls) } }),
      columns: [
        {
          key: 'value', label: 'Value', render: (r) => (r.isOther ? h('span', { class: 'muted' }, 'Other') : d.by === 'tool' && !tool
            ? h('a', { href: router.href(`/mcps/${router.seg(mcpId)}/tools/${router.seg(r.value)}`) }, h('code', null, r.value))
            : h('code', { class: 'wrap' }, label(r))),
        },
        { key: 'calls', label: 'Calls', num: true, render: (r) => fmt.count(r.calls) },
        { key: 'change', label: 'Change', num: true, render: (r) => { const c = r.previous ? change(r.calls, r.previous.calls) : null; return c ? h('span', { title: prevLabel }, c.text) : h('span', { class: 'muted' }, '—'); } },
        { key: 'errors', label: 'Errors', num: true, render: (r) => fmt.count(r.errors) },
        { key: 'error_rate', label: 'Error rate', num: true, render: (r) => fmt.percent(r.error_rate) },
        { key: 'p95_ms', label: 'p95', num: true, render: (r) => fmt.ms(r.p95_ms) },
        { key: 'sessions', label: 'Sessions', num: true, render: (r) => fmt.count(r.sessions) },
        { key: 'users', label: 'Users', num: true, render: (r) => fmt.count(r.users) },
      ],
    }),
  ].filter(Boolean);
}
