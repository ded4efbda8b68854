// Channels: GET /v1/account/channels (catalogue + my preferences), PUT
// /v1/account/channels with only the switch that changed (the API merges),
// and for admins PUT/DELETE /v1/account/channels/{channel}/connection.
//
// Personal channels (in_app, email) are each person's own choice; team
// channels (every other entry of the catalogue, which follows the server's
// registry of destinations) are one connection for the whole team, so only
// admins connect them and everyone sees whether they are connected. The
// connect form asks for the channel's connect_fields (url, routing_key). A
// stored secret is never shown, only its hint; a signed webhook's signing
// secret is shown once, in the connect answer.

import * as api from '../api.js';
import * as store from '../store.js';
import { h, load, loadingBlock, pageHeader, section, table, busy, problemBox, confirmDialog, formProblem, onSubmit, toast, badge, time } from '../ui.js';

const WEBHOOK_HELP = {
  slack: 'A Slack incoming webhook: https://hooks.slack.com/services/…',
  discord: 'A Discord channel webhook: https://discord.com/api/webhooks/{id}/{token}',
  teams: 'A Teams Workflows webhook ("Post to a channel when a webhook request is received"): https://….logic.azure.com/workflows/…',
  google_chat: 'A Google Chat space webhook: https://chat.googleapis.com/v1/spaces/…/messages?key=…&token=…',
  webhook: 'Any public HTTPS URL; events are signed (Standard Webhooks): https://example.com/hooks/alerts',
  pagerduty: 'The Integration Key of an Events API v2 integration on a PagerDuty service: 32 letters and digits',
};
const FIELD_LABELS = { url: 'Webhook URL', routing_key: 'Integration key', region: 'Service region' };
// FIELD_CHOICES: connect fields picked from a list (the first is the default).
const FIELD_CHOICES = { region: [['us', 'US (events.pagerduty.com)'], ['eu', 'EU (events.eu.pagerduty.com)']] };

export async function render(ctx) {
  const catalogue = h('div');
  const prefs = h('div', null, loadingBlock());
  const team = h('div', null, loadingBlock());
  ctx.root.append(
    pageHeader('Channels'),
    h('p', { class: 'lead' }, 'Channels are where alerts can go. A rule picks the channels it uses; you pick which personal channels you want to hear from. A channel that does not deliver here records its deliveries as queued.'),
    section('Catalogue', catalogue),
    h('div', { class: 'grid-2' }, section('My notifications', prefs), section('Team channels', team)));

  await load(catalogue, async () => {
    const [d, acct] = await Promise.all([
      api.get('/v1/account/channels', null, { signal: ctx.signal }),
      store.account().catch(() => null),
    ]);
    const state = { channels: d.channels || [], preferences: d.preferences || {} };
    const redraw = () => {
      catalogue.replaceChildren(catalogueTable(state.channels));
    };
    prefs.replaceChildren(preferenceSwitches(state, redraw));
    team.replaceChildren(teamChannels(state, store.isAdmin(acct), redraw));
    return catalogueTable(state.channels);
  }, {
    onError: () => {
      for (const el of [prefs, team]) el.replaceChildren(h('p', { class: 'muted' }, 'Unavailable: the channels could not be loaded (see above).'));
    },
  });
}

function catalogueTable(channels) {
  return table({
    testid: 'channels-table',
    rows: channels,
    rowAttrs: (c) => ({ testid: `channel-row-${c.id}`, dataset: { channel: c.id } }),
    empty: 'No channels.',
    columns: [
      { key: 'label', label: 'Channel', render: (c) => h('span', { class: 'strong' }, c.label || c.id) },
      { key: 'description', label: 'Description', render: (c) => h('span', { class: 'wrap' }, c.description || '') },
      { key: 'delivers', label: 'Delivers', render: (c) => (c.delivers ? badge('yes', 'good') : badge('no: queued only', 'neutral')) },
      { key: 'scope', label: 'Scope', render: (c) => (c.scope === 'team' ? 'Team' : c.scope === 'personal' ? 'Personal' : c.scope || '—') },
      { key: 'connected', label: 'Connected', render: (c) => (c.connected ? badge('connected', 'good', { testid: `channel-connected-${c.id}` }) : badge('not connected', 'neutral', { testid: `channel-connected-${c.id}` })) },
      { key: 'webhook_hint', label: 'Webhook', render: (c) => (c.webhook_hint ? h('code', { class: 'wrap' }, c.webhook_hint) : h('span', { class: 'muted' }, '—')) },
      { key: 'health', label: 'Health', render: (c) => healthText(c) },
    ],
  });
}

/** A team channel's sending record: broken, last sent, last failure. */
function healthText(c) {
  const hl = c.health;
  if (!hl) return h('span', { class: 'muted' }, '—');
  return h('div', { testid: `channel-health-${c.id}` },
    hl.broken ? badge('broken: reconnect it', 'bad', { testid: `channel-broken-${c.id}` }) : null,
    hl.last_sent_at ? h('div', { class: 'muted small' }, 'last sent ', time(hl.last_sent_at)) : null,
    hl.last_failed_at ? h('div', { class: 'muted small' }, 'last failure ', time(hl.last_failed_at), hl.last_error ? [' ', h('code', null, hl.last_error)] : null) : null,
    !hl.broken && !hl.last_sent_at && !hl.last_failed_at ? h('span', { class: 'muted' }, 'nothing sent yet') : null);
}

/** "Send test": POST /v1/account/channels/{id}/test, the answer shown beside the button. */
function testButton(c) {
  const out = h('span', { class: 'small', testid: `channel-test-result-${c.id}` });
  const button = h('button', { type: 'button', class: 'btn btn-small', testid: `channel-test-${c.id}` }, c.scope === 'personal' ? 'Send me a test' : 'Send test');
  button.addEventListener('click', async () => {
    out.replaceChildren();
    try {
      const r = await busy(button, () => api.post(`/v1/account/channels/${encodeURIComponent(c.id)}/test`));
      out.dataset.status = r.status;
      out.replaceChildren(r.status === 'sent' ? badge('sent', 'good') : badge(`failed: ${r.error || 'unknown'}`, 'bad'));
    } catch (err) {
      out.replaceChildren(problemBox(err));
    }
  });
  return h('span', { class: 'channel-test' }, button, ' ', out);
}

function preferenceSwitches(state, redraw) {
  const personal = state.channels.filter((c) => c.scope === 'personal');
  const ids = personal.length ? personal.map((c) => c.id) : Object.keys(state.preferences);
  if (!ids.length) return h('p', { class: 'muted' }, 'No personal channels.');
  return h('div', { class: 'switch-list' },
    h('p', { class: 'muted' }, 'For this account only. Turning one off means rules never reach you there.'),
    ids.map((id) => {
      const c = personal.find((x) => x.id === id) || { id, label: id };
      const input = h('input', { type: 'checkbox', class: 'switch', id: `pref-${id}`, checked: !!state.preferences[id], testid: `pref-${id}` });
      const msg = h('div', { class: 'inline-problem' });
      input.addEventListener('change', async () => {
        const want = input.checked;
        msg.replaceChildren();
        try {
          const d = await busy(input, () => api.put('/v1/account/channels', { [id]: want }));
          state.preferences = d.preferences || { ...state.preferences, [id]: want };
          if (d.channels) state.channels = d.channels;
          input.checked = !!state.preferences[id];
          redraw();
          toast(`${c.label || id} ${input.checked ? 'on' : 'off'}.`, 'success');
        } catch (err) {
          input.checked = !want;
          msg.replaceChildren(problemBox(err));
        }
      });
      return h('div', { class: 'switch-row' },
        input,
        h('label', { for: `pref-${id}` }, h('span', { class: 'strong' }, c.label || id), c.description ? h('span', { class: 'muted small block' }, c.description) : null),
        c.delivers && id !== 'in_app' ? testButton(c) : null,
        msg);
    }));
}

function teamChannels(state, admin, redraw) {
  const teamList = state.channels.filter((c) => c.scope === 'team');
  if (!teamList.length) return h('p', { class: 'muted' }, 'No team channels.');
  return h('div', { class: 'team-channels' },
    admin ? null : h('p', { class: 'muted' }, 'Only owners and admins can connect or disconnect team channels.'),
    teamList.map((c) => teamChannel(c, admin, redraw)));
}

function teamChannel(c, admin, redraw) {
  const box = h('div', { class: 'team-channel', testid: `team-channel-${c.id}` });
  const draw = () => {
    const status = c.connected
      ? h('p', null, badge('connected', 'good'), ' ', h('code', { class: 'wrap', testid: `webhook-hint-${c.id}` }, c.webhook_hint || ''))
      : h('p', null, badge('not connected', 'neutral'));
    const parts = [h('h3', null, c.label || c.id), status, c.health ? healthText(c) : null];
    if (admin && c.connected && c.delivers) parts.push(h('p', null, testButton(c)));
    if (admin) {
      if (c.connected) parts.push(disconnectButton(c, () => { draw(); redraw(); }));
      parts.push(connectForm(c, () => { draw(); redraw(); }));
    }
    box.replaceChildren(...parts);
  };
  draw();
  return box;
}

function connectForm(c, done) {
  const fields = c.connect_fields && c.connect_fields.length ? c.connect_fields : ['url'];
  const inputs = fields.map((name) => FIELD_CHOICES[name] ? h('select', { name, id: `connect-${name}-${c.id}`, testid: `connect-${name}-${c.id}` },
    FIELD_CHOICES[name].map(([value, label]) => h('option', { value }, label))) : h('input', {
    type: name === 'url' ? 'url' : 'text', name, id: `connect-${name}-${c.id}`, required: true,
    testid: name === 'url' ? `webhook-url-${c.id}` : `connect-${name}-${c.id}`,
    placeholder: WEBHOOK_HELP[c.id] && name === 'url' ? WEBHOOK_HELP[c.id].split(': ').pop() : '', autocomplete: 'off',
  }));
  const form = h('form', { class: 'form form-inline', testid: `webhook-form-${c.id}`, novalidate: true },
    fields.map((name, i) => h('div', { class: 'field' },
      h('label', { for: `connect-${name}-${c.id}` }, (c.connected ? 'Replace ' : '') + (FIELD_LABELS[name] || name)),
      inputs[i],
      i === 0 ? h('p', { class: 'hint' }, WEBHOOK_HELP[c.id] || 'The destination’s own URL or key.') : null)),
    formProblem(),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: `webhook-connect-${c.id}` }, c.connected ? 'Replace' : 'Connect'));
  onSubmit(form, async () => {
    const body = Object.fromEntries(fields.map((name, i) => [name, inputs[i].value.trim()]));
    const r = await api.put(`/v1/account/channels/${encodeURIComponent(c.id)}/connection`, body);
    c.connected = r.connected !== false;
    c.webhook_hint = r.hint ?? null;
    c.health = { last_sent_at: null, last_failed_at: null, last_error: null, broken: false };
    toast(`${c.label || c.id} connected.`, 'success');
    done();
    if (r.signing_secret) showSecret(c, r.signing_secret);
  });
  return form;
}

// showSecret shows a signed webhook's signing secret, which the API
// answers this once.
function showSecret(c, secret) {
  const box = h('div', { class: 'notice', testid: `signing-secret-${c.id}` },
    h('p', null, h('strong', null, 'Signing secret: '), h('code', { class: 'wrap' }, secret)),
    h('p', { class: 'hint' }, 'Copy it now into your receiver (any Standard Webhooks library verifies the events): it is not shown again.'));
  const anchor = document.querySelector(`[data-testid="webhook-form-${c.id}"]`);
  if (anchor && anchor.parentNode) anchor.parentNode.insertBefore(box, anchor);
  else toast(`Signing secret: ${secret}`, 'success');
}

function disconnectButton(c, done) {
  const msg = h('div');
  const button = h('button', { type: 'button', class: 'btn btn-danger-ghost', testid: `webhook-disconnect-${c.id}` }, 'Disconnect');
  button.addEventListener('click', async () => {
    if (!await confirmDialog(`Disconnect ${c.label || c.id}? Rules that name it will deliver nothing there until it is connected again.`, { confirmLabel: 'Disconnect' })) return;
    try {
      await busy(button, () => api.del(`/v1/account/channels/${encodeURIComponent(c.id)}/connection`));
      c.connected = false;
      c.webhook_hint = null;
      toast(`${c.label || c.id} disconnected.`, 'success');
      done();
    } catch (err) {
      msg.replaceChildren(problemBox(err));
    }
  });
  return h('div', null, button, msg);
}
