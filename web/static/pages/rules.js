// Alert rules of one MCP: GET /v1/mcps/{id}/rules, toggle (PATCH
// /v1/rules/{ruleId} {enabled}), snooze (PATCH {snoozed_until}: an hour, a
// day, until a date; null unsnoozes), delete, evaluate now (POST
// /v1/rules/{ruleId}/evaluate → {state, value, fired, resolved, deliveries}).

import * as api from '../api.js';
import * as inboxBadge from '../badge.js';
import * as fmt from '../format.js';
import * as store from '../store.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { h, load, table, time, badge, busy, problemBox, confirmDialog, toast } from '../ui.js';

export const METRICS = {
  error_rate: { label: 'Error rate', format: fmt.percent },
  errors: { label: 'Errors', format: fmt.count },
  calls: { label: 'Calls', format: fmt.count },
  p95_ms: { label: 'p95 latency', format: fmt.ms },
  p50_ms: { label: 'Median latency', format: fmt.ms },
  p99_ms: { label: 'p99 latency', format: fmt.ms },
  sessions: { label: 'Sessions', format: fmt.count },
  users: { label: 'Users', format: fmt.count },
  tool_changes: { label: 'Tool changes', format: fmt.count },
};

/** The format of a rule's value: a ratio ("0.42×") with a baseline. */
export function valueFormat(rule) {
  if (rule.baseline === 'week_ago') return (v) => `${fmt.number(v)}×`;
  return (METRICS[rule.metric] || { format: fmt.number }).format;
}

export const CHANNEL_LABELS = { in_app: 'In-app', email: 'Email', slack: 'Slack', discord: 'Discord' };

/** "Error rate > 5% over 10 min" */
export function describe(rule) {
  const m = METRICS[rule.metric] || { label: rule.metric, format: fmt.number };
  const window = rule.window_minutes >= 60 && rule.window_minutes % 60 === 0
    ? `${rule.window_minutes / 60} h` : `${rule.window_minutes} min`;
  const label = rule.baseline === 'week_ago' ? `${m.label} vs. a week ago` : m.label;
  let s = rule.baseline === 'seasonal'
    ? `${label} ${rule.comparator.startsWith('<') ? 'below' : 'above'} the usual for this hour of the week over ${window} (${rule.sensitivity || 'medium'} sensitivity)`
    : `${label} ${rule.comparator} ${valueFormat(rule)(rule.threshold)} over ${window}`;
  if (rule.min_calls > 0) s += `, at least ${fmt.count(rule.min_calls)} ${rule.min_calls === 1 ? 'call' : 'calls'}`;
  if (rule.notify_on_resolve) s += ', notifies on resolve';
  return s;
}

/** Whether the rule is snoozed now. */
export function snoozed(rule) {
  return !!rule.snoozed_until && new Date(rule.snoozed_until) > new Date();
}

export function stateBadge(state) {
  const tone = state === 'firing' ? 'bad' : state === 'ok' ? 'good' : 'neutral';
  return badge(state || 'unknown', tone, { testid: 'rule-state' });
}

export async function render(ctx) {
  const frame = mcpFrame(ctx, 'alerts', { title: 'Alerts' });
  const acct = await store.account().catch(() => null);
  const admin = store.isAdmin(acct) || !acct;
  const base = `/mcps/${router.seg(frame.mcpId)}/alerts`;

  await load(frame.content, async () => {
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/rules`, null, { signal: ctx.signal });
    const rules = Array.isArray(d.items) ? d.items : [];
    const list = h('div');
    const draw = () => list.replaceChildren(table({
      testid: 'rules-table',
      rowTestid: 'rule-row',
      rows: rules,
      empty: 'No alert rules yet. A rule watches a metric over a time window and tells the channels you pick when it crosses a threshold.',
      rowAttrs: (r) => ({ dataset: { ruleId: r.id } }),
      columns: [
        { key: 'name', label: 'Rule', render: (r) => h('div', null, h('a', { href: router.href(`${base}/${router.seg(r.id)}`), class: 'strong', testid: 'rule-link' }, r.name), h('div', { class: 'muted small' }, describe(r))) },
        { key: 'tool', label: 'Tool', render: (r) => (r.tool ? h('code', null, r.tool) : h('span', { class: 'muted' }, 'All tools')) },
        { key: 'channels', label: 'Channels', render: (r) => (r.channels || []).map((c) => CHANNEL_LABELS[c] || c).join(', ') || '—' },
        { key: 'state', label: 'State', render: stateCell },
        { key: 'enabled', label: 'Enabled', render: (r) => enabledToggle(r, admin) },
        { key: 'snooze', label: 'Snooze', render: (r) => snoozeControls(r, admin, draw) },
        { key: 'actions', label: '', render: (r) => actions(r, admin, base, () => { rules.splice(rules.indexOf(r), 1); draw(); }) },
      ],
    }));
    draw();
    return h('div', { class: 'card' },
      h('div', { class: 'card-head' }, h('h2', null, 'Alert rules'),
        admin ? h('a', { class: 'btn btn-primary', href: router.href(`${base}/new`), testid: 'rule-new' }, 'New rule') : h('span', { class: 'muted' }, 'Only owners and admins can change rules.')),
      list);
  });
}

function stateCell(rule) {
  return h('div', { class: 'rule-state-cell' }, stateBadge(rule.state),
    snoozed(rule) ? h('div', { class: 'small', testid: 'rule-snoozed' }, badge('snoozed', 'neutral'), ' until ', time(rule.snoozed_until)) : null,
    rule.last_fired_at ? h('div', { class: 'muted small' }, 'Last fired ', time(rule.last_fired_at)) : null);
}

// snoozeControls: an hour, a day, until a date, or unsnooze. Each PATCHes
// snoozed_until and redraws the row's state cell.
function snoozeControls(rule, admin, redraw) {
  if (!admin) return null;
  const msg = h('div', { class: 'inline-problem' });
  const patch = async (button, until) => {
    msg.replaceChildren();
    try {
      await busy(button, async () => {
        const updated = await api.patch(api.path`/v1/rules/${rule.id}`, { snoozed_until: until });
        Object.assign(rule, updated);
      });
      toast(until ? `Snoozed ${rule.name}.` : `Unsnoozed ${rule.name}.`, 'success');
      redraw();
    } catch (err) {
      msg.replaceChildren(problemBox(err));
    }
  };
  const after = (ms) => new Date(Date.now() + ms).toISOString();
  if (snoozed(rule)) {
    const un = h('button', { type: 'button', class: 'btn btn-small', testid: 'rule-unsnooze' }, 'Unsnooze');
    un.addEventListener('click', () => patch(un, null));
    return h('div', { class: 'snooze' }, un, msg);
  }
  const hour = h('button', { type: 'button', class: 'btn btn-small btn-ghost', testid: 'rule-snooze-hour' }, 'Snooze 1 h');
  const day = h('button', { type: 'button', class: 'btn btn-small btn-ghost', testid: 'rule-snooze-day' }, '1 day');
  const date = h('input', { type: 'date', class: 'input-small', testid: 'rule-snooze-date', 'aria-label': `Snooze ${rule.name} until` });
  const until = h('button', { type: 'button', class: 'btn btn-small btn-ghost', testid: 'rule-snooze-until' }, 'Until date');
  hour.addEventListener('click', () => patch(hour, after(3600e3)));
  day.addEventListener('click', () => patch(day, after(86400e3)));
  until.addEventListener('click', () => {
    // The end of the chosen day, in the browser's time zone.
    const d = date.value ? new Date(`${date.value}T23:59:59`) : null;
    if (!d || Number.isNaN(d.getTime()) || d <= new Date()) {
      msg.replaceChildren(h('p', { class: 'field-error' }, 'Pick a date from today on.'));
      return;
    }
    patch(until, d.toISOString());
  });
  return h('div', { class: 'snooze' }, hour, day, date, until, msg);
}

function enabledToggle(rule, admin) {
  const input = h('input', { type: 'checkbox', class: 'switch', checked: !!rule.enabled, disabled: !admin, testid: 'rule-enabled-toggle', 'aria-label': `Enable ${rule.name}` });
  const msg = h('div', { class: 'inline-problem' });
  input.addEventListener('change', async () => {
    const want = input.checked;
    msg.replaceChildren();
    try {
      await busy(input, async () => {
        const updated = await api.patch(api.path`/v1/rules/${rule.id}`, { enabled: want });
        Object.assign(rule, updated);
        input.checked = !!updated.enabled;
      });
    } catch (err) {
      input.checked = !want;
      msg.replaceChildren(problemBox(err));
    }
  });
  return h('div', null, input, msg);
}

function actions(rule, admin, base, onDeleted) {
  const result = h('div', { class: 'eval-result', testid: 'rule-evaluate-result', 'aria-live': 'polite' });
  const evaluate = h('button', { type: 'button', class: 'btn btn-small', testid: 'rule-evaluate' }, 'Evaluate now');
  evaluate.addEventListener('click', async () => {
    result.replaceChildren();
    try {
      const r = await busy(evaluate, () => api.post(api.path`/v1/rules/${rule.id}/evaluate`));
      const m = { format: valueFormat(rule) };
      rule.state = r.state;
      if (r.fired || r.deliveries > 0) {
        rule.last_fired_at = new Date().toISOString();
        // A firing with in-app delivery lands in the caller's inbox now, not
        // at the next 30 s poll.
        inboxBadge.refresh();
      }
      evaluate.closest('tr')?.querySelector('.rule-state-cell')?.replaceWith(stateCell(rule));
      result.replaceChildren(
        h('span', { dataset: { state: r.state, fired: String(!!r.fired), value: r.value === null || r.value === undefined ? '' : String(r.value) } },
          stateBadge(r.state), ' value ', h('strong', { testid: 'rule-evaluate-value' }, r.value === null || r.value === undefined ? 'n/a' : m.format(r.value)),
          r.fired ? h('span', { class: 'text-bad', testid: 'rule-evaluate-fired' }, ' · fired now')
            : r.resolved ? h('span', { class: 'text-good', testid: 'rule-evaluate-resolved' }, ' · resolved now')
              : h('span', { class: 'muted' }, ' · no change'),
          r.expected ? h('span', { class: 'muted', testid: 'rule-evaluate-expected' }, ` · expected ${m.format(r.expected.low)}–${m.format(r.expected.high)} at this hour`) : null,
          (r.fired || r.resolved) ? h('span', { class: 'muted', testid: 'rule-evaluate-deliveries' }, ` · ${r.deliveries || 0} deliveries`) : null));
    } catch (err) {
      result.replaceChildren(problemBox(err));
    }
  });
  const del = admin ? h('button', { type: 'button', class: 'btn btn-small btn-danger-ghost', testid: 'rule-delete' }, 'Delete') : null;
  del?.addEventListener('click', async () => {
    if (!await confirmDialog(`Delete the rule "${rule.name}"?`)) return;
    try {
      await busy(del, () => api.del(api.path`/v1/rules/${rule.id}`));
      toast(`Deleted ${rule.name}.`, 'success');
      onDeleted();
    } catch (err) {
      result.replaceChildren(problemBox(err));
    }
  });
  return h('div', null,
    h('div', { class: 'row-actions' },
      admin ? h('a', { class: 'btn btn-small btn-ghost', href: router.href(`${base}/${router.seg(rule.id)}`), testid: 'rule-edit' }, 'Edit') : null,
      evaluate, del),
    result);
}
