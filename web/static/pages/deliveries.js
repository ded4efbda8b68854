// Delivery log (owners and admins): GET /v1/account/notifications with the
// channel and status filters and keyset paging, all kept in the URL. Each
// row is one delivery of a rule firing (or resolving) on one channel.

import * as api from '../api.js';
import * as router from '../router.js';
import { CHANNEL_LABELS } from './rules.js';
import { h, load, pageHeader, table, time, badge, field, busy, toast, problemBox } from '../ui.js';

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
      options: [{ value: '', label: 'Any status' }, { value: 'delivered', label: 'Delivered' }, { value: 'queued', label: 'Queued' },
        { value: 'sent', label: 'Sent' }, { value: 'failed', label: 'Failed' }] }));
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
          { key: 'status', label: 'Status', render: (n) => badge(n.status, STATUS_TONE[n.status] || 'neutral', { testid: 'delivery-status' }) },
          { key: 'attempts', label: 'Attempts', render: (n) => h('span', { testid: 'delivery-attempts' }, n.channel === 'in_app' ? '—' : String(n.attempts ?? 0)) },
          { key: 'detail', label: 'Last error · next attempt', render: (n) => attemptDetail(n, ctx) },
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

const STATUS_TONE = { delivered: 'good', sent: 'good', failed: 'bad', queued: 'neutral' };

/** The outbox's record of a delivery: last error, next attempt, sent at, and "Retry now" for a failed one. */
function attemptDetail(n, ctx) {
  if (n.channel === 'in_app') return h('span', { class: 'muted' }, '—');
  const parts = [];
  if (n.last_error) parts.push(h('div', null, h('code', { testid: 'delivery-last-error' }, n.last_error)));
  if (n.status === 'queued' && n.next_attempt_at) parts.push(h('div', { class: 'muted small', testid: 'delivery-next-attempt' }, 'next attempt ', time(n.next_attempt_at)));
  if (n.status === 'sent' && n.sent_at) parts.push(h('div', { class: 'muted small' }, 'sent ', time(n.sent_at)));
  if (n.status === 'failed') {
    const msg = h('div');
    const button = h('button', { type: 'button', class: 'btn btn-small', testid: 'delivery-retry' }, 'Retry now');
    button.addEventListener('click', async () => {
      try {
        await busy(button, () => api.post(api.path`/v1/account/notifications/${n.id}/retry`));
        toast('Queued again.', 'success');
        router.navigate(window.location.pathname + window.location.search, { replace: true });
      } catch (err) {
        msg.replaceChildren(problemBox(err));
      }
    });
    parts.push(h('div', null, button, msg));
  }
  return parts.length ? h('div', null, parts) : h('span', { class: 'muted' }, '—');
}
