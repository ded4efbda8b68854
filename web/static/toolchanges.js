// Tool changes graded (docs/tool-changes.md): each inventory change with
// its severity and reasons; "Details" loads GET
// /v1/mcps/{id}/inventory/changes/{change_id}: the clients it hit, the
// tool's calls before and after it, and the diff of its definitions.

import * as api from './api.js';
import * as fmt from './format.js';
import { h, load, time, badge } from './ui.js';

const KIND_TONES = { added: 'good', removed: 'bad', changed: 'bad' };
const SEVERITY_TONES = { breaking: 'bad', risky: 'warn', benign: 'neutral' };

function windowText(w) {
  const kinds = Object.entries(w.error_kinds || {}).map(([k, n]) => `${k} ${fmt.count(n)}`).join(', ');
  return `${fmt.count(w.calls)} calls, ${fmt.count(w.errors)} errors (${fmt.percent(w.error_rate)})${kinds ? `: ${kinds}` : ''}`;
}

function detailView(d) {
  const clients = d.affected_clients || [];
  return h('div', { class: 'change-detail', testid: 'change-detail' },
    h('p', null, h('strong', null, 'Clients that called it in the 7 days before: '),
      clients.length
        ? h('span', { testid: 'change-clients' }, clients.map((c) => `${c.client_name || '(unnamed)'} (${fmt.count(c.calls_before)} calls)`).join(', '))
        : h('span', { class: 'muted', testid: 'change-clients' }, 'none')),
    h('p', { testid: 'change-before' }, h('strong', null, 'Before: '), windowText(d.before)),
    h('p', { testid: 'change-after' }, h('strong', null, 'After: '), windowText(d.after)),
    d.diff ? h('pre', { class: 'diff', testid: 'change-diff' }, d.diff) : h('p', { class: 'muted' }, 'No definition reported.'));
}

/** One change of the timeline, with its grade and a details toggle. */
function changeItem(mcpId, c, signal) {
  const detail = h('div');
  const button = c.id
    ? h('button', { type: 'button', class: 'link', testid: 'change-details', onclick: () => {
      if (detail.childElementCount) { detail.replaceChildren(); return; }
      load(detail, async () => detailView(await api.get(api.path`/v1/mcps/${mcpId}/inventory/changes/${c.id}`, {}, { signal })));
    } }, 'Details')
    : null;
  return h('li', { class: 'timeline-item', testid: 'inventory-change', dataset: { kind: c.kind, severity: c.severity || '' } },
    time(c.at), ' ', badge(c.kind, KIND_TONES[c.kind] || 'neutral'), ' ', h('code', null, c.tool),
    c.server_version ? h('span', { class: 'muted' }, ` in ${c.server_version}`) : '',
    c.severity ? [' ', badge(c.severity, SEVERITY_TONES[c.severity] || 'neutral', { dataset: { testid: 'change-severity' } })] : '',
    ' ', button,
    (c.reasons || []).length
      ? h('ul', { class: 'change-reasons', testid: 'change-reasons' }, c.reasons.map((r) => h('li', { dataset: { code: r.code } }, h('code', null, r.code), ' ', r.message)))
      : null,
    detail);
}

/** The range's changes, newest first. */
export function changesList(mcpId, changes, signal) {
  return changes.length
    ? h('ol', { class: 'timeline', testid: 'inventory-changes' }, changes.map((c) => changeItem(mcpId, c, signal)))
    : h('p', { class: 'muted', testid: 'inventory-changes-empty' }, 'No change in this range.');
}
