// store.js: small caches of data many pages need (the caller's account and
// role, the MCP list, the unread count), so switching tabs does not refetch
// them every time. Anything that changes them invalidates the cache.

import * as api from './api.js';
import * as session from './session.js';

let accountPromise = null;
let mcpsPromise = null;
const accountListeners = new Set();

/** GET /v1/account, cached: {id, name, plan, created_at, role}. */
export function account({ force = false } = {}) {
  if (force || !accountPromise) {
    accountPromise = api.get('/v1/account', null, { quiet: true }).then((a) => {
      session.updateAccount(a);
      for (const fn of accountListeners) fn(a);
      return a;
    });
    accountPromise.catch(() => { accountPromise = null; });
  }
  return accountPromise;
}

export function onAccount(fn) {
  accountListeners.add(fn);
}

/** Owners and admins manage MCPs, keys, rules, members, company and webhooks. */
export const isAdmin = (acct) => acct?.role === 'owner' || acct?.role === 'admin';

/** GET /v1/mcps items, cached until invalidated. */
export function mcps({ force = false } = {}) {
  if (force || !mcpsPromise) {
    mcpsPromise = api.get('/v1/mcps').then((r) => r?.items || []);
    mcpsPromise.catch(() => { mcpsPromise = null; });
  }
  return mcpsPromise;
}

export function invalidateMcps() {
  mcpsPromise = null;
}

/** Forget everything: after logout or an account switch. */
export function reset() {
  accountPromise = null;
  mcpsPromise = null;
}
