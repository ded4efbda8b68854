// Insights of one MCP: GET /v1/mcps/{id}/insights?from&to.
//
// The contract names the sections (slowest_tools, failing_tools, top_errors,
// clients, idle_tools, nightly) but not their shapes, so each is rendered by
// shape: an array of objects as a table whose headers are the union of the
// keys, an object as a list of figures, anything else as text. A new field or
// section from the API shows up without a dashboard change.

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as range from '../range.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { h, load, table } from '../ui.js';

const SECTIONS = [
  ['slowest_tools', 'Slowest tools'],
  ['failing_tools', 'Failing tools'],
  ['top_errors', 'Top errors'],
  ['clients', 'Clients'],
  ['idle_tools', 'Idle tools'],
  ['nightly', 'Engagement (nightly)'],
];
const META = new Set(['from', 'to', 'nightly_as_of', 'mcp_id']);

export async function render(ctx) {
  const frame = mcpFrame(ctx, 'insights', { withRange: true, title: 'Insights' });
  await load(frame.content, async () => {
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/insights`, range.apiQuery(frame.range), { signal: ctx.signal });
    const known = SECTIONS.map(([k]) => k);
    const extra = Object.keys(d || {}).filter((k) => !known.includes(k) && !META.has(k)).map((k) => [k, fmt.humanize(k)]);
    const toolLink = (name) => h('a', { href: router.href(`/mcps/${router.seg(frame.mcpId)}/tools/${router.seg(name)}`, frame.rangeQuery), class: 'strong' }, name);
    return h('div', { class: 'insights' }, [...SECTIONS, ...extra].map(([key, title]) => {
      const note = key === 'nightly'
        ? (d.nightly_as_of ? `As of ${d.nightly_as_of} (UTC)` : 'Not computed yet: the nightly pass has not run.')
        : null;
      return h('section', { class: 'card', testid: `insights-${key.replace(/_/g, '-')}` },
        h('div', { class: 'card-head' }, h('h2', null, title), note ? h('span', { class: 'muted', testid: key === 'nightly' ? 'insights-nightly-as-of' : null }, note) : null),
        renderValue(key, d[key], { toolLink: key.endsWith('_tools') ? toolLink : null }));
    }));
  }, { onError: (err) => frame.picker.showError(err) });
}

/** Renders any JSON value readably; see the file comment. */
export function renderValue(key, value, { toolLink } = {}) {
  if (value === null || value === undefined) {
    return h('p', { class: 'muted' }, key === 'nightly' ? 'Not computed yet.' : 'No data.');
  }
  if (Array.isArray(value)) {
    if (!value.length) return h('p', { class: 'muted' }, 'Nothing in this range.');
    if (value.every((v) => v && typeof v === 'object' && !Array.isArray(v))) {
      const keys = [];
      for (const row of value) for (const k of Object.keys(row)) if (!keys.includes(k)) keys.push(k);
      // Labels (names, types, versions) read best on the left, figures after.
      const isLabel = (k) => value.some((r) => typeof r[k] === 'string' && !fmt.looksLikeTimestamp(r[k]));
      keys.sort((a, b) => Number(isLabel(b)) - Number(isLabel(a)));
      return table({
        rows: value,
        testid: `insights-${key.replace(/_/g, '-')}-table`,
        rowTestid: 'insights-row',
        columns: keys.map((k) => ({
          key: k,
          label: fmt.humanize(k),
          num: value.some((r) => typeof r[k] === 'number'),
          render: (row) => cell(k, row[k], toolLink),
        })),
      });
    }
    return h('ul', { class: 'plain-list' }, value.map((v) => h('li', null, typeof v === 'object' ? JSON.stringify(v) : fmt.byKey(key, v))));
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value);
    if (!entries.length) return h('p', { class: 'muted' }, 'No data.');
    return h('dl', { class: 'figures' }, entries.map(([k, v]) => h('div', { class: 'figure' },
      h('dt', null, fmt.humanize(k)),
      h('dd', { 'data-value': v === null || typeof v === 'object' ? '' : String(v) },
        v && typeof v === 'object' ? renderValue(k, v) : fmt.byKey(k, v)))));
  }
  return h('p', null, fmt.byKey(key, value));
}

function cell(key, v, toolLink) {
  if (toolLink && (key === 'name' || key === 'tool') && typeof v === 'string' && v) return toolLink(v);
  if (v && typeof v === 'object') return h('code', { class: 'wrap' }, JSON.stringify(v));
  return fmt.byKey(key, v);
}
