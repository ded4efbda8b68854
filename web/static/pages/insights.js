// Insights of one MCP: GET /v1/mcps/{id}/insights?from&to.
//
// Each list section is {parameters…, items: [...]} (INSIGHTS.md): the
// parameters (limit, min_calls, lookback_days) become the sentence under the
// section's title, so "tools with at least 10 calls" follows the API, and
// the items a full-width table. Known sections get their columns in a
// readable order; anything else is rendered by shape (an array of objects as
// a table whose headers are the union of the keys, an object as figures), so
// a new field or section from the API shows up without a dashboard change.

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

// What each known list says about itself, from its parameters; its columns
// in reading order (keys the API adds later are appended); and its empty text.
const LISTS = {
  slowest_tools: {
    about: (p) => `Tools with the highest p95 latency in this range (top ${p.limit ?? ''}).`,
    columns: ['name', 'calls', 'p50_ms', 'p95_ms'],
    empty: 'No tool calls with a measured duration in this range.',
  },
  failing_tools: {
    about: (p) => `Highest error rate among tools with at least ${p.min_calls ?? '?'} calls and one error (top ${p.limit ?? ''}).`,
    columns: ['name', 'calls', 'errors', 'error_rate'],
    empty: 'No tool failing often enough to rank.',
  },
  top_errors: {
    about: (p) => `The most frequent errors by method, name and error type (top ${p.limit ?? ''}).`,
    columns: ['error_type', 'method', 'name', 'count', 'last_message', 'last_seen_at'],
    empty: 'No errors in this range.',
  },
  clients: {
    about: (p) => `Clients by calls (top ${p.limit ?? ''}); shares are of all calls and sessions in the range.`,
    columns: ['client_name', 'client_version', 'protocol_versions', 'calls', 'call_share', 'sessions', 'session_share'],
    empty: 'No calls in this range.',
  },
  idle_tools: {
    about: (p) => `Tools called in the ${p.lookback_days ?? '?'} days before this range and not in it.`,
    columns: ['name', 'last_seen_at', 'calls_before'],
    empty: 'No tool went quiet.',
  },
};

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
        renderSection(key, d[key], { toolLink: key.endsWith('_tools') || key === 'top_errors' ? toolLink : null }));
    }));
  }, { onError: (err) => frame.picker.showError(err) });
}

/** A {parameters…, items} list as a sentence and a table; else by shape. */
function renderSection(key, value, opts) {
  if (!value || typeof value !== 'object' || Array.isArray(value) || !Array.isArray(value.items)) return renderValue(key, value, opts);
  const { items, ...params } = value;
  const known = LISTS[key];
  const about = known ? known.about(params)
    : Object.entries(params).map(([k, v]) => `${fmt.humanize(k)}: ${fmt.byKey(k, v)}`).join(' · ');
  return [
    about ? h('p', { class: 'muted small' }, about) : null,
    items.length ? renderValue(key, items, { ...opts, order: known?.columns })
      : h('p', { class: 'empty', testid: `insights-${key.replace(/_/g, '-')}-table-empty` }, known?.empty || 'Nothing in this range.'),
  ];
}

/** Renders any JSON value readably; see the file comment. */
export function renderValue(key, value, { toolLink, order } = {}) {
  if (value === null || value === undefined) {
    return h('p', { class: 'muted' }, key === 'nightly' ? 'Not computed yet.' : 'No data.');
  }
  if (Array.isArray(value)) {
    if (!value.length) return h('p', { class: 'muted' }, 'Nothing in this range.');
    if (value.every((v) => v && typeof v === 'object' && !Array.isArray(v))) {
      const keys = [];
      for (const row of value) for (const k of Object.keys(row)) if (!keys.includes(k)) keys.push(k);
      if (order) {
        const rank = (k) => (order.includes(k) ? order.indexOf(k) : order.length);
        keys.sort((a, b) => rank(a) - rank(b));
      } else {
        // Labels (names, types, versions) read best on the left, figures after.
        const isLabel = (k) => value.some((r) => typeof r[k] === 'string' && !fmt.looksLikeTimestamp(r[k]));
        keys.sort((a, b) => Number(isLabel(b)) - Number(isLabel(a)));
      }
      return table({
        rows: value,
        testid: `insights-${key.replace(/_/g, '-')}-table`,
        rowTestid: 'insights-row',
        columns: keys.map((k) => ({
          key: k,
          label: fmt.humanize(k),
          num: value.some((r) => typeof r[k] === 'number'),
          render: (row) => cell(k, row[k], toolLink, row),
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

function cell(key, v, toolLink, row) {
  // top_errors names a resource or prompt too: only a tools/call name is a tool.
  if (toolLink && (key === 'name' || key === 'tool') && typeof v === 'string' && v && (!row?.method || row.method === 'tools/call')) return toolLink(v);
  if (v === '' && /^(error_type|client_name|client_version)$/.test(key)) return h('span', { class: 'muted' }, 'not sent');
  if (v === '') return h('span', { class: 'muted' }, fmt.DASH);
  if (key === 'last_message' && typeof v === 'string') return h('span', { class: 'wrap' }, v);
  if (key === 'protocol_versions' && Array.isArray(v)) return v.length ? v.join(', ') : h('span', { class: 'muted' }, 'not sent');
  if (v && typeof v === 'object') return h('code', { class: 'wrap' }, JSON.stringify(v));
  return fmt.byKey(key, v);
}
