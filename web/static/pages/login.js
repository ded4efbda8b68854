// Log in: POST /v1/auth/login {email, password, account_id?}.

import * as api from '../api.js';
import * as session from '../session.js';
import * as router from '../router.js';
import { h, field, formProblem, onSubmit } from '../ui.js';
import { authCard, completeSignIn, formValues } from '../auth.js';

export async function render({ root, query }) {
  const next = query.get('next');
  const current = session.current();
  const known = session.knownAccounts();

  const accountList = h('datalist', { id: 'known-accounts' },
    known.map((a) => h('option', { value: a.id }, `${a.name || a.id} (${a.email})`)));

  const form = h('form', { class: 'form', testid: 'login-form', novalidate: true },
    field({ label: 'Email', name: 'email', type: 'email', required: true, autocomplete: 'username', testid: 'login-email', value: query.get('email') || known[0]?.email || '' }),
    field({ label: 'Password', name: 'password', type: 'password', required: true, autocomplete: 'current-password', testid: 'login-password' }),
    field({
      label: 'Account ID', name: 'account_id', testid: 'login-account', value: query.get('account') || '',
      hint: 'Only if you belong to several accounts and want a specific one.', attrs: { list: 'known-accounts', autocomplete: 'off' },
    }),
    accountList,
    h('div', { testid: 'login-error' }, formProblem()),
    h('button', { type: 'submit', class: 'btn btn-primary btn-block', testid: 'login-submit' }, 'Log in'));

  onSubmit(form, async () => {
    const v = formValues(form);
    const body = { email: v.email || '', password: v.password || '' };
    if (v.account_id) body.account_id = v.account_id.trim();
    const auth = await api.post('/v1/auth/login', body, { auth: false });
    completeSignIn(auth, next);
  });

  root.append(authCard('Log in',
    query.get('expired') ? h('p', { class: 'notice', role: 'status', testid: 'session-expired' }, 'Your session has ended. Please log in again.') : null,
    current ? h('p', { class: 'notice' }, `You are signed in as ${current.user?.email || 'someone'}`,
      current.account?.name ? ` in ${current.account.name}` : '', '. ',
      h('a', { href: router.href('/') }, 'Go to the dashboard'), '.') : null,
    form,
    h('p', { class: 'auth-alt' }, 'No account yet? ',
      h('a', { href: router.href('/signup', { next: router.safeNext(next) }), testid: 'signup-link' }, 'Sign up'))));
  if (!current) form.querySelector('[name=email]').value ? form.querySelector('[name=password]').focus() : form.querySelector('[name=email]').focus();
}
