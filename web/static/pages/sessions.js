// Sessions of one MCP: GET /v1/mcps/{id}/sessions?from&to&limit&cursor,
// newest first; each session links to its timeline (timeline.js). The cursor is in the URL, so the browser's Back button goes
// to the previous page and a page can be shared.

import * as api from '../api.js';
import * as fmt from '../format.js';
import * as range from '../range.js';
import * as router from '../router.js';
import { mcpFrame } from '../mcp-frame.js';
import { exportBar } from '../export.js';
import { h, load, table, time } from '../ui.js';

export const PAGE_SIZE = 50;

export async function render(ctx) {
  const frame = mcpFrame(ctx, 'sessions', { withRange: true, title: 'Sessions' });
  frame.content.before(exportBar(frame));
  const cursor = ctx.query.get('cursor') || '';
  const pageNo = Math.max(1, Number.parseInt(ctx.query.get('page') || '1', 10) || 1);
  const here = ctx.url.pathname.slice(router.BASE.length);

  await load(frame.content, async () => {
    const d = await api.get(api.path`/v1/mcps/${frame.mcpId}/sessions`, { ...range.apiQuery(frame.range), limit: PAGE_SIZE, cursor }, { signal: ctx.signal });
    const items = Array.isArray(d.items) ? d.items : [];
    const next = d.next_cursor || null;
    return h('div', { class: 'card' },
      table({
        testid: 'sessions-table',
        rowTestid: 'session-row',
        rows: items,
        empty: cursor ? 'No more sessions.' : 'No sessions in this range.',
        rowAttrs: (s) => ({ dataset: { sessionId: s.session_id } }),
        columns: [
          {
            key: 'session_id', label: 'Session', render: (s) => h('a', {
              href: router.href(`/mcps/${router.seg(frame.mcpId)}/sessions/${router.seg(s.session_id)}`, frame.rangeQuery), testid: 'session-link',
            }, h('code', { class: 'wrap' }, s.session_id)),
          },
          { key: 'started_at', label: 'Started', render: (s) => time(s.started_at) },
          { key: 'last_seen_at', label: 'Last seen', render: (s) => time(s.last_seen_at) },
          { key: 'calls', label: 'Calls', num: true, render: (s) => fmt.count(s.calls) },
          { key: 'errors', label: 'Errors', num: true, render: (s) => (s.errors > 0 ? h('span', { class: 'text-bad' }, fmt.count(s.errors)) : fmt.count(s.errors)) },
          { key: 'client', label: 'Client', render: (s) => (s.client_name ? `${s.client_name}${s.client_version ? ` ${s.client_version}` : ''}` : h('span', { class: 'muted' }, '—')) },
          { key: 'user_id', label: 'User', render: (s) => s.user_id || h('span', { class: 'muted' }, '—') },
        ],
      }),
      h('div', { class: 'pager' },
        cursor ? h('a', { class: 'btn', href: router.href(here, frame.rangeQuery), testid: 'sessions-first' }, '« Newest') : h('span'),
        h('span', { class: 'muted', testid: 'sessions-page' }, `Page ${pageNo}`),
        h('button', {
          type: 'button', class: 'btn', testid: 'sessions-next', disabled: !next,
          onclick: () => router.navigate(router.href(here, { ...frame.rangeQuery, cursor: next, page: pageNo + 1 })),
        }, 'Older »')));
  }, { onError: (err) => frame.picker.showError(err) });
}
