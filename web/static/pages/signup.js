// Sign up: POST /v1/auth/signup {email, password, name, account_name?,
// invite_token?}. With an invite token (prefilled from ?invite=) the person
// joins the inviting account instead of creating one.

import * as api from '../api.js';
import * as router from '../router.js';
import { h, field, formProblem, onSubmit, fieldError } from '../ui.js';
import { authCard, completeSignIn, formValues } from '../auth.js';

export const MIN_PASSWORD = 10;

export async function render({ root, query }) {
  const invite = query.get('invite') || '';
  const accountField = field({ label: 'Account name', name: 'account_name', testid: 'signup-account-name', autocomplete: 'organization', hint: 'Your team or company. You can rename it later.' });
  const inviteField = field({ label: 'Invite token', name: 'invite_token', testid: 'signup-invite', value: invite, autocomplete: 'off', hint: 'From an invitation. With one you join that account.' });

  const form = h('form', { class: 'form', testid: 'signup-form', novalidate: true },
    field({ label: 'Email', name: 'email', type: 'email', required: true, autocomplete: 'email', testid: 'signup-email', value: query.get('email') || '' }),
    field({ label: 'Password', name: 'password', type: 'password', required: true, autocomplete: 'new-password', testid: 'signup-password', minlength: MIN_PASSWORD, hint: `At least ${MIN_PASSWORD} characters.` }),
    field({ label: 'Your name', name: 'name', required: true, autocomplete: 'name', testid: 'signup-name' }),
    accountField,
    inviteField,
    h('div', { testid: 'signup-error' }, formProblem()),
    h('button', { type: 'submit', class: 'btn btn-primary btn-block', testid: 'signup-submit' }, invite ? 'Join the account' : 'Create account'));

  const inviteInput = inviteField.querySelector('input');
  const accountInput = accountField.querySelector('input');
  const syncInvite = () => {
    const joining = inviteInput.value.trim() !== '';
    accountInput.disabled = joining;
    accountField.classList.toggle('is-disabled', joining);
    form.querySelector('[type=submit]').textContent = joining ? 'Join the account' : 'Create account';
  };
  inviteInput.addEventListener('input', syncInvite);
  syncInvite();

  onSubmit(form, async () => {
    const v = formValues(form);
    if ((v.password || '').length < MIN_PASSWORD) {
      fieldError(form, 'password', `Must be at least ${MIN_PASSWORD} characters.`);
      return;
    }
    const body = { email: v.email || '', password: v.password, name: v.name || '' };
    if (v.invite_token) body.invite_token = v.invite_token.trim();
    else if (v.account_name) body.account_name = v.account_name;
    const auth = await api.post('/v1/auth/signup', body, { auth: false });
    completeSignIn(auth, query.get('next'));
  });

  root.append(authCard(invite ? 'Join your team' : 'Create your account',
    invite ? h('p', { class: 'notice', testid: 'invite-notice' }, 'You were invited to an account. Create your login to join it.') : null,
    form,
    h('p', { class: 'auth-alt' }, 'Already have an account? ',
      h('a', { href: router.href('/login', { next: router.safeNext(query.get('next')) }), testid: 'login-link' }, 'Log in'))));
}
