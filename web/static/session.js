// session.js: what the dashboard remembers in the browser.
//
// The session token from signup/login lives in localStorage so a reload or a
// new tab stays signed in. A session is bound to one account (see the
// contract), so switching accounts means logging in again; to make that quick
// we remember the accounts this browser has signed in to (ids and names only,
// never a password or token).

const SESSION_KEY = 'mcpscope.session';
const ACCOUNTS_KEY = 'mcpscope.accounts';
const LAST_MCP_KEY = 'mcpscope.lastMcp';

// localStorage throws in some private modes and when disabled; the dashboard
// then still works for the lifetime of the tab.
const memory = new Map();
const store = {
  get(key) {
    try { return window.localStorage.getItem(key); } catch { return memory.get(key) ?? null; }
  },
  set(key, value) {
    try { window.localStorage.setItem(key, value); } catch { memory.set(key, value); }
  },
  remove(key) {
    try { window.localStorage.removeItem(key); } catch { memory.delete(key); }
  },
};

function readJSON(key, fallback) {
  const raw = store.get(key);
  if (!raw) return fallback;
  try { return JSON.parse(raw); } catch { return fallback; }
}

/**
 * The current session: {token, expires_at, user: {id, email, name},
 * account: {id, name}} or null. An expired session counts as none.
 */
export function current() {
  const s = readJSON(SESSION_KEY, null);
  if (!s || typeof s.token !== 'string' || !s.token) return null;
  if (s.expires_at && Date.parse(s.expires_at) <= Date.now()) {
    clear();
    return null;
  }
  return s;
}

export function token() {
  return current()?.token ?? null;
}

/** Stores the response of POST /v1/auth/signup or /v1/auth/login. */
export function save(auth) {
  const s = {
    token: auth.token,
    expires_at: auth.expires_at ?? null,
    user: auth.user ?? null,
    account: auth.account ?? null,
  };
  store.set(SESSION_KEY, JSON.stringify(s));
  if (s.user && s.account) rememberAccount(s.user.email, s.account);
  return s;
}

/** Updates the stored account name after a rename or a fresh GET /v1/account. */
export function updateAccount(account) {
  const s = current();
  if (!s || !account) return;
  s.account = { id: account.id ?? s.account?.id, name: account.name ?? s.account?.name };
  store.set(SESSION_KEY, JSON.stringify(s));
  if (s.user) rememberAccount(s.user.email, s.account);
}

/** Updates the stored user after a profile change. */
export function updateUser(user) {
  const s = current();
  if (!s || !user) return;
  s.user = { id: user.user_id ?? user.id ?? s.user?.id, email: user.email ?? s.user?.email, name: user.name ?? s.user?.name };
  store.set(SESSION_KEY, JSON.stringify(s));
}

export function clear() {
  store.remove(SESSION_KEY);
}

/** Accounts this browser signed in to: [{id, name, email, last_used_at}], newest first. */
export function knownAccounts() {
  const list = readJSON(ACCOUNTS_KEY, []);
  return Array.isArray(list) ? list.filter((a) => a && a.id && a.email) : [];
}

function rememberAccount(email, account) {
  const rest = knownAccounts().filter((a) => !(a.id === account.id && a.email === email));
  rest.unshift({ id: account.id, name: account.name ?? '', email, last_used_at: new Date().toISOString() });
  store.set(ACCOUNTS_KEY, JSON.stringify(rest.slice(0, 20)));
}

export function forgetAccount(id, email) {
  store.set(ACCOUNTS_KEY, JSON.stringify(knownAccounts().filter((a) => !(a.id === id && a.email === email))));
}

/** The MCP last opened in this account, so /app/ can go straight back to it. */
export function lastMcp() {
  const accountId = current()?.account?.id;
  const all = readJSON(LAST_MCP_KEY, {});
  return (accountId && all && all[accountId]) || null;
}

export function setLastMcp(mcpId) {
  const accountId = current()?.account?.id;
  if (!accountId) return;
  const all = readJSON(LAST_MCP_KEY, {}) || {};
  if (mcpId) all[accountId] = mcpId; else delete all[accountId];
  store.set(LAST_MCP_KEY, JSON.stringify(all));
}

/** Calls fn when another tab signs in, out or switches account. */
export function onExternalChange(fn) {
  window.addEventListener('storage', (e) => {
    if (e.key === SESSION_KEY || e.key === null) fn();
  });
}
