// Inbox: GET /v1/account/inbox?unread&limit&cursor (newest first) and POST
// /v1/account/inbox/read with {ids} or {all: true}. The filter and cursor are
// in the URL; every answer's unread_count updates the header badge.

import * as api from '../api.js';
import * as badge from '../badge.js';
import * as router from '../router.js';
import { h, load, pageHeader, time, busy, problemBox, toast } from '../ui.js';

export const PAGE_SIZE = 25;

export async function render(ctx) {
  const unread = ctx.query.get('unread') === '1';
  const cursor = ctx.query.get('cursor') || '';
  const list = h('div', { class: 'card' });
  const count = h('span', { class: 'muted', testid: 'inbox-unread-count' });
  const markAll = h('button', { type: 'button', class: 'btn', testid: 'inbox-mark-all-read' }, 'Mark all read');
  const markAllMsg = h('div');

  ctx.root.append(
    pageHeader('Inbox', count, markAll),
    markAllMsg,
    h('div', { class: 'segmented', role: 'group', 'aria-label': 'Filter' },
      h('a', { class: 'seg-btn', href: router.href('/inbox'), 'aria-pressed': String(!unread), testid: 'inbox-filter-all' }, 'All'),
      h('a', { class: 'seg-btn', href: router.href('/inbox', { unread: '1' }), 'aria-pressed': String(unread), testid: 'inbox-filter-unread' }, 'Unread')),
    list);

  const showCount = (n) => {
    count.textContent = `${n} unread`;
    count.dataset.value = String(n);
    markAll.disabled = n === 0;
    badge.set(n);
  };

  markAll.addEventListener('click', async () => {
    markAllMsg.replaceChildren();
    try {
      const r = await busy(markAll, () => api.post('/v1/account/inbox/read', { all: true }));
      toast(r.updated === 1 ? 'Marked 1 item read.' : `Marked ${r.updated ?? 0} items read.`, 'success');
      showCount(0);
      badge.refresh();
      if (unread) list.querySelectorAll('[data-testid="inbox-item"]').forEach((li) => li.remove());
      list.querySelectorAll('[data-testid="inbox-item"]').forEach(markedRead);
      if (unread && !list.querySelector('[data-testid="inbox-item"]')) list.replaceChildren(h('p', { class: 'empty' }, 'No unread items.'));
    } catch (err) {
      markAllMsg.replaceChildren(problemBox(err));
    }
  });

  await load(list, async () => {
    const d = await api.get('/v1/account/inbox', { unread: unread ? 'true' : null, limit: PAGE_SIZE, cursor }, { signal: ctx.signal });
    const items = Array.isArray(d.items) ? d.items : [];
    let unreadCount = typeof d.unread_count === 'number' ? d.unread_count : items.filter((i) => !i.read).length;
    showCount(unreadCount);
    const onRead = () => { unreadCount = Math.max(0, unreadCount - 1); showCount(unreadCount); };
    const next = d.next_cursor || null;
    return [
      items.length
        ? h('ul', { class: 'inbox', testid: 'inbox-list' }, items.map((item) => inboxItem(item, onRead)))
        : h('p', { class: 'empty', testid: 'inbox-empty' }, unread ? 'No unread items.' : 'Nothing here yet. Alerts from rules that name in-app delivery appear here.'),
      h('div', { class: 'pager' },
        cursor ? h('a', { class: 'btn', href: router.href('/inbox', { unread: unread ? '1' : null }), testid: 'inbox-first' }, '« Newest') : h('span'),
        h('button', {
          type: 'button', class: 'btn', testid: 'inbox-next', disabled: !next,
          onclick: () => router.navigate(router.href('/inbox', { unread: unread ? '1' : null, cursor: next })),
        }, 'Older »')),
    ];
  });
}

function markedRead(li) {
  li.classList.remove('unread');
  li.dataset.read = 'true';
  li.querySelector('[data-testid="inbox-mark-read"]')?.remove();
  li.querySelector('.dot')?.remove();
}

function inboxItem(item, onRead) {
  const msg = h('div');
  const mark = item.read ? null : h('button', { type: 'button', class: 'btn btn-small', testid: 'inbox-mark-read' }, 'Mark read');
  const li = h('li', { class: ['inbox-item', item.read ? null : 'unread'], testid: 'inbox-item', dataset: { id: item.id, read: String(!!item.read) } },
    h('div', { class: 'inbox-main' },
      h('div', { class: 'inbox-title' }, item.read ? null : h('span', { class: 'dot', 'aria-label': 'unread' }), h('strong', null, item.title || '(no title)')),
      item.body ? h('p', { class: 'inbox-body wrap' }, item.body) : null,
      h('div', { class: 'muted small' },
        time(item.created_at),
        item.rule_name ? [' · rule ', item.mcp_id ? h('a', { href: router.href(`/mcps/${router.seg(item.mcp_id)}/alerts`) }, item.rule_name) : item.rule_name] : null,
        item.read && item.read_at ? [' · read ', time(item.read_at)] : null)),
    h('div', { class: 'inbox-actions' }, mark, msg));
  mark?.addEventListener('click', async () => {
    msg.replaceChildren();
    try {
      await busy(mark, () => api.post('/v1/account/inbox/read', { ids: [item.id] }));
      item.read = true;
      markedRead(li);
      onRead();
      badge.refresh();
    } catch (err) {
      msg.replaceChildren(problemBox(err));
    }
  });
  return li;
}
