// Delivery log (owners and admins): GET /v1/account/notifications with the
// channel and status filters and keyset paging, all kept in the URL. Each
// row is one delivery of a rule firing (or resolving) on one channel.

import * as api from '../api.js';
import * as router from '../router.js';
import { CHANNEL_LABELS } from './rules.js';
import { h, load, pageHeader, table, time, badge, field } from '../ui.js';

export const PAGE_SIZE = 25;

export async function render(ctx) {
  const channel = ctx.query.get('channel') || '';
  const status = ctx.query.get('status') || '';
  const cursor = ctx.query.get('cursor') || '';
  const list = h('div', { class: 'card' });
  const filters = h('form', { class: 'form-row filters', testid: 'deliveries-filters' },
    field({ label: 'Channel', name: 'channel', type: 'select', value: channel, testid: 'deliveries-channel', optionalLabel: false,
      options: [{ value: '', label: 'Any channel' }, ...Object.entries(CHANNEL_LABELS).map(([value, label]) => ({ value, label }))] }),
    field({ label: 'Status', name: 'status', type: 'select', value: status, testid: 'deliveries-status', optionalLabel: false,
      options: [{ value: '', label: 'Any status' }, { value: 'delivered', label: 'Delivered' }, { value: 'queued', label: 'Queued' }] }));
  filters.addEventListener('change', () => {
    const q = { channel: filters.querySelector('[name=channel]').value || null, status: filters.querySelector('[name=status]').value || null };
    router.navigate(router.href('/deliveries', q));
  });
  ctx.root.append(pageHeader('Delivery log', h('span', { class: 'muted' }, 'Every notification your rules created, newest first.')), filters, list);

  await load(list, async () => {
    const d = await api.get('/v1/account/notifications', { channel: channel || null, status: status || null, limit: PAGE_SIZE, cursor: cursor || null }, { signal: ctx.signal });
    const items = Array.isArray(d.items) ? d.items : [];
    const next = d.next_cursor || null;
    const here = { channel: channel || null, status: status || null };
    return [
      table({
        testid: 'deliveries-table',
        rowTestid: 'delivery-row',
        rows: items,
        empty: 'No deliveries match. Deliveries appear when a rule fires (or resolves, for rules that notify on resolve).',
        rowAttrs: (n) => ({ dataset: { id: n.id, channel: n.channel, status: n.status } }),
        columns: [
          { key: 'created_at', label: 'When', render: (n) => time(n.created_at) },
          { key: 'title', label: 'Notification', render: (n) => h('div', null, h('strong', null, n.title || '(no title)'),
            n.mcp_id ? h('div', { class: 'muted small' }, h('a', { href: router.href(`/mcps/${router.seg(n.mcp_id)}/alerts/${router.seg(n.rule_id)}`) }, 'rule')) : null) },
          { key: 'channel', label: 'Channel', render: (n) => CHANNEL_LABELS[n.channel] || n.channel },
          { key: 'recipient', label: 'Recipient', render: (n) => (n.recipient_user_id ? h('code', null, n.recipient_user_id) : h('span', { class: 'muted' }, 'Team channel')) },
          { key: 'status', label: 'Status', render: (n) => badge(n.status, n.status === 'delivered' ? 'good' : 'neutral', { testid: 'delivery-status' }) },
        ],
      }),
      h('div', { class: 'pager' },
        cursor ? h('a', { class: 'btn', href: router.href('/deliveries', here), testid: 'deliveries-first' }, '« Newest') : h('span'),
        h('button', {
          type: 'button', class: 'btn', testid: 'deliveries-next', disabled: !next,
          onclick: () => router.navigate(router.href('/deliveries', { ...here, cursor: next })),
        }, 'Older »')),
    ];
  });
}
