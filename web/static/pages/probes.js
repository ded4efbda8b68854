// An MCP's probes (docs/probes.md): GET /v1/mcps/{id}/probes, and per
// probe its last checks (GET /v1/probes/{probeId}/results): status,
// uptime, a bar per check (red: down), a latency line, the last errors
// and the certificate's expiry.

import * as api from '../api.js';
import * as fmt from '../format.js';
import { mcpFrame } from '../mcp-frame.js';
import { h, load, section, table, stat, badge, time } from '../ui.js';

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.appendChild(c);
  return el;
}

/** bars draws one bar per check, oldest first: green up, red down. */
function bars(items) {
  const w = 6;
  const chart = svg('svg', { width: items.length * w, height: 24, role: 'img', 'aria-label': 'checks, oldest first' });
  items.slice().reverse().forEach((r, i) => chart.appendChild(svg('rect', {
    x: i * w, y: 0, width: w - 1, height: 24, fill: r.status === 'up' ? '#2e9e44' : '#d73a49',
  }, svg('title', {}, document.createTextNode(`${r.at} ${r.status}`)))));
  return h('div', { class: 'probe-bars', testid: 'probe-bars' }, chart);
}

/** latency draws the checks' latency as a line, oldest first; down checks are marked red. */
function latency(items) {
  const pts = items.slice().reverse();
  const max = Math.max(1, ...pts.map((r) => r.latency_ms));
  const W = 360, H = 80, step = pts.length > 1 ? W / (pts.length - 1) : 0;
  const line = pts.map((r, i) => `${(i * step).toFixed(1)},${(H - (r.latency_ms / max) * (H - 4)).toFixed(1)}`).join(' ');
  const chart = svg('svg', { width: W, height: H, role: 'img', 'aria-label': `latency, max ${fmt.ms(max)}` },
    ...pts.map((r, i) => (r.status === 'up' ? null : svg('rect', { x: Math.max(0, i * step - step / 2), y: 0, width: Math.max(step, 2), height: H, fill: '#d73a4933' })))
      .filter(Boolean),
    svg('polyline', { points: line, fill: 'none', stroke: '#3b82f6', 'stroke-width': 1.5 }));
  return h('div', { class: 'probe-latency', testid: 'probe-latency' }, chart, h('div', { class: 'muted' }, `max ${fmt.ms(max)}`));
}

async function probeCard(p, signal) {
  const res = await api.get(api.path`/v1/probes/${p.id}/results`, { limit: 60 }, { signal });
  const items = Array.isArray(res.items) ? res.items : [];
  const errors = items.filter((r) => r.status !== 'up').slice(0, 10);
  const tone = p.status === 'up' ? 'ok' : p.status === 'down' ? 'danger' : 'neutral';
  return section(null,
    h('div', { class: 'crumbs' }, badge(p.status, tone, { testid: 'probe-status' }), ' ', h('code', { testid: 'probe-url' }, p.url),
      p.enabled ? null : h('span', { class: 'muted' }, ' (disabled)')),
    p.warning ? h('p', { class: 'notice', testid: 'probe-warning' }, `⚠ ${p.warning}`) : null,
    p.last_error ? h('p', { class: 'notice', testid: 'probe-error' }, `Down since ${p.down_since ? fmt.timestamp(p.down_since) : '?'}: ${p.last_error}`) : null,
    h('div', { class: 'stats' },
      stat({ label: 'Uptime 24h', value: fmt.percent(p.uptime['24h']), raw: p.uptime['24h'], testid: 'probe-uptime-24h' }),
      stat({ label: 'Uptime 7d', value: fmt.percent(p.uptime['7d']), raw: p.uptime['7d'] }),
      stat({ label: 'Uptime 30d', value: fmt.percent(p.uptime['30d']), raw: p.uptime['30d'] }),
      stat({ label: 'Latency', value: fmt.ms(p.latency_ms), raw: p.latency_ms }),
      stat({ label: 'Protocol', value: p.protocol_version ?? fmt.DASH }),
      stat({ label: 'Certificate expires', value: p.tls_expires_at ? fmt.timestamp(p.tls_expires_at) : fmt.DASH, tone: p.warning ? 'warning' : null })),
    h('p', { class: 'muted' }, 'Last checked ', time(p.last_checked_at), ` · every ${p.interval_seconds} s`),
    items.length ? bars(items) : h('p', { class: 'empty' }, 'No checks yet.'),
    items.length ? latency(items) : null,
    h('h3', null, 'Last errors'),
    table({
      testid: 'probe-errors', rowTestid: 'probe-error-row', rows: errors, empty: 'No failed check among the last ones.',
      columns: [
        { key: 'at', label: 'At', render: (r) => time(r.at) },
        { key: 'error', label: 'Error', render: (r) => h('span', { class: 'wrap' }, r.error || fmt.DASH) },
        { key: 'latency_ms', label: 'Took', num: true, render: (r) => fmt.ms(r.latency_ms) },
      ],
    }));
}

export async function render(ctx) {
  const frame = mcpFrame(ctx, 'probes', { title: 'Probes' });
  await load(frame.content, async () => {
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/probes`, {}, { signal: ctx.signal });
    const probes = Array.isArray(d.items) ? d.items : [];
    if (!probes.length) {
      return [h('p', { class: 'empty', testid: 'probes-empty' },
        'No probe yet. Add one with POST /v1/mcps/{id}/probes: the service then checks the server over MCP and tells "down" from "quiet".')];
    }
    return Promise.all(probes.map((p) => probeCard(p, ctx.signal)));
  });
}
