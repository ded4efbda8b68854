// Overview of one MCP: GET /v1/mcps/{id}/overview?from&to&compare=previous
// (deltas on the figure cards), hourly (granularity=hour) for ranges of up
// to HOURLY_MAX_DAYS days, and the "break down by" card.

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as range from '../range.js';
import { mcpFrame } from '../mcp-frame.js';
import { exportBar } from '../export.js';
import { dailyChart } from '../charts.js';
import { breakdownCard, change } from '../breakdown.js';
import { h, load, stat, section } from '../ui.js';
import { overviewFailures } from '../failures.js';

/** Ranges of up to this many days get hourly charts. */
export const HOURLY_MAX_DAYS = 3;

/** The query of a figures read: the range, the previous period, hourly when short. */
export function figuresQuery(r) {
  const q = { ...range.apiQuery(r), compare: 'previous' };
  const days = r.from && r.to ? range.daysBetween(r.from, r.to) : 0;
  if (days >= 1 && days <= HOURLY_MAX_DAYS) q.granularity = 'hour';
  return q;
}

export async function render(ctx) {
  const frame = mcpFrame(ctx, 'overview', { withRange: true, title: 'Overview', keep: ['by'] });
  frame.content.before(exportBar(frame));
  await load(frame.content, async () => {
    const q = figuresQuery(frame.range);
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/overview`, q, { signal: ctx.signal });
    const failures = await overviewFailures(frame.mcpId, q, ctx.signal, d);
    const down = await downPeriods(frame.mcpId, d, q.granularity === 'hour', ctx.signal);
    return [...view(d, ctx.signal, q.granularity === 'hour', down), failures, breakdownCard({ ctx, mcpId: frame.mcpId, range: frame.range })];
  }, { onError: (err) => frame.picker.showError(err) });
}

// Lower is better for these: a rise is shown as bad.
const LOWER_IS_BETTER = new Set(['errors', 'error_rate', 'avg_ms', 'p50_ms', 'p95_ms', 'p99_ms']);

function delta(d, key) {
  const p = d.previous;
  if (!p || !(key in p)) return null;
  const c = change(d[key], p[key]);
  if (!c) return null;
  const worse = typeof c.raw === 'number' && c.raw !== 0 && ((c.raw > 0) === LOWER_IS_BETTER.has(key));
  return { text: `${c.text} vs previous ${p.from === p.to ? 'day' : 'period'}`, raw: c.raw, tone: c.raw === 0 || c.raw === '' ? null : (worse ? 'bad' : 'good') };
}

/** The totals grid; tool.js reuses it for one tool. */
export function totals(d, prefix) {
  const items = [
    { key: 'calls', label: 'Calls', f: fmt.count },
    { key: 'errors', label: 'Errors', f: fmt.count, tone: d.errors > 0 ? 'bad' : null },
    { key: 'error_rate', label: 'Error rate', f: fmt.percent, testid: 'error-rate', tone: d.error_rate > 0.05 ? 'bad' : null },
    { key: 'sessions', label: 'Sessions', f: fmt.count },
    { key: 'users', label: 'Users', f: fmt.count },
    { key: 'avg_ms', label: 'Avg latency', f: fmt.ms, testid: 'avg' },
    { key: 'p50_ms', label: 'p50', f: fmt.ms, testid: 'p50' },
    { key: 'p95_ms', label: 'p95', f: fmt.ms, testid: 'p95' },
    { key: 'p99_ms', label: 'p99', f: fmt.ms, testid: 'p99' },
  ].filter((i) => i.key in d);
  const grid = (title, list) => (list.length ? h('div', { class: 'stats-group' },
    h('h2', { class: 'stats-title' }, title),
    h('div', { class: 'stats' }, list.map((i) => stat({
      label: i.label, value: i.f(d[i.key]), raw: d[i.key], tone: i.tone, delta: delta(d, i.key),
      testid: `${prefix}-${i.testid || i.key.replace(/_/g, '-')}`,
    })))) : null);
  // Traffic and latency read as two rows rather than one wrapped line.
  return h('div', { class: 'totals' },
    grid('Traffic', items.filter((i) => !i.key.endsWith('_ms'))),
    grid('Latency', items.filter((i) => i.key.endsWith('_ms'))));
}

/**
 * downPeriods reads the MCP's probe down periods over the series' range
 * (GET /v1/mcps/{id}/probes/down-periods); none when the read fails: the
 * marks are an addition to the charts, not a reason to fail them.
 */
async function downPeriods(mcpId, d, hourly, signal) {
  const series = Array.isArray(d.series) ? d.series : [];
  if (!series.length) return [];
  const first = hourly ? series[0].start : `${series[0].date}T00:00:00Z`;
  const last = hourly ? series[series.length - 1].start : `${series[series.length - 1].date}T00:00:00Z`;
  const to = new Date(Date.parse(last) + (hourly ? 3600e3 : 86400e3) - 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  try {
    const r = await api.get(api.path`/v1/mcps/${mcpId}/probes/down-periods`, { from: first, to }, { signal });
    return Array.isArray(r.items) ? r.items : [];
  } catch (err) {
    if (signal?.aborted) throw err;
    return [];
  }
}

/** A line under the charts naming the probe's down periods (at most five). */
function downNote(down) {
  if (!down.length) return null;
  const when = (p) => (p.from === p.to ? fmt.timestamp(p.from) : `${fmt.timestamp(p.from)} – ${fmt.timestamp(p.to)}`);
  const shown = down.slice(-5);
  return h('p', { class: 'hint', testid: 'overview-down-periods', 'data-count': String(down.length) },
    h('strong', null, 'Probe down (shaded on the charts): '),
    shown.map((p, i) => h('span', { testid: 'overview-down-period' }, (i ? '; ' : '') + `${when(p)} (${p.error})`)),
    down.length > shown.length ? ` and ${down.length - shown.length} earlier` : null);
}

/** The two charts (daily, or hourly): calls + errors, and p95; marks shade periods (probe down); releases draw markers. */
export function charts(series, signal, prefix, hourly = false, marks = [], releases = []) {
  const dates = series.map((s) => s.date);
  const starts = hourly ? series.map((s) => s.start) : undefined;
  const per = hourly ? 'hour' : 'day';
  return h('div', { class: 'grid-2' },
    section(null, dailyChart({
      title: `Calls and errors per ${per}`, testid: `${prefix}chart-calls`, signal, dates, starts, format: fmt.number, marks, releases,
      series: [
        { label: 'Calls', values: series.map((s) => s.calls), color: '--chart-calls', fill: true },
        { label: 'Errors', values: series.map((s) => s.errors), color: '--chart-errors' },
      ],
    })),
    section(null, dailyChart({
      title: `p95 latency per ${per}`, testid: `${prefix}chart-p95`, signal, dates, starts, format: fmt.ms, marks, releases,
      series: [{ label: 'p95', values: series.map((s) => s.p95_ms), color: '--chart-latency' }],
    })));
}

function view(d, signal, hourly, down = []) {
  const series = Array.isArray(d.series) ? d.series : [];
  return [
    totals(d, 'overview'),
    d.calls === 0 ? h('p', { class: 'notice', testid: 'overview-empty' }, 'No telemetry in this range yet. Keys & setup shows how to send some.') : null,
    charts(series, signal, '', hourly, down, d.releases || []),
    downNote(down),
    nightly(d),
  ].filter(Boolean);
}

function nightly(d) {
  const n = d.nightly || {};
  const asOf = d.nightly_as_of;
  const body = asOf
    ? h('div', { class: 'stats' },
      stat({ label: 'Active users (28 days)', value: fmt.count(n.active_users_28d), raw: n.active_users_28d, testid: 'nightly-active-users' }),
      stat({ label: 'Stickiness', value: fmt.percent(n.stickiness), raw: n.stickiness, testid: 'nightly-stickiness', hint: 'Mean daily users ÷ 28-day users' }),
      stat({ label: '7-day retention', value: fmt.percent(n.retention_7d), raw: n.retention_7d, testid: 'nightly-retention', hint: 'Users of the week before who came back' }))
    : h('p', { class: 'muted', testid: 'nightly-not-computed' }, 'Not computed yet. The nightly pass runs shortly after midnight UTC and covers every day up to yesterday.');
  return h('section', { class: 'card', testid: 'nightly' },
    h('div', { class: 'card-head' }, h('h2', null, 'Engagement'),
      h('span', { class: 'muted', testid: 'nightly-as-of', 'data-value': asOf || '' }, asOf ? `Nightly figures as of ${asOf} (UTC)` : 'Nightly figures: not computed yet')),
    body);
}
