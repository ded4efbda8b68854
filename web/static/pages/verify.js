// Verify: the page of the link in the verification email,
// /app/verify#token=evt_…. The token is in the fragment (no server log
// sees it); the page posts it to POST /v1/auth/verify, which needs no
// session. Public: it works in any browser, signed in or not.

import * as api from '../api.js';
import * as router from '../router.js';
import { h, problemBox } from '../ui.js';
import { authCard } from '../auth.js';

export async function render({ root, signal }) {
  const token = new URLSearchParams(location.hash.slice(1)).get('token') || '';
  const out = h('div', { testid: 'verify-result' });
  root.append(authCard('Confirm your email address', out));
  if (!token) {
    out.append(h('p', { class: 'problem', role: 'alert' }, 'This link has no token. Open the link of the verification email as it was sent.'));
    return;
  }
  out.append(h('p', { class: 'muted' }, 'Confirming…'));
  try {
    const p = await api.post('/v1/auth/verify', { token }, { auth: false, expire: false, signal });
    history.replaceState(null, '', location.pathname); // the token is spent
    out.replaceChildren(
      h('p', { class: 'notice', role: 'status', testid: 'verify-ok' }, `${p.email} is confirmed: alerts can be emailed to it now.`),
      h('p', null, h('a', { class: 'btn btn-primary', href: router.href('/') }, 'Go to the dashboard')));
  } catch (err) {
    if (api.isAbort(err)) return;
    out.replaceChildren(problemBox(err),
      h('p', null, 'Sign in and send a new link from ', h('a', { href: router.href('/settings') }, 'Settings'), '.'));
  }
}
