// badge.js: the unread-inbox count in the header.
//
// Refreshed every 30 seconds while the tab is visible, at once when it
// becomes visible again, and after any inbox action (pages call refresh() or
// set() with the unread_count they already have).

import * as api from './api.js';
import * as session from './session.js';

const INTERVAL_MS = 30000;
let el = null;
let timer = null;
let generation = 0;

/** Binds the badge element and starts polling. */
export function init(badgeEl) {
  el = badgeEl;
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') refresh();
  });
  schedule();
}

function schedule() {
  clearInterval(timer);
  timer = setInterval(() => {
    if (document.visibilityState === 'visible') refresh();
  }, INTERVAL_MS);
}

/** Shows n unread items (0 hides the number). */
export function set(n) {
  generation++;
  render(n);
}

function render(n) {
  if (!el) return;
  const count = Number.isFinite(n) && n > 0 ? n : 0;
  el.textContent = count > 99 ? '99+' : String(count);
  el.dataset.count = String(count);
  el.hidden = count === 0;
  el.setAttribute('aria-label', `${count} unread`);
}

/** Asks the API for the unread count. Failures keep the last number. */
export async function refresh() {
  if (!session.token()) { render(0); return; }
  const mine = ++generation;
  try {
    const r = await api.get('/v1/account/inbox', { unread: 'true', limit: 1 }, { quiet: true });
    // A newer set() or refresh() wins over this slower answer.
    if (mine === generation) render(r?.unread_count ?? 0);
  } catch {
    // The header is not the place to report a failed background poll.
  }
}
