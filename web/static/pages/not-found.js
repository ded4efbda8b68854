// Shown for /app/ paths that match no route.

import * as router from '../router.js';
import { h, pageHeader } from '../ui.js';

export async function render({ root }) {
  root.append(pageHeader('Page not found'),
    h('div', { class: 'card', testid: 'not-found' },
      h('p', null, 'There is no page at this address.'),
      h('p', null, h('a', { class: 'btn btn-primary', href: router.href('/') }, 'Go to the dashboard'))));
}
