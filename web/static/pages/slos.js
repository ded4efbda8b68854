// Service level objectives of one MCP: GET /v1/mcps/{id}/slos (objective,
// SLI, budget left, burn rates, state), a create form for owners and admins
// (POST /v1/mcps/{id}/slos), and one SLO's page (GET /v1/slos/{sloId}) with
// its burn chart (daily burn rate and SLI over the window), its history
// (GET /v1/slos/{sloId}/events) and delete. Availability and latency SLOs
// alike; a latency SLO's threshold is one of the API's ladder.

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as store from '../store.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { dailyChart } from '../charts.js';
import { h, load, table, time, badge, stat, section, field, checkbox, onSubmit, confirmDialog, toast } from '../ui.js';

// The thresholds a latency SLO may take (analytics.LatencyLadderMs).
const LADDER_MS = [50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000];

const CHANNELS = [['in_app', 'In-app'], ['email', 'Email'], ['slack', 'Slack'], ['discord', 'Discord']];

export function stateBadge(state) {
  const tone = state === 'page' ? 'bad' : state === 'ticket' ? 'neutral' : 'good';
  return badge(state || 'unknown', tone, { testid: 'slo-state' });
}

/** "99.5% of search calls succeed over 28 days", "99% of calls answer within 500 ms over 28 days" */
export function objective(s) {
  const what = s.tool ? `${s.tool} calls` : 'calls';
  const verb = s.kind === 'latency' ? `answer within ${fmt.number(s.threshold_ms)} ms` : 'succeed';
  return `${fmt.number(s.objective * 100)}% of ${what} ${verb} over ${s.window_days} days`;
}

function budgetLeft(s) {
  const r = s.error_budget?.remaining;
  if (r === undefined || r === null) return fmt.DASH;
  return r <= 0 ? 'spent' : `${fmt.number(r * 100)}%`;
}

function lasts(s) {
  const hours = s.budget_lasts_hours;
  if (hours === null || hours === undefined) return 'not burning';
  return hours < 48 ? `${fmt.number(hours)} h at this rate` : `${fmt.number(hours / 24)} days at this rate`;
}

export async function render(ctx) {
  if (ctx.params.sloId) return renderOne(ctx);
  const frame = mcpFrame(ctx, 'slos', { title: 'SLOs' });
  const acct = await store.account().catch(() => null);
  const admin = store.isAdmin(acct) || !acct;
  const base = `/mcps/${router.seg(frame.mcpId)}/slos`;
  await load(frame.content, async () => {
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/slos`, null, { signal: ctx.signal });
    const items = Array.isArray(d.items) ? d.items : [];
    return h('div', null,
      h('div', { class: 'card' }, h('h2', null, 'Service level objectives'),
        table({
          testid: 'slos-table', rowTestid: 'slo-row', rows: items,
          empty: 'No SLOs yet. An SLO promises a share of good calls over a window, and pages when its error budget burns fast.',
          columns: [
            { key: 'name', label: 'SLO', render: (s) => h('div', null, h('a', { href: router.href(`${base}/${router.seg(s.id)}`), class: 'strong', testid: 'slo-link' }, s.name), h('div', { class: 'muted small' }, objective(s))) },
            { key: 'sli', label: 'SLI', render: (s) => (s.sli === null ? fmt.DASH : fmt.percent(s.sli)) },
            { key: 'budget', label: 'Budget left', render: (s) => h('span', { testid: 'slo-budget' }, budgetLeft(s)) },
            { key: 'burn', label: 'Burn 1 h / 6 h / 3 d', render: (s) => ['1h', '6h', '3d'].map((k) => fmt.number(s.burn_rates?.[k] ?? 0)).join(' / ') },
            { key: 'state', label: 'State', render: (s) => stateBadge(s.state) },
          ],
        })),
      admin ? createForm(frame.mcpId, base) : null);
  });
}

function createForm(mcpId, base) {
  const form = h('form', { class: 'form', testid: 'slo-form', novalidate: true },
    h('h2', null, 'New SLO'),
    h('div', { class: 'form-row' },
      field({ label: 'Name', name: 'name', required: true, testid: 'slo-name', placeholder: 'Search succeeds' }),
      field({ label: 'Kind', name: 'kind', type: 'select', value: 'availability', testid: 'slo-kind', optionalLabel: false,
        options: [{ value: 'availability', label: 'Availability (calls succeed)' }, { value: 'latency', label: 'Latency (calls answer in time)' }] }),
      field({ label: 'Threshold (ms)', name: 'threshold_ms', type: 'select', value: '500', testid: 'slo-threshold', hint: 'Latency SLOs only.',
        options: LADDER_MS.map((v) => ({ value: String(v), label: `${fmt.number(v)} ms` })) }),
      field({ label: 'Objective (%)', name: 'objective', type: 'number', step: 'any', required: true, value: '99.5', testid: 'slo-objective' }),
      field({ label: 'Tool', name: 'tool', testid: 'slo-tool', hint: 'Leave empty for every call of the MCP.' }),
      field({ label: 'Window (days)', name: 'window_days', type: 'number', min: 1, max: 90, value: '28', testid: 'slo-window' })),
    h('fieldset', { class: 'field checks' }, h('legend', null, 'Channels'),
      CHANNELS.map(([v, label]) => checkbox({ label, name: 'channels', value: v, checked: v === 'in_app', testid: `slo-channel-${v}` }))),
    h('p', { class: 'hint' }, 'Availability: a call is bad when it fails, except invalid_params and unknown_tool (the client’s mistakes). Latency: a call is bad when it takes longer than the threshold. Pages when the 1 h and 5 min burn rates exceed 14.4 (or 6 h and 30 min exceed 6); files a ticket when 3 d and 6 h exceed 1.'),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'slo-create' }, 'Create SLO'));
  onSubmit(form, async () => {
    const get = (n) => form.querySelector(`[name=${n}]`).value.trim();
    const kind = get('kind');
    const s = await api.post(api.path`/v1/mcps/${mcpId}/slos`, {
      name: get('name'), kind, objective: Number(get('objective')) / 100, tool: get('tool') || null,
      threshold_ms: kind === 'latency' ? Number(get('threshold_ms')) : undefined,
      window_days: Number(get('window_days') || 28),
      channels: [...form.querySelectorAll('[name=channels]:checked')].map((c) => c.value),
    });
    toast(`Created ${s.name}.`, 'success');
    router.navigate(`${base}/${router.seg(s.id)}`);
  });
  return h('div', { class: 'card' }, form);
}

async function renderOne(ctx) {
  const frame = mcpFrame(ctx, 'slos', { title: 'SLO' });
  const acct = await store.account().catch(() => null);
  const admin = store.isAdmin(acct) || !acct;
  const base = `/mcps/${router.seg(frame.mcpId)}/slos`;
  await load(frame.content, async () => {
    const [s, hist] = await Promise.all([
      api.get(api.path`/v1/slos/${ctx.params.sloId}`, null, { signal: ctx.signal }),
      api.get(api.path`/v1/slos/${ctx.params.sloId}/events`, null, { signal: ctx.signal }).catch(() => ({ items: [] })),
    ]);
    const events = Array.isArray(hist.items) ? hist.items : [];
    const series = Array.isArray(s.series) ? s.series : [];
    const dates = series.map((p) => p.day.slice(0, 10));
    const del = admin ? h('button', { type: 'button', class: 'btn btn-small btn-danger', testid: 'slo-delete' }, 'Delete') : null;
    del?.addEventListener('click', async () => {
      if (!(await confirmDialog(`Delete the SLO ${s.name}?`))) return;
      await api.del(api.path`/v1/slos/${s.id}`);
      toast(`Deleted ${s.name}.`, 'success');
      router.navigate(base);
    });
    return h('div', null,
      h('div', { class: 'card' },
        h('div', { class: 'card-head' }, h('h2', { testid: 'slo-title' }, s.name), stateBadge(s.state), del),
        h('p', { class: 'muted', testid: 'slo-objective-text' }, objective(s)),
        h('div', { class: 'stats' },
          stat({ label: 'SLI', value: s.sli === null ? fmt.DASH : fmt.percent(s.sli), raw: s.sli, testid: 'slo-sli' }),
          stat({ label: 'Error budget left', value: budgetLeft(s), raw: s.error_budget?.remaining, testid: 'slo-budget-left', hint: lasts(s) }),
          stat({ label: 'Budget spent', value: `${fmt.count(s.error_budget?.spent ?? 0)} of ${fmt.number(s.error_budget?.total ?? 0)} calls`, testid: 'slo-budget-spent' }),
          ...['5m', '30m', '1h', '6h', '3d'].map((k) => stat({ label: `Burn ${k}`, value: fmt.number(s.burn_rates?.[k] ?? 0), raw: s.burn_rates?.[k], testid: `slo-burn-${k}` }))),
        s.last_alert_at ? h('p', { class: 'muted small' }, 'Last alert ', time(s.last_alert_at)) : null),
      section('Burn rate by day',
        h('p', { class: 'hint' }, '1 spends exactly the budget over the window; above 1 the budget runs out before the window ends.'),
        dailyChart({ dates, series: [{ label: 'Burn rate', values: series.map((p) => p.burn_rate), color: '--chart-errors' }], format: fmt.number, title: 'Burn rate', testid: 'slo-burn-chart', signal: ctx.signal }),
        dailyChart({ dates, series: [{ label: 'SLI', values: series.map((p) => p.sli), color: '--chart-calls' }], format: fmt.percent, title: 'SLI', testid: 'slo-sli-chart', signal: ctx.signal })),
      section('History',
        table({
          testid: 'slo-history', rowTestid: 'slo-event', rows: events,
          empty: 'No alerts yet.',
          columns: [
            { key: 'at', label: 'When', render: (e) => time(e.at) },
            { key: 'kind', label: 'Event', render: (e) => (e.kind === 'renotified' ? `still ${e.state}` : e.kind) },
            { key: 'budget', label: 'Budget left', render: (e) => (e.budget_remaining <= 0 ? 'spent' : `${fmt.number(e.budget_remaining * 100)}%`) },
            { key: 'burn', label: 'Burn 1 h / 6 h / 3 d', render: (e) => ['1h', '6h', '3d'].map((k) => fmt.number(e.burn_rates?.[k] ?? 0)).join(' / ') },
          ],
        })));
  });
}
