// Create or edit an alert rule: POST /v1/mcps/{id}/rules, GET/PATCH
// /v1/rules/{ruleId}. Per-field problems from the API (errors[].location,
// e.g. body.window_minutes) appear under the matching input. An existing
// rule's page also shows its history (GET /v1/rules/{ruleId}/events) as a
// timeline.

import * as api from '../api.js';
import * as store from '../store.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { dailyChart } from '../charts.js';
import { METRICS, CHANNEL_LABELS, stateBadge, describe, valueFormat, snoozed } from './rules.js';
import { h, field, checkbox, formProblem, onSubmit, load, fieldError, toast, section, time, badge, busy, problemBox } from '../ui.js';

const COMPARATORS = ['>', '>=', '<', '<='];
const CHANNELS = ['in_app', 'email', 'slack', 'discord'];
const HINTS = {
  error_rate: 'A fraction of calls: 0.05 means 5%.',
  errors: 'Number of failed calls in the window.',
  calls: 'Number of calls in the window (use < to catch an MCP going quiet).',
  p95_ms: '95th percentile latency in milliseconds.',
  p50_ms: 'Median latency in milliseconds.',
  p99_ms: '99th percentile latency in milliseconds.',
  sessions: 'Distinct sessions in the window.',
  users: 'Distinct users in the window (the session when a call has no user id).',
  tool_changes: 'Tools added, removed or whose schema changed in the window (from the tool inventory the SDKs report); > 0 alerts on any change.',
};
const SEASONAL_HINT = 'With a seasonal baseline the threshold is ignored: the rule fires when the value leaves the band learnt from the same hour of the week over the last four weeks, in the comparator\'s direction (needs two weeks of history).';
const RATIO_HINT = 'With a week-ago baseline the threshold is a ratio: 0.5 means half of the same window last week, 2 means double.';

export async function render(ctx) {
  const ruleId = ctx.params.ruleId || null;
  const frame = mcpFrame(ctx, 'alerts', { title: ruleId ? 'Edit rule' : 'New rule' });
  const back = router.href(`/mcps/${router.seg(frame.mcpId)}/alerts`);

  await load(frame.content, async () => {
    const [rule, tools, channels, acct] = await Promise.all([
      ruleId ? api.get(api.path`/v1/rules/${ruleId}`, null, { signal: ctx.signal }) : null,
      // Suggestions only: a failure here must not block the form.
      api.get(api.path`/v1/mcps/${frame.mcpId}/tools`, null, { signal: ctx.signal, quiet: true }).then((d) => d.items || []).catch(() => []),
      api.get('/v1/account/channels', null, { signal: ctx.signal, quiet: true }).catch(() => null),
      store.account().catch(() => null),
    ]);
    return h('div', { class: 'grid-2 grid-wide-first' },
      section(ruleId ? `Edit “${rule.name}”` : 'New alert rule', buildForm(frame.mcpId, rule, tools, channels, back)),
      section('How rules work',
        rule ? h('p', null, 'Current state: ', stateBadge(rule.state), h('br'), h('span', { class: 'muted' }, describe(rule))) : null,
        rule && snoozed(rule) ? h('p', { testid: 'rule-form-snoozed' }, badge('snoozed', 'neutral'), ' until ', time(rule.snoozed_until), ': transitions are recorded but nobody is notified.') : null,
        h('p', null, 'The evaluator checks every enabled rule each minute over its window. A rule fires once when it goes from ok to firing, and resolves when the condition stops holding.'),
        h('p', null, 'In-app and email reach each team member whose own preferences allow them. Slack and Discord post once to the team channel an admin connected; naming one that is not connected is allowed and simply delivers nothing there.'),
        h('p', null, 'Minimum calls keeps quiet windows from alarming on error and latency metrics. A week-ago baseline compares the window with the same window seven days earlier; with nothing a week ago the rule keeps its state.'),
        store.isAdmin(acct) || !acct ? null : h('p', { class: 'notice' }, 'Only owners and admins can save rules.')),
      rule ? section('History', history(rule, ctx.signal)) : null);
  });
}

// history: the rule's transitions, newest first, as a timeline; "Older"
// loads the next page.
function history(rule, signal) {
  const list = h('ol', { class: 'timeline', testid: 'rule-history' });
  const more = h('button', { type: 'button', class: 'btn btn-small', testid: 'rule-history-more', hidden: true }, 'Older');
  const msg = h('div');
  const chart = h('div', { testid: 'rule-band' });
  const banded = [];
  const format = valueFormat(rule);
  let cursor = '';
  const page = async () => {
    msg.replaceChildren();
    try {
      const d = await busy(more, () => api.get(api.path`/v1/rules/${rule.id}/events`, { limit: 20, cursor: cursor || null }, { signal }));
      const items = Array.isArray(d.items) ? d.items : [];
      for (const e of items) {
        list.append(h('li', { class: ['timeline-item', e.kind === 'fired' ? 'fired' : 'resolved'], testid: 'rule-event', dataset: { kind: e.kind } },
          badge(e.kind, e.kind === 'fired' ? 'bad' : 'good'), ' ', time(e.at),
          h('span', { class: 'muted' }, ' · value ', e.value === null || e.value === undefined ? 'n/a' : format(e.value),
            e.expected ? ` · expected ${format(e.expected.low)}–${format(e.expected.high)} at this hour` : [' · threshold ', format(e.threshold)])));
        if (e.expected) banded.push(e);
      }
      if (banded.length) chart.replaceChildren(bandChart(banded, format, signal));
      if (!list.children.length) list.replaceWith(h('p', { class: 'empty', testid: 'rule-history-empty' }, 'No transitions yet: the rule has never fired.'));
      cursor = d.next_cursor || '';
      more.hidden = !cursor;
    } catch (err) {
      msg.replaceChildren(problemBox(err));
    }
  };
  more.addEventListener('click', page);
  page();
  return h('div', null, chart, list, more, msg);
}

// bandChart: a seasonal rule's value at each transition against the band
// it expected then (oldest first).
function bandChart(events, format, signal) {
  const ev = [...events].reverse();
  return dailyChart({
    starts: ev.map((e) => e.at), format, title: 'Value and expected band at each transition', testid: 'rule-band-chart', signal,
    series: [
      { label: 'Value', values: ev.map((e) => e.value), color: '--chart-errors' },
      { label: 'Expected low', values: ev.map((e) => e.expected.low), color: '--chart-calls' },
      { label: 'Expected high', values: ev.map((e) => e.expected.high), color: '--chart-calls' },
    ],
  });
}

function buildForm(mcpId, rule, tools, channels, back) {
  const metric = rule?.metric || 'error_rate';
  const connected = Object.fromEntries((channels?.channels || []).map((c) => [c.id, c.connected]));
  const hint = h('p', { class: 'hint', testid: 'rule-threshold-hint' }, HINTS[metric]);

  const toolList = h('datalist', { id: 'rule-tools' }, tools.map((t) => h('option', { value: t.name })));
  const form = h('form', { class: 'form', testid: 'rule-form', novalidate: true },
    field({ label: 'Name', name: 'name', required: true, value: rule?.name || '', testid: 'rule-name', placeholder: 'Search errors spike' }),
    h('div', { class: 'form-row' },
      field({ label: 'Metric', name: 'metric', type: 'select', value: metric, testid: 'rule-metric', optionalLabel: false, options: Object.entries(METRICS).map(([value, m]) => ({ value, label: m.label })) }),
      field({ label: 'Comparator', name: 'comparator', type: 'select', value: rule?.comparator || '>', testid: 'rule-comparator', optionalLabel: false, options: COMPARATORS.map((c) => ({ value: c, label: c })) }),
      h('div', { class: 'field' },
        h('label', { for: 'rule-threshold' }, 'Threshold'),
        h('input', { id: 'rule-threshold', name: 'threshold', type: 'number', step: 'any', required: true, value: rule ? String(rule.threshold) : '0.05', testid: 'rule-threshold', 'aria-describedby': 'rule-threshold-hint' }),
        hint)),
    h('div', { class: 'form-row' },
      field({ label: 'Window (minutes)', name: 'window_minutes', type: 'number', min: 1, max: 1440, step: 1, required: true, value: String(rule?.window_minutes ?? 5), testid: 'rule-window', hint: 'From 1 to 1440 (one day).' }),
      field({ label: 'Tool', name: 'tool', value: rule?.tool || '', testid: 'rule-tool', hint: 'Leave empty to watch all tools.', attrs: { list: 'rule-tools', autocomplete: 'off' } })),
    toolList,
    h('fieldset', { class: 'field checks', testid: 'rule-channels' },
      h('legend', null, 'Channels'),
      CHANNELS.map((c) => checkbox({
        label: [CHANNEL_LABELS[c], channels && (c === 'slack' || c === 'discord') && !connected[c] ? h('span', { class: 'muted small' }, ' (not connected)') : null],
        name: 'channels', value: c, checked: rule ? (rule.channels || []).includes(c) : c === 'in_app', testid: `rule-channel-${c}`,
      }))),
    h('div', { class: 'form-row' },
      field({ label: 'Minimum calls', name: 'min_calls', type: 'number', min: 0, step: 1, value: String(rule?.min_calls ?? 0), testid: 'rule-min-calls', hint: 'Error and latency metrics keep the rule\'s state on a window with fewer calls.' }),
      field({ label: 'Compare with', name: 'baseline', type: 'select', value: rule?.baseline || '', testid: 'rule-baseline', optionalLabel: false,
        options: [{ value: '', label: 'The threshold itself' }, { value: 'week_ago', label: 'The same window a week ago (ratio)' },
          { value: 'seasonal', label: 'What is usual at this hour of the week (learnt)' }] }),
      field({ label: 'Sensitivity', name: 'sensitivity', type: 'select', value: rule?.sensitivity || 'medium', testid: 'rule-sensitivity', optionalLabel: false,
        hint: 'Seasonal rules only: how far outside the usual band a value must be to fire.',
        options: [{ value: 'low', label: 'Low (fewest alarms)' }, { value: 'medium', label: 'Medium' }, { value: 'high', label: 'High (most alarms)' }] }),
      field({ label: 'Remind every (minutes)', name: 'renotify_minutes', type: 'number', min: 5, max: 10080, step: 1, value: rule?.renotify_minutes == null ? '' : String(rule.renotify_minutes), testid: 'rule-renotify', hint: 'While firing, deliver again every so many minutes (5 or more). Empty: once.' })),
    checkbox({ label: 'Notify when resolved', name: 'notify_on_resolve', checked: !!rule?.notify_on_resolve, testid: 'rule-notify-on-resolve', hint: 'Send the same people a notice when the rule goes back to ok.' }),
    checkbox({ label: 'Enabled', name: 'enabled', checked: rule ? !!rule.enabled : true, testid: 'rule-enabled' }),
    formProblem(),
    h('div', { class: 'actions' },
      h('a', { class: 'btn', href: back, testid: 'rule-cancel' }, 'Cancel'),
      h('button', { type: 'submit', class: 'btn btn-primary', testid: 'rule-submit' }, rule ? 'Save rule' : 'Create rule')));

  const setHint = () => {
    const m = form.querySelector('[name=metric]').value;
    const b = form.querySelector('[name=baseline]').value;
    hint.textContent = b === 'seasonal' ? SEASONAL_HINT : b ? RATIO_HINT : (HINTS[m] || '');
    form.querySelector('[name=sensitivity]').disabled = b !== 'seasonal';
  };
  form.querySelector('[name=metric]').addEventListener('change', setHint);
  form.querySelector('[name=baseline]').addEventListener('change', setHint);
  setHint();

  onSubmit(form, async () => {
    const body = readForm(form);
    if (!body) return;
    if (rule) await api.patch(api.path`/v1/rules/${rule.id}`, body);
    else await api.post(api.path`/v1/mcps/${mcpId}/rules`, body);
    toast(rule ? 'Rule saved.' : 'Rule created.', 'success');
    router.navigate(back);
  });
  return form;
}

/** Reads and checks the form; on a client-side problem marks it and returns null. */
function readForm(form) {
  const get = (n) => form.querySelector(`[name=${n}]`);
  const name = get('name').value;
  const threshold = get('threshold').value.trim();
  const windowMinutes = get('window_minutes').value.trim();
  const channels = [...form.querySelectorAll('[name=channels]:checked')].map((c) => c.value);
  const fail = (fieldName, message) => { fieldError(form, fieldName, message); return null; };
  if (!name.trim()) return fail('name', 'Give the rule a name.');
  if (threshold === '' || !Number.isFinite(Number(threshold))) return fail('threshold', 'Enter a number.');
  const w = Number(windowMinutes);
  if (!Number.isInteger(w) || w < 1 || w > 1440) return fail('window_minutes', 'Enter whole minutes from 1 to 1440.');
  if (!channels.length) return fail('channels', 'Pick at least one channel.');
  const minCalls = Number(get('min_calls').value.trim() || '0');
  if (!Number.isInteger(minCalls) || minCalls < 0) return fail('min_calls', 'Enter a whole number of calls, 0 or more.');
  const renotifyText = get('renotify_minutes').value.trim();
  const renotify = renotifyText === '' ? null : Number(renotifyText);
  if (renotify !== null && (!Number.isInteger(renotify) || renotify < 5 || renotify > 10080)) return fail('renotify_minutes', 'Enter whole minutes from 5 to 10080, or leave it empty.');
  const tool = get('tool').value;
  return {
    name,
    metric: get('metric').value,
    tool: tool === '' ? null : tool,
    comparator: get('comparator').value,
    threshold: Number(threshold),
    window_minutes: w,
    channels,
    enabled: get('enabled').checked,
    min_calls: minCalls,
    baseline: get('baseline').value || null,
    sensitivity: get('baseline').value === 'seasonal' ? get('sensitivity').value : null,
    notify_on_resolve: get('notify_on_resolve').checked,
    renotify_minutes: renotify,
  };
}
