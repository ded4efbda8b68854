// Releases of one MCP (docs/releases.md): GET /v1/mcps/{id}/releases over
// the range, the comparison of two releases (default: the latest against
// the one before; ?base=&head= pick others) with its verdict and reasons,
// and the CI verdict of the head.

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as range from '../range.js';
import { mcpFrame } from '../mcp-frame.js';
import { h, load, section, table } from '../ui.js';

const kinds = (r) => (r.error_kinds || []).map((k) => `${k.error_kind} ${k.count}`).join(', ') || fmt.DASH;
const reasons = (rs) => h('ul', { class: 'reasons' }, (rs || []).map((r) => h('li', null, h('code', null, r.code), r.tool ? ` (${r.tool})` : '', `: ${r.message}`)));

export async function render(ctx) {
  const frame = mcpFrame(ctx, 'releases', { withRange: true, keep: ['base', 'head'], title: 'Releases' });
  await load(frame.content, async () => {
    const list = await api.get(api.path`/v1/mcps/${frame.mcpId}/releases`, range.apiQuery(frame.range), { signal: ctx.signal });
    const items = list.items || [];
    const out = [section('Releases', table({
      testid: 'releases-table', rowTestid: 'release-row', empty: 'No release in this range: items carry no server_version yet.',
      columns: [
        { key: 'server_version', label: 'Version', render: (r) => h('code', null, r.server_version) },
        { key: 'first_seen_at', label: 'First seen' },
        { key: 'last_seen_at', label: 'Last seen' },
        { key: 'calls', label: 'Calls', num: true },
        { key: 'errors', label: 'Errors', num: true },
        { key: 'error_rate', label: 'Error rate', num: true },
        { key: 'p95_ms', label: 'p95', num: true },
        { key: 'error_kinds', label: 'Error kinds', render: kinds },
      ],
      rows: items,
    }))];
    const q = {};
    for (const k of ['base', 'head']) if (ctx.query.get(k)) q[k] = ctx.query.get(k);
    try {
      const c = await api.get(api.path`/v1/mcps/${frame.mcpId}/releases/compare`, q, { signal: ctx.signal });
      const v = await api.get(api.path`/v1/mcps/${frame.mcpId}/releases/${c.head.server_version}/verdict`, {}, { signal: ctx.signal });
      out.push(comparison(c, v));
    } catch (err) {
      if (err?.status !== 404) throw err;
      out.push(section('Comparison', h('p', { class: 'empty', testid: 'release-compare-empty' }, err.detail || 'Two releases are needed to compare.')));
    }
    return out;
  }, { onError: (err) => frame.picker.showError(err) });
}

function side(name, s) {
  return h('p', null, h('strong', null, `${name} `), h('code', null, s.server_version),
    `: ${fmt.count(s.calls)} calls, ${fmt.percent(s.error_rate)} errors, p95 ${fmt.ms(s.p95_ms)}; window ${s.window_from.slice(0, 16)} to ${s.window_to.slice(0, 16)} UTC`);
}

function comparison(c, v) {
  return section('Comparison',
    h('p', { class: 'verdict' }, 'Verdict: ', h('strong', { testid: 'release-verdict', class: `verdict-${c.verdict}` }, c.verdict),
      ' · CI verdict of ', h('code', null, v.server_version), ': ', h('strong', { testid: 'release-ci-verdict' }, v.verdict)),
    side('Base', c.base), side('Head', c.head),
    reasons(c.reasons),
    table({
      testid: 'release-tools', rowTestid: 'release-tool-row', empty: 'No tool called in either window.',
      columns: [
        { key: 'name', label: 'Tool', render: (t) => h('code', null, t.name) },
        { key: 'verdict', label: 'Verdict', render: (t) => h('span', { class: `verdict-${t.verdict}` }, t.verdict) },
        { key: 'base_calls', label: 'Base calls', num: true, render: (t) => fmt.count(t.base.calls) },
        { key: 'base_rate', label: 'Base errors', num: true, render: (t) => fmt.percent(t.base.error_rate) },
        { key: 'head_calls', label: 'Head calls', num: true, render: (t) => fmt.count(t.head.calls) },
        { key: 'head_rate', label: 'Head errors', num: true, render: (t) => fmt.percent(t.head.error_rate) },
        { key: 'reasons', label: 'Reasons', render: (t) => reasons(t.reasons) },
      ],
      rows: c.tools || [],
    }));
}

