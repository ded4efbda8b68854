// One tool of one MCP: GET /v1/mcps/{id}/tools/{name}?from&to.

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { totals, charts, figuresQuery } from './overview.js';
import { breakdownCard } from '../breakdown.js';
import { h, load, section, table } from '../ui.js';
import { toolFailures } from '../failures.js';

export async function render(ctx) {
  const name = ctx.params.name;
  const frame = mcpFrame(ctx, 'tools', { withRange: true, title: name, keep: ['by'] });
  await load(frame.content, async () => {
    const q = figuresQuery(frame.range);
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/tools/${name}`, q, { signal: ctx.signal });
    const series = Array.isArray(d.series) ? d.series : [];
    const errorTypes = Array.isArray(d.error_types) ? d.error_types : [];
    const clients = Array.isArray(d.clients) ? d.clients : [];
    return [
      h('div', { class: 'crumbs' },
        h('a', { href: router.href(`/mcps/${router.seg(frame.mcpId)}/tools`, frame.rangeQuery), testid: 'tool-back' }, '← All tools'),
        h('h2', { class: 'tool-name', testid: 'tool-name' }, h('code', null, d.name ?? name))),
      totals(d, 'tool'),
      d.calls === 0 ? h('p', { class: 'notice' }, 'No calls of this tool in this range.') : null,
      charts(series, ctx.signal, 'tool-', q.granularity === 'hour', [], d.releases || []),
      ...toolFailures(d),
      h('div', { class: 'grid-2' },
        section('Error types', table({
          testid: 'tool-error-types',
          rowTestid: 'tool-error-type',
          rows: errorTypes,
          empty: 'No errors in this range.',
          columns: [
            { key: 'error_type', label: 'Error type', render: (r) => h('code', null, r.error_type || '(none)') },
            { key: 'count', label: 'Count', num: true, render: (r) => fmt.count(r.count) },
            { key: 'last_message', label: 'Last message', render: (r) => h('span', { class: 'wrap' }, r.last_message || '—') },
          ],
        })),
        section('Clients', table({
          testid: 'tool-clients',
          rowTestid: 'tool-client',
          rows: clients,
          empty: 'No calls in this range.',
          columns: [
            { key: 'client_name', label: 'Client', render: (r) => r.client_name || h('span', { class: 'muted' }, '(unknown)') },
            { key: 'calls', label: 'Calls', num: true, render: (r) => fmt.count(r.calls) },
          ],
        }))),
      breakdownCard({ ctx, mcpId: frame.mcpId, range: frame.range, tool: name }),
    ].filter(Boolean);
  }, { onError: (err) => frame.picker.showError(err) });
}
