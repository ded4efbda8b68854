// auth.js: what signup, login and account switching share.

import * as session from './session.js';
import * as store from './store.js';
import * as badge from './badge.js';
import * as router from './router.js';
import { h } from './ui.js';

/** The centred card the signed-out pages use. */
export function authCard(title, ...children) {
  document.title = `${title} · MCPScope`;
  return h('div', { class: 'auth' },
    h('div', { class: 'auth-brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'MCPScope'),
    h('div', { class: 'card auth-card' }, h('h1', null, title), ...children));
}

/** Stores a signup/login answer and continues to next (or the home page). */
export function completeSignIn(auth, next) {
  session.save(auth);
  store.reset();
  badge.refresh();
  router.navigate(router.safeNext(next) || '/', { replace: true });
}

/** Values of a form's named inputs, with empty strings left out. */
export function formValues(form) {
  const out = {};
  for (const [k, v] of new FormData(form).entries()) {
    if (typeof v === 'string' && v !== '') out[k] = v;
  }
  return out;
}
