// Tools of one MCP: GET /v1/mcps/{id}/tools?from&to, sortable by every
// column in the browser. The sort order is in the URL (?sort=&dir=).

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as range from '../range.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { h, load, table, time } from '../ui.js';

const COLUMNS = [
  { key: 'name', label: 'Tool', type: 'text' },
  { key: 'calls', label: 'Calls', num: true, f: fmt.count },
  { key: 'errors', label: 'Errors', num: true, f: fmt.count },
  { key: 'error_rate', label: 'Error rate', num: true, f: fmt.percent },
  { key: 'avg_ms', label: 'Avg', num: true, f: fmt.ms },
  { key: 'p50_ms', label: 'p50', num: true, f: fmt.ms },
  { key: 'p95_ms', label: 'p95', num: true, f: fmt.ms },
  { key: 'sessions', label: 'Sessions', num: true, f: fmt.count },
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

  await load(frame.content, async () => {
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
