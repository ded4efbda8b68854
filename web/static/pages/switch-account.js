// Switch account. A session token is bound to one account (contract), so
// switching is a fresh login with account_id. This browser remembers the
// accounts it signed in to (ids and names only); the password is asked again.
// The old session is revoked once the new one exists.

import * as api from '../api.js';
import * as session from '../session.js';
import { h, field, formProblem, onSubmit, pageHeader, section, table } from '../ui.js';
import { completeSignIn, formValues } from '../auth.js';

export async function render({ root, query }) {
  const current = session.current();
  const email = current?.user?.email || '';
  const known = session.knownAccounts();
  const others = known.filter((a) => !(a.id === current?.account?.id && a.email === email));

  const accountInput = field({
    label: 'Account ID', name: 'account_id', required: true, testid: 'switch-account-id', value: query.get('account') || others[0]?.id || '',
    hint: 'Pick one below or paste the ID of another account you belong to.', attrs: { autocomplete: 'off' },
  });
  const emailInput = field({ label: 'Email', name: 'email', type: 'email', required: true, autocomplete: 'username', testid: 'switch-email', value: others[0]?.email || email });
  const form = h('form', { class: 'form', testid: 'switch-form', novalidate: true },
    accountInput,
    emailInput,
    field({ label: 'Password', name: 'password', type: 'password', required: true, autocomplete: 'current-password', testid: 'switch-password' }),
    formProblem(),
    h('button', { type: 'submit', class: 'btn btn-primary', testid: 'switch-submit' }, 'Switch account'));

  const choose = (a) => {
    accountInput.querySelector('input').value = a.id;
    emailInput.querySelector('input').value = a.email;
    form.querySelector('[name=password]').focus();
  };

  onSubmit(form, async () => {
    const v = formValues(form);
    const auth = await api.post('/v1/auth/login', { email: v.email || '', password: v.password || '', account_id: (v.account_id || '').trim() }, { auth: false });
    // Revoke the session we are leaving; failure only means it expires later.
    await api.post('/v1/auth/logout', undefined, { quiet: true, expire: false }).catch(() => {});
    completeSignIn(auth, '/app/');
  });

  const knownTable = table({
    testid: 'known-accounts',
    rowTestid: 'known-account',
    empty: 'No other accounts remembered in this browser yet. Accounts you log in to appear here.',
    rows: others,
    columns: [
      { key: 'name', label: 'Account', render: (a) => h('span', null, a.name || '(unnamed)', h('br'), h('code', { class: 'muted' }, a.id)) },
      { key: 'email', label: 'Email' },
      {
        key: 'actions', label: '', render: (a) => h('div', { class: 'row-actions' },
          h('button', { type: 'button', class: 'btn btn-small', testid: 'known-account-choose', onclick: () => choose(a) }, 'Choose'),
          h('button', {
            type: 'button', class: 'btn btn-small btn-ghost', testid: 'known-account-forget',
            onclick: (e) => { session.forgetAccount(a.id, a.email); e.target.closest('tr').remove(); },
          }, 'Forget')),
      },
    ],
  });

  root.append(
    pageHeader('Switch account'),
    h('p', { class: 'lead' }, 'You are in ', h('strong', { testid: 'current-account' }, current?.account?.name || current?.account?.id || 'an account'),
      ` as ${email}. A session belongs to one account, so switching asks for your password again.`),
    h('div', { class: 'grid-2' },
      section('Accounts used in this browser', knownTable),
      section('Log in to another account', form)));
}
