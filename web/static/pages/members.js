// Members: GET /v1/account/members ({items, invitations}); for owners and
// admins POST (invite: adds an existing person directly, or creates an
// invitation whose token is shown once), PATCH/DELETE
// /v1/account/members/{user_id}. GET /v1/account tells the caller's role.

import * as api from '../api.js';
import * as store from '../store.js';
import * as session from '../session.js';
import * as router from '../router.js';
import { h, field, formProblem, onSubmit, load, pageHeader, section, table, time, busy, problemBox, confirmDialog, copyButton, toast, badge } from '../ui.js';

const ROLES = ['member', 'admin', 'owner'];
const ROLE_HELP = 'Owners and admins manage MCPs, keys, rules, members, the company record and team channels. Members read metrics and manage their own profile, notifications and inbox.';

export async function render(ctx) {
  const content = h('div');
  ctx.root.append(pageHeader('Members'), content);
  await load(content, async () => {
    const [d, acct] = await Promise.all([
      api.get('/v1/account/members', null, { signal: ctx.signal }),
      store.account({ force: true }),
    ]);
    const admin = store.isAdmin(acct);
    const me = session.current()?.user?.id;
    const members = Array.isArray(d.items) ? d.items : [];
    const invitations = Array.isArray(d.invitations) ? d.invitations : [];
    const membersBox = h('div');
    const invitesBox = h('div');
    const drawMembers = () => membersBox.replaceChildren(memberTable(members, admin, me, drawMembers));
    const drawInvites = () => invitesBox.replaceChildren(table({
      testid: 'invitations-table',
      rowTestid: 'invitation-row',
      rows: invitations,
      empty: 'No pending invitations.',
      columns: [
        { key: 'email', label: 'Email' },
        { key: 'role', label: 'Role', render: (i) => badge(i.role, 'neutral') },
        { key: 'created_at', label: 'Invited', render: (i) => time(i.created_at) },
      ],
    }));
    drawMembers();
    drawInvites();
    return [
      h('p', { class: 'lead' }, 'You are ', h('strong', { testid: 'my-role' }, acct.role), ` in ${acct.name}. ${ROLE_HELP}`),
      // The people table gets the full width: email, role and actions side
      // by side do not fit next to the invite form.
      section('People', membersBox),
      h('div', { class: admin ? 'grid-2' : '' },
        section('Pending invitations', invitesBox),
        admin ? section('Invite someone', inviteForm((r) => {
          if (r.invitation) { invitations.unshift(r.invitation); drawInvites(); }
          else if (r.user_id) { members.push(r); drawMembers(); }
        })) : null),
    ];
  });
}

function memberTable(members, admin, me, redraw) {
  return table({
    testid: 'members-table',
    rowTestid: 'member-row',
    rows: members,
    empty: 'No members.',
    rowAttrs: (m) => ({ dataset: { userId: m.user_id } }),
    columns: [
      { key: 'name', label: 'Name', render: (m) => h('span', null, h('span', { class: 'strong' }, m.name || '—'), m.user_id === me ? h('span', { class: 'muted' }, ' (you)') : null) },
      { key: 'email', label: 'Email', render: (m) => h('span', null, m.email, m.email_verified === false ? [' ', h('span', { class: 'badge badge-warn', testid: 'member-unverified' }, 'not verified')] : null) },
      { key: 'role', label: 'Role', render: (m) => (admin ? roleSelect(m) : badge(m.role, 'neutral')) },
      { key: 'joined_at', label: 'Joined', render: (m) => time(m.joined_at) },
      { key: 'actions', label: '', render: (m) => (admin ? removeButton(m, me, () => { members.splice(members.indexOf(m), 1); redraw(); }) : '') },
    ],
  });
}

function roleSelect(m) {
  const select = h('select', { testid: 'member-role', 'aria-label': `Role of ${m.email}` }, ROLES.map((r) => h('option', { value: r, selected: r === m.role }, r)));
  const msg = h('div', { class: 'inline-problem' });
  select.addEventListener('change', async () => {
    const want = select.value;
    msg.replaceChildren();
    try {
      const updated = await busy(select, () => api.patch(api.path`/v1/account/members/${m.user_id}`, { role: want }));
      m.role = updated?.role || want;
      select.value = m.role;
      toast(`${m.email} is now ${m.role}.`, 'success');
      store.account({ force: true }).catch(() => {});
    } catch (err) {
      select.value = m.role;
      msg.replaceChildren(problemBox(err));
    }
  });
  return h('div', null, select, msg);
}

function removeButton(m, me, onRemoved) {
  const msg = h('div', { class: 'inline-problem' });
  const button = h('button', { type: 'button', class: 'btn btn-small btn-danger-ghost', testid: 'member-remove' }, m.user_id === me ? 'Leave' : 'Remove');
  button.addEventListener('click', async () => {
    const question = m.user_id === me
      ? 'Leave this account? You lose access to it at once.'
      : `Remove ${m.name || m.email} from this account? Inbox items already delivered to them stay.`;
    if (!await confirmDialog(question, { confirmLabel: m.user_id === me ? 'Leave' : 'Remove' })) return;
    try {
      await busy(button, () => api.del(api.path`/v1/account/members/${m.user_id}`));
      toast(`${m.email} removed.`, 'success');
      if (m.user_id === me) {
        session.clear();
        store.reset();
        router.navigate('/login', { replace: true });
        return;
      }
      onRemoved();
    } catch (err) {
      msg.replaceChildren(problemBox(err));
    }
  });
  return h('div', null, button, msg);
}

function inviteForm(onDone) {
  const result = h('div', { testid: 'invite-result' });
  const form = h('form', { class: 'form', testid: 'invite-form', novalidate: true },
    field({ label: 'Email', name: 'email', type: 'email', required: true, testid: 'invite-email', autocomplete: 'off' }),
    field({ label: 'Role', name: 'role', type: 'select', value: 'member', testid: 'invite-role', optionalLabel: false, options: ROLES.map((r) => ({ value: r, label: r })) }),
    formProblem(),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'invite-submit' }, 'Invite'));
  onSubmit(form, async () => {
    const v = new FormData(form);
    result.replaceChildren();
    const r = await api.post('/v1/account/members', { email: v.get('email'), role: v.get('role') });
    form.reset();
    if (r.invite_token) {
      const link = `${window.location.origin}${router.href('/signup', { invite: r.invite_token })}`;
      result.replaceChildren(h('div', { class: 'secret-once', role: 'alert' },
        h('p', null, h('strong', null, `Invitation created for ${r.invitation?.email || 'them'}. `), 'Send them this link. The token is shown only now.'),
        h('div', { class: 'secret-row' }, h('code', { class: 'secret', testid: 'invite-link' }, link), copyButton(link, { testid: 'invite-link-copy', label: 'Copy link' })),
        h('p', { class: 'muted small' }, 'Token: ', h('code', { testid: 'invite-token' }, r.invite_token), ' ', copyButton(r.invite_token, { testid: 'invite-token-copy' }))));
    } else {
      result.replaceChildren(h('p', { class: 'notice', role: 'status' }, `${r.email || 'They'} already had a login and ${r.email ? 'was' : 'were'} added as ${r.role}.`));
    }
    onDone(r);
  });
  return h('div', null, h('p', { class: 'muted' }, 'Someone who already has a login is added at once; anyone else gets an invitation link to sign up with.'), form, result);
}
