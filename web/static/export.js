// export.js: the "Export" buttons of the overview and sessions pages. They
// download GET /v1/mcps/{id}/export over the page's date range, as CSV or
// NDJSON (the API streams it; the browser saves it as a file).

import * as api from './api.js';
import * as range from './range.js';
import { busy, h } from './ui.js';

/** exportBar returns the buttons for frame (an mcpFrame with a range). */
export function exportBar(frame) {
  const status = h('span', { class: 'muted export-status', testid: 'export-status', role: 'status' });
  const button = (format, label) => {
    const b = h('button', {
      type: 'button', class: 'btn', testid: `export-${format}`,
      title: `Download every item of this range as ${label}`,
      onclick: () => busy(b, async () => {
        status.textContent = 'Exporting…';
        try {
          const q = { ...range.apiQuery(frame.range), format };
          const done = await api.download(api.path`/v1/mcps/${frame.mcpId}/export`, q, `export.${format}`);
          status.textContent = `Saved ${done.name}`;
        } catch (err) {
          status.textContent = err.detail || String(err);
        }
      }),
    }, `Export ${label}`);
    return b;
  };
  return h('div', { class: 'export-bar', testid: 'export-bar' },
    button('csv', 'CSV'), button('ndjson', 'NDJSON'), status);
}
