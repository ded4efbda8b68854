// Tools of one MCP: GET /v1/mcps/{id}/tools?from&to, sortable by every
// column in the browser. The sort order is in the URL (?sort=&dir=).
// Below it, the tool inventory (GET /v1/mcps/{id}/inventory): what the
// server lists, tools listed but never called, tools called but never
// listed, and the change timeline (docs/inventory.md).

import { bytes } from '../failures.js';
import * as api from '../api.js';
import * as fmt from '../format.js';
import * as range from '../range.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { changesList } from '../toolchanges.js';
import { h, load, table, time, section, badge } from '../ui.js';

const COLUMNS = [
  { key: 'name', label: 'Tool', type: 'text' },
  { key: 'calls', label: 'Calls', num: true, f: fmt.count },
  { key: 'errors', label: 'Errors', num: true, f: fmt.count },
  { key: 'error_rate', label: 'Error rate', num: true, f: fmt.percent },
  { key: 'avg_ms', label: 'Avg', num: true, f: fmt.ms },
  { key: 'p50_ms', label: 'p50', num: true, f: fmt.ms },
  { key: 'p95_ms', label: 'p95', num: true, f: fmt.ms },
  { key: 'sessions', label: 'Sessions', num: true, f: fmt.count },
  { key: 'response_bytes_p95', label: 'Answer p95', num: true, f: bytes },
  { key: 'response_bytes_max', label: 'Largest answer', num: true, f: bytes },
  { key: 'repeated_calls', label: 'Repeats', num: true, f: fmt.count },
  { key: 'last_seen_at', label: 'Last seen', type: 'time' },
];

/**
 * compare orders two rows by key; nulls (no duration measured) always go
 * last whatever the direction, since "unknown" is neither fast nor slow.
 */
export function sortRows(rows, key, dir) {
  const sign = dir === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => {
    const x = a[key];
    const y = b[key];
    const xn = x === null || x === undefined;
    const yn = y === null || y === undefined;
    if (xn || yn) return xn === yn ? 0 : xn ? 1 : -1;
    if (typeof x === 'number' && typeof y === 'number') return (x - y) * sign;
    return String(x).localeCompare(String(y)) * sign;
  });
}

export async function render(ctx) {
  const frame = mcpFrame(ctx, 'tools', { withRange: true, keep: ['sort', 'dir'], title: 'Tools' });
  const key = COLUMNS.some((c) => c.key === ctx.query.get('sort')) ? ctx.query.get('sort') : 'calls';
  const dir = ctx.query.get('dir') === 'asc' ? 'asc' : (ctx.query.get('dir') === 'desc' ? 'desc' : (key === 'name' ? 'asc' : 'desc'));

  const calls = h('div');
  const inventory = h('div', { testid: 'inventory' });
  frame.content.append(calls, inventory);
  load(inventory, async () => inventoryView(await api.get(api.path`/v1/mcps/${frame.mcpId}/inventory`, range.apiQuery(frame.range), { signal: ctx.signal, quiet: true }), frame.mcpId, ctx.signal));
  await load(calls, async () => {
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/tools`, range.apiQuery(frame.range), { signal: ctx.signal });
    const items = Array.isArray(d.items) ? d.items : [];
    const holder = h('div', { class: 'card' });
    const draw = (k, dr) => {
      holder.replaceChildren(table({
        testid: 'tools-table',
        rowTestid: 'tool-row',
        rows: sortRows(items, k, dr),
        empty: 'No tool calls in this range.',
        sort: {
          key: k,
          dir: dr,
          onSort: (col) => {
            const nextDir = col === k ? (dr === 'asc' ? 'desc' : 'asc') : (col === 'name' ? 'asc' : 'desc');
            // Replace, not push: sorting is not a place to go back to.
            window.history.replaceState(null, '', router.href(ctx.url.pathname.slice(router.BASE.length), { ...frame.rangeQuery, sort: col, dir: nextDir }));
            draw(col, nextDir);
            holder.querySelector(`[data-testid="tools-table-sort-${col}"]`)?.focus();
          },
        },
        rowAttrs: (row) => ({ dataset: { tool: row.name } }),
        columns: COLUMNS.map((c) => ({
          key: c.key,
          label: c.label,
          num: c.num,
          render: (row) => {
            if (c.key === 'name') {
              return h('a', { href: router.href(`/mcps/${router.seg(frame.mcpId)}/tools/${router.seg(row.name)}`, frame.rangeQuery), testid: 'tool-link', class: 'strong' }, row.name);
            }
            if (c.type === 'time') return time(row[c.key]);
            return c.f(row[c.key]);
          },
        })),
      }));
    };
    draw(key, dir);
    return holder;
  }, { onError: (err) => frame.picker.showError(err) });
}

/** The inventory of the range: listed tools, unused ones, unlisted ones, changes. */
function inventoryView(inv, mcpId, signal) {
  const tools = inv.tools || [];
  const listed = tools.filter((t) => t.first_seen_at);
  const unused = listed.filter((t) => !t.calls);
  const unlisted = tools.filter((t) => !t.first_seen_at);
  if (!listed.length && !(inv.changes || []).length) {
    return section('Inventory', h('p', { class: 'muted', testid: 'inventory-empty' },
      'No tool inventory reported yet. The TypeScript and Go SDKs report each tools/list answer your server serves; update them to see the tools your server exposes, unused tools and schema changes.'));
  }
  return [
    section('Inventory',
      h('p', { class: 'muted' }, `${listed.length} tools listed; ${unused.length} never called in this range${unlisted.length ? `; ${unlisted.length} called but never listed` : ''}.`),
      inv.definition_bytes_total !== null && inv.definition_bytes_total !== undefined
        ? h('p', { class: 'muted', testid: 'inventory-definition-total', dataset: { value: String(inv.definition_bytes_total) } },
          `Every agent reads ${bytes(inv.definition_bytes_total)} of tool definitions before its first call.`)
        : null,
      table({
        testid: 'inventory-table',
        rowTestid: 'inventory-row',
        rows: tools,
        rowAttrs: (t) => ({ dataset: { tool: t.name } }),
        columns: [
          { key: 'name', label: 'Tool', render: (t) => h('span', { class: 'strong' }, t.name) },
          { key: 'calls', label: 'Calls', num: true, render: (t) => fmt.count(t.calls) },
          { key: 'state', label: '', render: (t) => (!t.first_seen_at ? badge('not listed', 'bad') : (!t.calls ? badge('unused', 'neutral') : '')) },
          { key: 'first_seen_at', label: 'First listed', render: (t) => (t.first_seen_at ? time(t.first_seen_at) : '—') },
          { key: 'last_seen_at', label: 'Last listed', render: (t) => (t.last_seen_at ? time(t.last_seen_at) : '—') },
          { key: 'definition_bytes', label: 'Definition', num: true, render: (t) => h('span', { testid: 'inventory-definition-bytes' }, bytes(t.definition_bytes)) },
          { key: 'schema_hash', label: 'Schema', render: (t) => (t.schema_hash ? h('code', { title: t.schema_hash }, t.schema_hash.slice(0, 12)) : '—') },
        ],
      })),
    section('Unused tools', unused.length
      ? h('ul', { testid: 'unused-tools' }, unused.map((t) => h('li', null, h('code', null, t.name))))
      : h('p', { class: 'muted', testid: 'unused-tools-empty' }, 'Every listed tool was called in this range.')),
    section('Changes', changesList(mcpId, inv.changes || [], signal)),
  ];
}
