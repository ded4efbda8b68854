// Create or edit an alert rule: POST /v1/mcps/{id}/rules, GET/PATCH
// /v1/rules/{ruleId}. Per-field problems from the API (errors[].location,
// e.g. body.window_minutes) appear under the matching input.

import * as api from '../api.js';
import * as store from '../store.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { METRICS, CHANNEL_LABELS, stateBadge, describe } from './rules.js';
import { h, field, checkbox, formProblem, onSubmit, load, fieldError, toast, section } from '../ui.js';

const COMPARATORS = ['>', '>=', '<', '<='];
const CHANNELS = ['in_app', 'email', 'slack', 'discord'];
const HINTS = {
  error_rate: 'A fraction of calls: 0.05 means 5%.',
  errors: 'Number of failed calls in the window.',
  calls: 'Number of calls in the window (use < to catch an MCP going quiet).',
  p95_ms: '95th percentile latency in milliseconds.',
};

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
        h('p', null, 'The evaluator checks every enabled rule each minute over its window. A rule fires once when it goes from ok to firing, and resolves when the condition stops holding.'),
        h('p', null, 'In-app and email reach each team member whose own preferences allow them. Slack and Discord post once to the team channel an admin connected; naming one that is not connected is allowed and simply delivers nothing there.'),
        store.isAdmin(acct) || !acct ? null : h('p', { class: 'notice' }, 'Only owners and admins can save rules.')));
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
    checkbox({ label: 'Enabled', name: 'enabled', checked: rule ? !!rule.enabled : true, testid: 'rule-enabled' }),
    formProblem(),
    h('div', { class: 'actions' },
      h('a', { class: 'btn', href: back, testid: 'rule-cancel' }, 'Cancel'),
      h('button', { type: 'submit', class: 'btn btn-primary', testid: 'rule-submit' }, rule ? 'Save rule' : 'Create rule')));

  form.querySelector('[name=metric]').addEventListener('change', (e) => { hint.textContent = HINTS[e.target.value] || ''; });

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
  };
}
