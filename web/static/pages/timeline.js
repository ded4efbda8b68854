// One session's timeline: GET /v1/mcps/{id}/sessions/{session_id}, items
// oldest first, drawn as a waterfall (each call a bar placed at its start
// within the session and as wide as its duration; errors in red, with
// their type and message). "Load more" follows next_cursor. The whole
// session is shown, whatever the range the sessions list had.

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { h, load, stat, time } from '../ui.js';

export const PAGE_SIZE = 200;

export async function render(ctx) {
  const sessionId = ctx.params.sessionId;
  const frame = mcpFrame(ctx, 'sessions', { title: 'Session' });
  const path = api.path`/v1/mcps/${frame.mcpId}/sessions/${sessionId}`;
  await load(frame.content, async () => {
    const d = await api.get(path, { limit: PAGE_SIZE }, { signal: ctx.signal });
    const start = Date.parse(d.started_at);
    const items = [...(d.items || [])];
    // The scale spans the session: from its first item to the end of its
    // longest-running call.
    const endOf = (it) => Date.parse(it.timestamp) + (it.duration_ms || 0);
    let end = Math.max(Date.parse(d.last_seen_at), ...items.map(endOf));
    const rows = h('div', { class: 'waterfall', testid: 'timeline', role: 'list' });
    const more = h('button', { type: 'button', class: 'btn', testid: 'timeline-more', hidden: !d.next_cursor }, 'Load more');
    let cursor = d.next_cursor;
    const draw = () => {
      const span = Math.max(1, end - start);
      rows.replaceChildren(...items.map((it, i) => row(it, i, start, span)));
    };
    more.addEventListener('click', async () => {
      more.disabled = true;
      try {
        const p = await api.get(path, { limit: PAGE_SIZE, cursor }, { signal: ctx.signal });
        items.push(...(p.items || []));
        end = Math.max(end, ...items.map(endOf));
        cursor = p.next_cursor;
        more.hidden = !cursor;
        draw();
      } finally {
        more.disabled = false;
      }
    });
    draw();
    return [
      h('div', { class: 'crumbs' },
        h('a', { href: router.href(`/mcps/${router.seg(frame.mcpId)}/sessions`, frame.rangeQuery), testid: 'timeline-back' }, '← All sessions'),
        h('h2', { class: 'tool-name', testid: 'timeline-session' }, h('code', null, d.session_id))),
      h('div', { class: 'stats timeline-stats' },
        stat({ label: 'Calls', value: fmt.count(d.calls), raw: d.calls, testid: 'timeline-calls' }),
        stat({ label: 'Errors', value: fmt.count(d.errors), raw: d.errors, testid: 'timeline-errors', tone: d.errors > 0 ? 'bad' : null }),
        stat({ label: 'Started', value: time(d.started_at), raw: d.started_at, testid: 'timeline-started' }),
        stat({ label: 'Last seen', value: time(d.last_seen_at), raw: d.last_seen_at, testid: 'timeline-last-seen' }),
        stat({ label: 'Client', value: d.client_name ? `${d.client_name}${d.client_version ? ` ${d.client_version}` : ''}` : '—', raw: d.client_name, testid: 'timeline-client' }),
        stat({ label: 'User', value: d.user_id || '—', raw: d.user_id, testid: 'timeline-user' })),
      h('section', { class: 'card' }, h('h2', null, 'Calls in order'), rows, h('div', { class: 'pager' }, more)),
    ];
  });
}

function offset(ms) {
  if (ms < 1000) return `+${Math.round(ms)} ms`;
  if (ms < 120000) return `+${(ms / 1000).toFixed(1)} s`;
  return `+${(ms / 60000).toFixed(1)} min`;
}

function row(it, i, start, span) {
  const at = Date.parse(it.timestamp) - start;
  const left = (100 * at) / span;
  const width = it.duration_ms ? Math.max(0.3, (100 * it.duration_ms) / span) : 0.3;
  return h('div', {
    class: 'wf-row', role: 'listitem', testid: 'timeline-row',
    dataset: { index: String(i), status: it.status, method: it.method, name: it.name ?? '', timestamp: it.timestamp, repeat: String(it.repeat || 0) },
  },
  h('span', { class: 'muted num', title: it.timestamp }, offset(at)),
  h('span', { class: 'bar-label', title: `${it.method}${it.name ? ` ${it.name}` : ''}` },
    it.name ? h('code', null, it.name) : h('span', { class: 'muted' }, it.method),
    it.repeat > 0 ? h('span', { class: 'badge text-bad', testid: 'timeline-repeat', title: 'Same tool and arguments as the previous call' }, ` repeat ${it.repeat}`) : null,
    it.response_bytes !== null && it.response_bytes !== undefined ? h('span', { class: 'muted', testid: 'timeline-size' }, ` ${it.response_bytes} B`) : null),
  h('div', { class: 'wf-track' },
    h('div', { class: 'wf-bar', style: `left: ${Math.min(left, 99.7)}%; width: ${Math.min(width, 100 - Math.min(left, 99.7))}%` })),
  h('span', { class: 'num' }, it.duration_ms === null || it.duration_ms === undefined ? '—' : fmt.ms(it.duration_ms)),
  it.status === 'error'
    ? h('div', { class: 'wf-error text-bad', testid: 'timeline-error' }, `${it.error_type || 'Error'}${it.error_message ? `: ${it.error_message}` : ''}`)
    : null,
  it.error_kind ? h('div', { class: 'wf-error muted', testid: 'timeline-error-kind' }, `Why: ${it.error_kind}`) : null);
}
