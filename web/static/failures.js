// Why agents fail (docs/failures.md): error kinds, unknown tools with the
// name they probably meant, refused arguments and answer sizes.

import * as api from './api.js';
import * as fmt from './format.js';
import { h, section, stat, table } from './ui.js';

/** A size in bytes, short: 812 B, 4.2 KB, 1.3 MB; — when null. */
export function bytes(v) {
  if (v === null || v === undefined) return '—';
  if (v < 1024) return `${Math.round(v)} B`;
  if (v < 1024 * 1024) return `${(v / 1024).toFixed(1)} KB`;
  return `${(v / (1024 * 1024)).toFixed(1)} MB`;
}

function kindsTable(kinds, testid) {
  return table({
    testid,
    rowTestid: `${testid}-row`,
    rows: Array.isArray(kinds) ? kinds : [],
    empty: 'No errors in this range.',
    columns: [
      { key: 'error_kind', label: 'Why it failed', render: (r) => h('code', null, r.error_kind) },
      { key: 'count', label: 'Errors', num: true, render: (r) => fmt.count(r.count) },
    ],
  });
}

/** The overview's failures card: kinds, counts of unknown-tool and repeated calls, and the unknown-tools table. */
export async function overviewFailures(mcpId, q, signal, d) {
  const u = await api.get(api.path`/v1/mcps/${mcpId}/unknown-tools`, { from: q.from, to: q.to }, { signal });
  return h('section', { class: 'card', testid: 'failures' },
    h('h2', null, 'Why agents fail'),
    h('div', { class: 'stats' },
      stat({ label: 'Calls of unknown tools', value: fmt.count(d.unknown_tool_calls), raw: d.unknown_tool_calls, testid: 'unknown-tool-calls', tone: d.unknown_tool_calls > 0 ? 'bad' : null }),
      stat({ label: 'Repeated calls', value: fmt.count(d.repeated_calls), raw: d.repeated_calls, testid: 'repeated-calls', hint: d.repeated_calls == null ? 'Too many events in the range to count: choose fewer days' : 'Same tool and arguments as the session\'s previous call' })),
    h('div', { class: 'grid-2' },
      section('Error kinds', kindsTable(d.error_kinds, 'error-kinds')),
      section('Tools agents asked for that do not exist', table({
        testid: 'unknown-tools',
        rowTestid: 'unknown-tool',
        rows: Array.isArray(u.items) ? u.items : [],
        empty: 'No unknown tools in this range.',
        columns: [
          { key: 'name', label: 'Asked for', render: (r) => h('code', null, r.name) },
          { key: 'closest', label: 'Probably meant', render: (r) => (r.closest ? h('code', { testid: 'unknown-tool-closest' }, r.closest) : h('span', { class: 'muted' }, '—')) },
          { key: 'calls', label: 'Calls', num: true, render: (r) => fmt.count(r.calls) },
          { key: 'sessions', label: 'Sessions', num: true, render: (r) => fmt.count(r.sessions) },
          { key: 'clients', label: 'Clients', render: (r) => (r.clients || []).map((c) => `${c.client_name || '(unknown)'} (${fmt.count(c.calls)})`).join(', ') || '—' },
        ],
      }))));
}

/** The tool page's failures: kinds, most frequent refusals, answer sizes and repeats. */
export function toolFailures(d) {
  return [
    h('div', { class: 'stats', testid: 'tool-sizes' },
      stat({ label: 'Answer p50', value: bytes(d.response_bytes_p50), raw: d.response_bytes_p50, testid: 'tool-response-p50' }),
      stat({ label: 'Answer p95', value: bytes(d.response_bytes_p95), raw: d.response_bytes_p95, testid: 'tool-response-p95' }),
      stat({ label: 'Largest answer', value: bytes(d.response_bytes_max), raw: d.response_bytes_max, testid: 'tool-response-max' }),
      stat({ label: 'Repeated calls', value: fmt.count(d.repeated_calls), raw: d.repeated_calls, testid: 'tool-repeated-calls' })),
    h('div', { class: 'grid-2' },
      section('Error kinds', kindsTable(d.error_kinds, 'tool-error-kinds')),
      section('Refused arguments', table({
        testid: 'tool-refusals',
        rowTestid: 'tool-refusal',
        rows: Array.isArray(d.refusals) ? d.refusals : [],
        empty: 'No refused arguments in this range.',
        columns: [
          { key: 'message', label: 'Validation message', render: (r) => h('span', { class: 'wrap' }, r.message || '—') },
          { key: 'count', label: 'Count', num: true, render: (r) => fmt.count(r.count) },
        ],
      }))),
  ];
}
