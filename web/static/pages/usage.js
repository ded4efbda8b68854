// Usage: GET /v1/account/usage?from&to → events per day and per MCP, and the
// ingest limits in force.

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as range from '../range.js';
import * as router from '../router.js';
import { dailyChart } from '../charts.js';
import { h, load, pageHeader, section, stat, table } from '../ui.js';

export async function render(ctx) {
  const r = range.fromQuery(ctx.query);
  const picker = range.picker(r, (next) => router.navigate(router.href('/usage', range.toQuery(next))));
  const content = h('div');
  ctx.root.append(pageHeader('Usage'), h('div', { class: 'mcp-header' }, picker), content);
  await load(content, async () => {
    const d = await api.get('/v1/account/usage', range.apiQuery(r), { signal: ctx.signal });
    const days = Array.isArray(d.days) ? d.days : [];
    const mcps = Array.isArray(d.mcps) ? d.mcps : [];
    const limits = d.limits || {};
    return [
      h('div', { class: 'stats' },
        stat({ label: 'Events in range', value: fmt.count(d.events), raw: d.events, testid: 'usage-events' }),
        stat({ label: 'Payloads per minute per key', value: fmt.count(limits.ingest_payloads_per_minute), raw: limits.ingest_payloads_per_minute, testid: 'usage-limit-rate' }),
        stat({ label: 'Items per batch', value: fmt.count(limits.max_batch_items), raw: limits.max_batch_items, testid: 'usage-limit-items' }),
        stat({ label: 'Body size', value: limits.max_body_bytes ? `${fmt.number(limits.max_body_bytes / 1048576)} MiB` : fmt.DASH, raw: limits.max_body_bytes, testid: 'usage-limit-bytes' })),
      section(null, dailyChart({
        title: 'Events per day', testid: 'chart-usage', signal: ctx.signal, format: fmt.number,
        dates: days.map((x) => x.date), series: [{ label: 'Events', values: days.map((x) => x.events), color: '--chart-calls', fill: true }],
      })),
      section('By MCP', table({
        testid: 'usage-mcps',
        rows: mcps,
        empty: 'No events in this range.',
        columns: [
          { key: 'name', label: 'MCP', render: (m) => h('a', { href: router.href(`/mcps/${router.seg(m.mcp_id)}/overview`, range.toQuery(r)) }, m.name || m.mcp_id) },
          { key: 'events', label: 'Events', num: true, render: (m) => fmt.count(m.events) },
        ],
      })),
    ];
  }, { onError: (err) => picker.showError(err) });
}
