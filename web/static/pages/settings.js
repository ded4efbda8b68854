// Settings: the account (GET/PATCH /v1/account), my profile (GET/PATCH
// /v1/account/profile), my personal access tokens (GET/POST
// /v1/account/tokens, DELETE /v1/account/tokens/{id}) and the company record
// (GET/PUT /v1/account/company). Each section loads and fails on its own.

import * as api from '../api.js';
import * as store from '../store.js';
import * as session from '../session.js';
import { h, field, formProblem, onSubmit, load, pageHeader, section, toast, table, time, busy, problemBox, confirmDialog, copyButton, codeBlock } from '../ui.js';

const COMPANY_FIELDS = [
  { name: 'legal_name', label: 'Legal name', autocomplete: 'organization' },
  { name: 'website', label: 'Website', type: 'url', autocomplete: 'url' },
  { name: 'billing_email', label: 'Billing email', type: 'email', autocomplete: 'email' },
  { name: 'address', label: 'Address', type: 'textarea', autocomplete: 'street-address' },
  { name: 'vat_id', label: 'VAT ID' },
];

export async function render(ctx) {
  const accountBox = h('div');
  const profileBox = h('div');
  const companyBox = h('div');
  const retentionBox = h('div');
  const tokensBox = h('div');
  ctx.root.append(pageHeader('Settings'),
    h('div', { class: 'grid-2' }, section('Account', accountBox), section('My profile', profileBox)),
    section('Personal access tokens', tokensSection(tokensBox, ctx)),
    section('Data retention', retentionBox),
    section('Company', companyBox));

  const acctPromise = store.account({ force: true });
  await Promise.all([
    load(accountBox, async () => accountForm(await acctPromise)),
    load(retentionBox, async () => retentionForm(await acctPromise)),
    load(profileBox, async () => profileForm(await api.get('/v1/account/profile', null, { signal: ctx.signal }))),
    reloadTokens(tokensBox, ctx),
    load(companyBox, async () => {
      const [company, acct] = await Promise.all([api.get('/v1/account/company', null, { signal: ctx.signal }), acctPromise.catch(() => null)]);
      return companyForm(company, store.isAdmin(acct) || !acct);
    }),
  ]);
}

function accountForm(acct) {
  const admin = store.isAdmin(acct);
  const form = h('form', { class: 'form', testid: 'account-form', novalidate: true },
    field({ label: 'Account name', name: 'name', required: true, value: acct.name || '', testid: 'account-name-input', attrs: { disabled: !admin } }),
    formProblem(),
    admin ? h('button', { type: 'submit', class: 'btn btn-primary', testid: 'account-save' }, 'Save') : h('p', { class: 'muted' }, 'Only owners and admins can rename the account.'));
  onSubmit(form, async () => {
    const updated = await api.patch('/v1/account', { name: form.querySelector('[name=name]').value });
    session.updateAccount(updated);
    store.account({ force: true }).catch(() => {});
    toast('Account renamed.', 'success');
  });
  return [
    h('dl', { class: 'figures' },
      h('div', { class: 'figure' }, h('dt', null, 'Account ID'), h('dd', null, h('code', { testid: 'account-id' }, acct.id))),
      h('div', { class: 'figure' }, h('dt', null, 'Plan'), h('dd', { testid: 'account-plan' }, acct.plan || '—')),
      h('div', { class: 'figure' }, h('dt', null, 'Your role'), h('dd', { testid: 'account-role' }, acct.role || '—'))),
    form,
  ];
}

// retentionForm shows what the account keeps (GET /v1/account) and lets an
// owner keep less (PATCH retention_days; 0 returns to the installation's).
function retentionForm(acct) {
  const kept = h('p', { testid: 'retention-kept' });
  const show = (a) => {
    kept.textContent = a.effective_retention_days
      ? `Telemetry is kept ${a.effective_retention_days} days (since ${a.kept_from}); older days read as zeros and are deleted nightly.`
      : 'Telemetry is kept forever.';
  };
  show(acct);
  if (acct.role !== 'owner') {
    return [kept, h('p', { class: 'muted' }, 'Only owners can change the retention.')];
  }
  const form = h('form', { class: 'form', testid: 'retention-form', novalidate: true },
    field({ label: 'Keep telemetry for (days)', name: 'retention_days', type: 'number', min: 0, step: 1, value: acct.retention_days ?? '',
      testid: 'retention-days', hint: 'Empty or 0: as long as the installation keeps it. At most the installation\'s retention.' }),
    formProblem(),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'retention-save' }, 'Save retention'));
  onSubmit(form, async () => {
    const raw = form.querySelector('[name=retention_days]').value;
    const updated = await api.patch('/v1/account', { retention_days: raw === '' ? 0 : Number(raw) });
    show(updated);
    toast('Retention saved.', 'success');
  });
  return [kept, form];
}

// verification shows whether the email is verified and, when it is not,
// a button that sends a new link (POST /v1/account/profile/verification:
// 202, or 429 within a minute of the last one).
function verification(profile) {
  const box = h('div', { class: 'email-verification', testid: 'email-verification', dataset: { verified: String(!!profile.email_verified) } });
  if (profile.email_verified) {
    box.append(h('p', { class: 'small' }, h('span', { class: 'badge badge-good' }, 'verified')));
    return box;
  }
  const out = h('span', { class: 'small', testid: 'verification-result' });
  const button = h('button', { type: 'button', class: 'btn btn-small', testid: 'verification-resend' }, 'Send a new link');
  button.addEventListener('click', async () => {
    out.replaceChildren();
    try {
      await busy(button, () => api.post('/v1/account/profile/verification'));
      out.replaceChildren(`A new link is on its way to ${profile.email}.`);
    } catch (err) {
      out.replaceChildren(problemBox(err));
    }
  });
  box.append(h('p', { class: 'small' }, h('span', { class: 'badge badge-warn' }, 'not verified'),
    ' No email but the verification message is sent to this address until you open its link.'), h('p', null, button, ' ', out));
  return box;
}

function profileForm(profile) {
  const form = h('form', { class: 'form', testid: 'profile-form', novalidate: true },
    field({ label: 'Name', name: 'name', required: true, value: profile.name || '', testid: 'profile-name', autocomplete: 'name' }),
    field({ label: 'Email', name: 'email', type: 'email', required: true, value: profile.email || '', testid: 'profile-email', autocomplete: 'email' }),
    verification(profile),
    formProblem(),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'profile-save' }, 'Save'));
  onSubmit(form, async () => {
    const body = {};
    for (const k of ['name', 'email']) {
      const v = form.querySelector(`[name=${k}]`).value;
      if (v !== (profile[k] ?? '')) body[k] = v;
    }
    if (!Object.keys(body).length) { toast('Nothing changed.'); return; }
    const updated = await api.patch('/v1/account/profile', body);
    Object.assign(profile, updated);
    form.querySelector('[data-testid="email-verification"]').replaceWith(verification(profile));
    session.updateUser(updated);
    document.querySelector('[data-testid="user-email"]').textContent = updated.email || '';
    toast('Profile saved.', 'success');
  });
  return form;
}

function companyForm(company, admin) {
  const form = h('form', { class: 'form form-grid', testid: 'company-form', novalidate: true },
    COMPANY_FIELDS.map((f) => field({
      label: f.label, name: f.name, type: f.type, value: company?.[f.name] ?? '', testid: `company-${f.name.replace(/_/g, '-')}`,
      autocomplete: f.autocomplete, rows: 2, attrs: { disabled: !admin },
    })),
    formProblem(),
    admin ? h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn btn-primary', testid: 'company-save' }, 'Save company')) : h('p', { class: 'muted' }, 'Only owners and admins can change the company record.'));
  onSubmit(form, async () => {
    // PUT replaces the record: every field is sent, empty ones as null.
    const body = {};
    for (const f of COMPANY_FIELDS) {
      const v = form.querySelector(`[name=${f.name}]`).value;
      body[f.name] = v === '' ? null : v;
    }
    await api.put('/v1/account/company', body);
    toast('Company saved.', 'success');
  });
  return form;
}

// tokensSection: read tokens for scripts, notebooks and MCP clients. The
// token is shown once, on creation; the list shows hints only.
function tokensSection(box, ctx) {
  const shown = h('div', { testid: 'new-token' });
  const form = h('form', { class: 'form-bar', testid: 'token-create-form', novalidate: true },
    field({ label: 'New token name', name: 'name', required: true, testid: 'token-name', placeholder: 'notebook' }),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'token-create-submit' }, 'Create read token'),
    formProblem());
  onSubmit(form, async () => {
    const created = await api.post('/v1/account/tokens', { name: form.querySelector('[name=name]').value, scope: 'read' });
    form.reset();
    shown.replaceChildren(tokenOnce(created));
    reloadTokens(box, ctx);
  });
  return [
    h('p', { class: 'muted' }, 'A personal access token reads as you: every page of this dashboard, through the API or an MCP client at /mcp. It cannot change anything, post telemetry or manage tokens.'),
    shown, box, form,
  ];
}

function tokenOnce(created) {
  const config = JSON.stringify({ mcpServers: { telemetry: { type: 'http', url: `${window.location.origin}/mcp`, headers: { Authorization: `Bearer ${created.token}` } } } }, null, 2);
  return h('div', { class: 'secret-once', role: 'alert' },
    h('p', null, h('strong', null, `Token “${created.name}” created. `), 'Copy it now: this is the only time it is shown.'),
    h('div', { class: 'secret-row' },
      h('code', { class: 'secret', testid: 'token-display' }, created.token),
      copyButton(created.token, { testid: 'token-copy' })),
    h('p', { class: 'muted' }, 'An MCP client configuration (Claude Code, Cursor) using it:'),
    codeBlock(config, { testid: 'token-mcp-config' }),
    h('button', { type: 'button', class: 'btn btn-small btn-ghost', testid: 'token-dismiss', onclick: (e) => e.target.closest('.secret-once').remove() }, 'I have stored it'));
}

function reloadTokens(box, ctx) {
  return load(box, async () => {
    const d = await api.get('/v1/account/tokens', null, { signal: ctx.signal });
    return table({
      testid: 'tokens-table',
      rowTestid: 'token-row',
      rows: d.items || [],
      empty: 'No tokens yet.',
      rowAttrs: (t) => ({ dataset: { tokenId: t.id } }),
      columns: [
        { key: 'name', label: 'Name', render: (t) => h('span', { class: 'strong' }, t.name) },
        { key: 'hint', label: 'Token', render: (t) => h('code', { testid: 'token-hint' }, t.hint) },
        { key: 'scope', label: 'Scope' },
        { key: 'created_at', label: 'Created', render: (t) => time(t.created_at) },
        { key: 'last_used_at', label: 'Last used', render: (t) => (t.last_used_at ? time(t.last_used_at) : h('span', { class: 'muted' }, 'Never')) },
        {
          key: 'actions', label: '', render: (t) => {
            const msg = h('div');
            const del = h('button', { type: 'button', class: 'btn btn-small btn-danger-ghost', testid: 'token-delete' }, 'Delete');
            del.addEventListener('click', async () => {
              if (!await confirmDialog(`Delete the token “${t.name}”? Scripts and MCP clients using it are refused from their next request.`)) return;
              try {
                await busy(del, () => api.del(api.path`/v1/account/tokens/${t.id}`));
                toast(`Deleted token ${t.name}.`, 'success');
                reloadTokens(box, ctx);
              } catch (err) {
                msg.replaceChildren(problemBox(err));
              }
            });
            return h('div', null, del, msg);
          },
        },
      ],
    });
  });
}
